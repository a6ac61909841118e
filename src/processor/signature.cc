#include "processor/signature.h"

#include <algorithm>

#include "diagnose/diagnosis.h"

namespace coroner {
namespace {

// GCC's clones of a function (foo.constprop.0, foo.isra.1, foo.part.0,
// foo.cold) are the function.
std::string CloneBase(const std::string& f) {
  for (const char* suffix : {".constprop.", ".isra.", ".part.", ".cold", ".lto_priv."}) {
    size_t at = f.find(suffix);
    if (at != std::string::npos && at > 0) return f.substr(0, at);
  }
  return f;
}

// The words glibc's IFUNC variants of its string and memory functions end
// in, each naming an instruction set, a CPU or a way of moving memory:
// x86_64's (sysdeps/x86_64/multiarch: __memmove_avx_unaligned_erms_rtm,
// __strchr_sse2_no_bsf, __wcsnlen_sse4_1) and aarch64's (sysdeps/aarch64/
// multiarch: __memcpy_thunderx2, __strlen_asimd, __memset_zva64).
constexpr std::string_view kVariantWords[] = {
    "sse2",  "ssse3",  "sse4",     "sse42",    "avx",      "avx2",   "avx512",  "avx512f", "avx512bw",
    "avx512vl", "evex", "evex512", "rtm",      "erms",     "unaligned", "aligned", "nt",    "back", "movbe",
    "no",    "vzeroupper", "bsf",  "fsrm",     "generic",  "simd",   "asimd",   "sve",     "mte",
    "thunderx", "thunderx2", "falkor", "a64fx", "kunpeng", "emag",   "oryon1",  "zva",     "zva64",
    "nozva", "lasx",   "lsx"};

std::string FunctionForSignature(const std::string& f) { return IfuncVariantBase(CloneBase(f)); }


// CPython and what it calls through on the way to native code: in a thread
// running Python code, a frame here says which interpreter path was taken,
// not which program crashed.
bool PythonRuntime(const std::string& module) {
  if (module.find("/lib-dynload/") != std::string::npos) return true;
  std::string base = module.substr(module.rfind('/') + 1);
  for (const char* lib : {"python3", "libpython3", "libffi.so"}) {
    if (base.rfind(lib, 0) == 0) return true;
  }
  return IsRuntimeLibrary(module);
}

}  // namespace

std::vector<SignatureFrame> SignatureFrames(const std::vector<StoredFrame>& frames, bool reraised) {
  size_t from = 0;
  if (reraised) {
    auto first = std::find_if(frames.begin(), frames.end(), [](const StoredFrame& f) { return f.trust == FrameTrust::kSignal; });
    if (first != frames.end()) from = static_cast<size_t>(first - frames.begin());
  }
  std::vector<SignatureFrame> out;
  out.reserve(frames.size() - from);
  for (size_t i = from; i < frames.size(); ++i) {
    const StoredFrame& f = frames[i];
    // A signal trampoline is the frame a frame found through a signal
    // frame follows: machinery, named or not (a static executable's).
    bool trampoline = i + 1 < frames.size() && frames[i + 1].trust == FrameTrust::kSignal;
    if (f.trust == FrameTrust::kTailCall || trampoline) continue;
    out.push_back({f.function, f.module, f.trust == FrameTrust::kScan, f.trust == FrameTrust::kPython});
  }
  return out;
}

const SkipList& SkipList::Default() {
  static const SkipList kDefault{
      // glibc's signal, abort and assert paths
      {"raise", "abort", "gsignal", "pthread_kill", "__pthread_kill_implementation", "__pthread_kill_internal",
       "__assert_fail", "__assert_fail_base", "__assert_perror_fail", "__libc_message", "__libc_fatal",
       "malloc_printerr", "__fortify_fail", "__chk_fail", "__stack_chk_fail", "__restore_rt",
       // process and thread entry
       "__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl", "_start", "start_thread", "clone",
       "clone3",
       // C++ runtime: terminate and unwinding
       "std::terminate", "std::__terminate", "__gnu_cxx::__verbose_terminate_handler"},
      {"__GI_", "__cxxabiv1::", "__cxa_", "_Unwind_", "__gxx_personality", "std::__exception_ptr::"}};
  return kDefault;
}

bool SkipList::Skips(const std::string& f) const {
  for (const auto& e : exact) {
    if (f == e) return true;
  }
  for (const auto& p : prefixes) {
    if (f.rfind(p, 0) == 0) return true;
  }
  return false;
}

std::string IfuncVariantBase(const std::string& function) {
  std::string_view f = function;
  if (!f.starts_with("__") || f.size() > 128) return function;
  std::vector<std::string_view> words;
  for (size_t at = 2; at <= f.size();) {
    size_t end = std::min(f.find('_', at), f.size());
    words.push_back(f.substr(at, end - at));
    at = end + 1;
  }
  auto variant = [&](size_t i) {
    std::string_view w = words[i];
    // sse4_1, sse4_2: a digit after sse4.
    if ((w == "1" || w == "2") && i > 0 && words[i - 1] == "sse4") return true;
    return std::find(std::begin(kVariantWords), std::end(kVariantWords), w) != std::end(kVariantWords);
  };
  size_t kept = words.size();
  while (kept > 1 && variant(kept - 1)) --kept;
  if (kept == words.size() || words[0].empty()) return function;
  std::string base;
  for (size_t i = 0; i < kept; ++i) base += (i ? "_" : "") + std::string(words[i]);
  // The entry points whose own name has glibc's prefix keep it: the
  // fortified ones (__memcpy_chk) and __memcmpeq, which compilers call.
  return base.ends_with("_chk") || base == "chk" || base == "memcmpeq" ? "__" + base : base;
}

std::string MakeSignature(const std::string& syndrome, const std::vector<SignatureFrame>& frames,
                          const SkipList& skip, size_t depth) {
  auto name = [](const SignatureFrame& f) {
    if (!f.function.empty()) return FunctionForSignature(f.function);
    std::string m = f.module.substr(f.module.rfind('/') + 1);
    return "?? (" + (m.empty() ? std::string("?") : m) + ")";
  };
  bool python = false;
  for (const auto& f : frames) python |= f.python;
  // A process stopped from outside (a snapshot, a watchdog's signal, a
  // deadlock) did not fault: where it waits is its own call into the
  // runtime (recv, a mutex), not the runtime's path into the kernel, which
  // the thread's state names. Its runtime frames are left out, unless
  // nothing else is left.
  std::optional<Syndrome> named = SyndromeFromName(syndrome);
  bool stopped = named == Syndrome::kExternalSignal || named == Syndrome::kSnapshot || named == Syndrome::kDeadlock;
  if (stopped && std::none_of(frames.begin(), frames.end(), [](const SignatureFrame& f) {
        return !f.function.empty() && !f.module.empty() && !IsRuntimeLibrary(f.module);
      }))
    stopped = false;
  std::vector<std::string> picked;
  for (bool allow_scanned : {false, true}) {
    picked.clear();
    for (const auto& f : frames) {
      if (picked.size() >= depth) break;
      if (f.scanned && !allow_scanned) continue;
      if (python && !f.python && PythonRuntime(f.module)) continue;
      if (stopped && !f.python && IsRuntimeLibrary(f.module)) continue;
      if (!f.function.empty() && skip.Skips(FunctionForSignature(f.function))) continue;
      // A pc in no module (a call through NULL) or unnamed runtime code says nothing of the program.
      // The terminate and unwind paths of a libstdc++ without symbols.
      if (f.function.empty() && (f.module.empty() || IsRuntimeLibrary(f.module))) continue;
      std::string n = name(f);
      if (!picked.empty() && picked.back() == n) continue;  // recursion reads as one frame
      picked.push_back(n);
    }
    if (!picked.empty()) break;
  }
  std::string sig = syndrome;
  for (const auto& p : picked) sig += " | " + p;
  return sig;
}

}  // namespace coroner
