#include "core/crash_line.h"

#include <elf.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "core/machine_notes.h"
#include "core/signals.h"

namespace coroner {
namespace {

constexpr std::string_view kMarker = "coroner-crash: ";
constexpr size_t kMaxLine = 256 * 1024;
constexpr size_t kMaxStackWords = 64, kMaxFrames = 256, kMaxModules = 1024, kMaxSegments = 4096;
constexpr size_t kMaxPath = 4096;
constexpr uint64_t kPage = 4096;

// Each machine's registers in the line's order: x86_64's ucontext general
// registers, aarch64's sigcontext (x0-x30, sp, pc, pstate).
constexpr std::string_view kX86RegisterNames[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                                      "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
                                      "rip", "eflags", "csgsfs", "err", "trapno", "oldmask", "cr2"};
constexpr std::string_view kA64RegisterNames[] = {
    "x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",  "x9",  "x10", "x11",
    "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
    "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",  "pc",  "pstate"};
static_assert(std::size(kA64RegisterNames) == kA64RegCount);
static_assert(std::max(std::size(kX86RegisterNames), std::size(kA64RegisterNames)) ==
              std::tuple_size_v<decltype(CrashLine::registers)>);

std::span<const std::string_view> RegisterNames(Arch arch) {
  if (arch == Arch::kAarch64) return kA64RegisterNames;
  return kX86RegisterNames;
}

// The fields a line may have; the first kRequired it must have.
constexpr std::string_view kKeys[] = {"v",  "pid",   "tid", "time", "sig",      "code", "addr", "regs",
                                      "stack", "bt", "host", "comm", "fps", "stackmap", "mods", "segs", "arch"};
constexpr size_t kRequired = 10;
enum KeyIndex : size_t { kV, kPid, kTid, kTime, kSig, kCode, kAddr, kRegs, kStack, kBt, kHost, kComm, kFps, kStackmap, kMods, kSegs, kArch };
static_assert(kKeys[kSegs] == "segs" && kKeys[kHost] == "host" && kKeys[kArch] == "arch");

Error Bad(const std::string& why) { return MakeError(ErrorKind::kMalformed, "crash line: " + why); }

// The value of a lowercase hex digit, 16 for any other byte. A line holds
// some 300 hex numbers: a table lookup per digit halved their cost.
constexpr std::array<uint8_t, 256> kHexDigit = [] {
  std::array<uint8_t, 256> t{};
  for (auto& d : t) d = 16;
  for (int c = 0; c < 10; ++c) t['0' + c] = static_cast<uint8_t>(c);
  for (int c = 0; c < 6; ++c) t['a' + c] = static_cast<uint8_t>(10 + c);
  return t;
}();

std::optional<uint64_t> Hex(std::string_view s) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || s[1] != 'x') return std::nullopt;
  uint64_t v = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    uint8_t d = kHexDigit[static_cast<unsigned char>(s[i])];
    if (d > 15) return std::nullopt;
    v = v << 4 | d;
  }
  return v;
}

std::optional<int64_t> Dec(std::string_view s, int64_t lo, int64_t hi) {
  bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (neg) v = -v;
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

// "0xLOW-0xHIGH"
std::optional<std::pair<uint64_t, uint64_t>> Range(std::string_view s) {
  size_t dash = s.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto lo = Hex(s.substr(0, dash)), hi = Hex(s.substr(dash + 1));
  if (!lo || !hi || *lo >= *hi) return std::nullopt;
  return std::make_pair(*lo, *hi);
}

// The pieces of `s` between `sep`s, one at a time (none when `s` is
// empty), without gathering them: a line has some 300.
class Pieces {
 public:
  Pieces(std::string_view s, char sep) : rest_(s), sep_(sep), done_(s.empty()) {}
  bool Next(std::string_view& piece) {
    if (done_) return false;
    size_t end = rest_.find(sep_);
    piece = rest_.substr(0, end);
    if (end == std::string_view::npos) done_ = true;
    else rest_.remove_prefix(end + 1);
    ++count_;
    return true;
  }
  size_t count() const { return count_; }  // pieces given so far

 private:
  std::string_view rest_;
  char sep_;
  bool done_;
  size_t count_ = 0;
};

int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `s` cut at `sep` into exactly N pieces; nullopt for any other count.
template <size_t N>
std::optional<std::array<std::string_view, N>> SplitExactly(std::string_view s, char sep) {
  std::array<std::string_view, N> out;
  for (size_t i = 0; i < N; ++i) {
    size_t end = i + 1 < N ? s.find(sep) : std::string_view::npos;
    if (i + 1 < N && end == std::string_view::npos) return std::nullopt;
    out[i] = s.substr(0, end);
    s.remove_prefix(end == std::string_view::npos ? s.size() : end + 1);
  }
  if (out[N - 1].find(sep) != std::string_view::npos) return std::nullopt;
  return out;
}

// %XX escapes (the handler escapes separators, spaces and non-ASCII).
std::optional<std::string> Unescape(std::string_view s) {
  if (s.size() > 3 * kMaxPath) return std::nullopt;
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = Nibble(s[i + 1]), lo = Nibble(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi << 4 | lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  if (out.size() > kMaxPath) return std::nullopt;
  return out;
}

// How many `sep`s: a list's length, to reserve it (bounded by the caller).
size_t Count(std::string_view s, char sep) {
  size_t n = 0;
  for (const char* p = s.data(); (p = static_cast<const char*>(std::memchr(p, sep, s.data() + s.size() - p))); ++p) ++n;
  return n;
}

bool BuildId(std::string_view s) {
  if (s.empty() || s.size() > 64 || s.size() % 2) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return kHexDigit[static_cast<unsigned char>(c)] < 16; });
}

}  // namespace

bool HasCrashLine(std::string_view text) { return text.find(kMarker) != std::string_view::npos; }

namespace {

// stack=ADDRESS:w1,w2,... (0x... or - for a word not read).
Status ParseStack(std::string_view value, CrashLine& l) {
  size_t colon = value.find(':');
  auto start = colon == std::string_view::npos ? std::nullopt : Hex(value.substr(0, colon));
  if (!start) return Bad("stack is not ADDRESS:words");
  l.stack_start = *start;
  Pieces words(value.substr(colon + 1), ',');
  l.stack.reserve(std::min(kMaxStackWords, Count(value, ',') + 1));
  for (std::string_view w; words.Next(w);) {
    if (words.count() > kMaxStackWords) return Bad("more than 64 stack words");
    if (w == "-") {
      l.stack.push_back(std::nullopt);
      continue;
    }
    auto v = Hex(w);
    if (!v) return Bad("a stack word is neither 0x... nor -");
    l.stack.push_back(*v);
  }
  if (l.stack_start > UINT64_MAX - 8 * l.stack.size()) return Bad("the stack words wrap the address space");
  return Ok{};
}

// bt=BUILDID+0xOFFSET or 0xADDRESS, comma-separated, 1 to 256.
Status ParseBacktrace(std::string_view value, CrashLine& l) {
  Pieces frames(value, ',');
  l.backtrace.reserve(std::min(kMaxFrames, Count(value, ',') + 1));
  for (std::string_view f; frames.Next(f);) {
    if (frames.count() > kMaxFrames) return Bad("bt needs 1 to 256 frames");
    size_t plus = f.find('+');
    bool ok = plus == std::string_view::npos ? Hex(f).has_value()
                                             : BuildId(f.substr(0, plus)) && Hex(f.substr(plus + 1)).has_value();
    if (!ok) return Bad("a frame is neither BUILDID+0xOFFSET nor 0xADDRESS");
    l.backtrace.emplace_back(f);
  }
  if (l.backtrace.empty()) return Bad("bt needs 1 to 256 frames");
  return Ok{};
}

// fps=0x...,0x...: the frame-pointer chain.
Status ParseFramePointers(std::string_view value, CrashLine& l) {
  Pieces fps(value, ',');
  l.frame_pointers.reserve(std::min(kMaxFrames, Count(value, ',') + 1));
  for (std::string_view f; fps.Next(f);) {
    auto v = Hex(f);
    if (!v || l.frame_pointers.size() >= kMaxFrames) return Bad("fps is not a list of at most 256 addresses");
    l.frame_pointers.push_back(*v);
  }
  return Ok{};
}

// mods=BUILDID@BIAS@PATH;...
Status ParseModules(std::string_view value, CrashLine& l) {
  Pieces mods(value, ';');
  l.modules.reserve(std::min(kMaxModules, Count(value, ';') + 1));
  for (std::string_view m; mods.Next(m);) {
    if (mods.count() > kMaxModules) return Bad("more than 1024 modules");
    auto parts = SplitExactly<3>(m, '@');
    if (!parts) return Bad("a module is not BUILDID@BIAS@PATH");
    CrashLine::Module mod;
    if ((*parts)[0] != "-") {
      if (!BuildId((*parts)[0])) return Bad("a module's build-id is not hex");
      mod.build_id = std::string((*parts)[0]);
    }
    auto bias = Hex((*parts)[1]);
    auto path = Unescape((*parts)[2]);
    if (!bias || !path || path->empty()) return Bad("a module's bias or path is malformed");
    mod.bias = *bias;
    mod.path = std::move(*path);
    l.modules.push_back(std::move(mod));
  }
  return Ok{};
}

// segs=MODULE:START-END:OFFSET:PERM;...
Status ParseSegments(std::string_view value, CrashLine& l) {
  Pieces segs(value, ';');
  l.segments.reserve(std::min(kMaxSegments, Count(value, ';') + 1));
  for (std::string_view s; segs.Next(s);) {
    if (segs.count() > kMaxSegments) return Bad("more than 4096 segments");
    auto split = SplitExactly<4>(s, ':');
    if (!split) return Bad("a segment is not MODULE:START-END:OFFSET:PERM");
    const auto& parts = *split;
    auto mod = Dec(parts[0], 0, static_cast<int64_t>(kMaxModules));
    auto range = Range(parts[1]);
    auto off = Hex(parts[2]);
    bool perm_ok = !parts[3].empty() && parts[3].size() <= 3 && parts[3][0] == 'r' &&
                   parts[3].find_first_not_of("rwx") == std::string_view::npos;
    if (!mod || !range || !off || range->first % kPage || !perm_ok)
      return Bad("a segment is malformed (module, page-aligned START-END, offset, r[w][x])");
    CrashLine::Segment seg{static_cast<size_t>(*mod), range->first, range->second, *off,
                           parts[3].find('w') != std::string_view::npos,
                           parts[3].find('x') != std::string_view::npos};
    l.segments.push_back(seg);
  }
  return Ok{};
}

// regs=NAME:0x...,...: every register of the line's machine, in order.
Status ParseRegisters(std::string_view regs, CrashLine& l) {
  const auto names = RegisterNames(l.arch);
  Pieces items(regs, ',');
  std::string_view item;
  while (items.count() <= names.size() && items.Next(item)) {
    size_t i = items.count() - 1;
    if (i >= names.size()) break;
    size_t colon = item.find(':');
    auto v = colon == std::string_view::npos ? std::nullopt : Hex(item.substr(colon + 1));
    if (!v || item.substr(0, colon) != names[i])
      return Bad("register " + std::to_string(i) + " is not " + std::string(names[i]) + ":0x...");
    l.registers[i] = *v;
  }
  if (items.count() != names.size())
    return Bad("regs has " + std::to_string(items.count()) + " registers, not " + std::to_string(names.size()) +
               " (" + std::string(ArchName(l.arch)) + ")");
  return Ok{};
}

}  // namespace

Expected<CrashLine> ParseCrashLine(std::string_view text) {
  size_t at = text.find(kMarker);
  if (at == std::string_view::npos) return Bad("no \"coroner-crash: \" in the line");
  text.remove_prefix(at + kMarker.size());
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  if (text.size() > kMaxLine) return Bad("longer than 256 KiB");
  CrashLine l;
  uint32_t seen = 0;  // bit i: kKeys[i] was read
  std::string_view regs;
  Pieces fields(text, ' ');
  for (std::string_view field; fields.Next(field);) {
    size_t eq = field.find('=');
    if (eq == std::string_view::npos || eq == 0) return Bad("a field without key=value");
    std::string_view key = field.substr(0, eq);
    std::string_view value = field.substr(eq + 1);
    size_t k = std::find(std::begin(kKeys), std::end(kKeys), key) - std::begin(kKeys);
    if (k == std::size(kKeys)) return Bad("unknown field " + std::string(key.substr(0, 32)));
    if (seen & (1u << k)) return Bad("field " + std::string(key) + " twice");
    seen |= 1u << k;
    if (k == kV) {
      auto v = Dec(value, 0, 1000);
      if (!v || *v != 1) return Bad("format version " + std::string(value.substr(0, 16)) + ", this reader knows 1");
      l.version = 1;
    } else if (k == kPid || k == kTid) {
      auto v = Dec(value, 1, 1 << 30);
      if (!v) return Bad(std::string(key) + " is not a process id");
      (k == kPid ? l.pid : l.tid) = static_cast<int>(*v);
    } else if (k == kTime) {
      size_t dot = value.find('.');
      auto s = Dec(value.substr(0, dot), 0, 253402300799);  // up to year 9999
      auto ns = dot == std::string_view::npos ? std::optional<int64_t>(0) : Dec(value.substr(dot + 1), 0, 999999999);
      if (!s || !ns || (dot != std::string_view::npos && value.size() - dot - 1 != 9)) return Bad("time is not seconds.nanoseconds");
      l.time = *s;
      l.nanoseconds = static_cast<uint32_t>(*ns);
    } else if (k == kHost || k == kComm) {
      auto v = Unescape(value);
      if (!v || v->size() > 256) return Bad(std::string(key) + " is not an escaped name");
      (k == kHost ? l.host : l.comm) = std::move(*v);
    } else if (k == kSig) {
      auto v = Dec(value, 1, 64);
      if (!v) return Bad("sig is not a signal number");
      l.signal = static_cast<int>(*v);
    } else if (k == kCode) {
      auto v = Dec(value, INT32_MIN, INT32_MAX);
      if (!v) return Bad("code is not an si_code");
      l.code = static_cast<int>(*v);
    } else if (k == kAddr) {
      auto v = Hex(value);
      if (!v) return Bad("addr is not a hex address");
      l.fault_address = *v;
    } else if (k == kRegs) {
      regs = value;  // read once the line's machine is known: `arch` may follow
    } else if (k == kArch) {
      if (value == ArchName(Arch::kAarch64)) l.arch = Arch::kAarch64;
      else if (value == ArchName(Arch::kX86_64)) l.arch = Arch::kX86_64;
      else return Bad("arch " + std::string(value.substr(0, 16)) + " is neither x86_64 nor aarch64");
    } else if (k == kStack) {
      if (auto r = ParseStack(value, l); !r.ok()) return r.error();
    } else if (k == kBt) {
      if (auto r = ParseBacktrace(value, l); !r.ok()) return r.error();
    } else if (k == kFps) {
      if (auto r = ParseFramePointers(value, l); !r.ok()) return r.error();
    } else if (k == kStackmap) {
      auto range = Range(value);
      if (!range || range->second - range->first > (1ull << 34)) return Bad("stackmap is not LOW-HIGH (at most 16 GiB)");
      l.stack_mapping = range;
    } else if (k == kMods) {
      if (auto r = ParseModules(value, l); !r.ok()) return r.error();
    } else if (k == kSegs) {
      if (auto r = ParseSegments(value, l); !r.ok()) return r.error();
    }
  }
  for (size_t k = 0; k < kRequired; ++k)
    if (!(seen & (1u << k))) return Bad("no " + std::string(kKeys[k]) + " field (a cut line?)");
  if (auto r = ParseRegisters(regs, l); !r.ok()) return r.error();
  for (const auto& s : l.segments)
    if (s.module >= l.modules.size()) return Bad("a segment names module " + std::to_string(s.module) + " of " +
                                                 std::to_string(l.modules.size()));
  return l;
}

namespace {

// A little-endian byte buffer.
struct Bytes {
  std::vector<std::byte> b;
  size_t size() const { return b.size(); }
  void Put(const void* p, size_t n) {
    size_t at = b.size();
    b.resize(at + n);
    if (n) std::memcpy(b.data() + at, p, n);
  }
  template <typename T>
  void Put(T v) {
    Put(&v, sizeof v);
  }
  void Pad(size_t align) { b.resize((b.size() + align - 1) / align * align); }
  template <typename T>
  void At(size_t off, T v) {
    std::memcpy(b.data() + off, &v, sizeof v);
  }
};

void Note(Bytes& out, const char* name, uint32_t type, const Bytes& desc) {
  uint32_t namesz = static_cast<uint32_t>(std::strlen(name) + 1);
  out.Put(namesz);
  out.Put(static_cast<uint32_t>(desc.size()));
  out.Put(type);
  out.Put(name, namesz);
  out.Pad(4);
  out.Put(desc.b.data(), desc.size());
  out.Pad(4);
}

// The absolute address of a "BUILDID+0xOFF" or "0xADDR" frame.
std::optional<uint64_t> FrameAddress(const CrashLine& l, std::string_view f) {
  size_t plus = f.find('+');
  if (plus == std::string_view::npos) return Hex(f);
  std::string_view id = f.substr(0, plus);
  auto off = Hex(f.substr(plus + 1));
  if (!off) return std::nullopt;
  for (const auto& s : l.segments) {
    if (l.modules[s.module].build_id != id) continue;
    if (*off >= s.offset && *off - s.offset < s.end - s.start) return s.start + (*off - s.offset);
  }
  return std::nullopt;
}

struct Load {
  uint64_t vaddr, memsz;
  uint32_t flags;
  Bytes data;  // the present bytes, from vaddr
  std::optional<size_t> header_of;  // the module whose ELF header page starts here
};

// The ELF header page the kernel would have dumped at the start of module
// m's first mapping at `start`, holding its build-id; cut to `size`. Its one
// PT_LOAD spans the module's mappings up to `end`, the image's extent.
Bytes HeaderPage(const CrashLine::Module& m, Arch arch, uint64_t start, uint64_t size, uint64_t end) {
  Bytes h;
  h.b.assign(0x100, std::byte{0});
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = m.bias ? ET_DYN : ET_EXEC;
  eh.e_machine = ElfMachine(arch);
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof eh;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 2;
  Bytes note;
  Bytes id;
  for (size_t i = 0; i + 1 < m.build_id.size(); i += 2)  // lowercase hex, checked by the parser
    id.Put(static_cast<uint8_t>(Nibble(m.build_id[i]) << 4 | Nibble(m.build_id[i + 1])));
  Note(note, "GNU", NT_GNU_BUILD_ID, id);
  uint64_t span = std::max(end, start + size) - start;
  Elf64_Phdr load{PT_LOAD, PF_R, 0, start - m.bias, start - m.bias, span, span, kPage};
  Elf64_Phdr pnote{PT_NOTE, PF_R, 0x100, start - m.bias + 0x100, start - m.bias + 0x100, note.size(), note.size(), 4};
  h.At(0, eh);
  h.At(sizeof eh, load);
  h.At(sizeof eh + sizeof load, pnote);
  h.Put(note.b.data(), note.size());
  h.b.resize(std::min<uint64_t>(h.size(), size));
  return h;
}

// The line's address space: the words it gives (the stack window, then the
// frame chain: each frame pointer's saved frame pointer and return
// address) in runs, the rest of the stack mapping (mapped, not dumped),
// and the modules' segments, each module's first offset-0 one marked for
// an ELF header page. Sorted; overlaps (a hostile line) keep the first.
std::vector<Load> LayOut(const CrashLine& l) {
  struct Word {
    uint64_t address, order, value;  // of two at one address, the later given wins
  };
  std::vector<Word> words;
  words.reserve(2 * l.frame_pointers.size() + l.stack.size());
  for (size_t i = 0; i < l.frame_pointers.size(); ++i) {
    uint64_t fp = l.frame_pointers[i];
    if (fp > UINT64_MAX - 16) continue;
    words.push_back({fp, words.size(), i + 1 < l.frame_pointers.size() ? l.frame_pointers[i + 1] : 0});
    if (i + 1 < l.backtrace.size())
      if (auto ra = FrameAddress(l, l.backtrace[i + 1])) words.push_back({fp + 8, words.size(), *ra});
  }
  const size_t chain_words = words.size();
  for (size_t i = 0; i < l.stack.size(); ++i)
    if (l.stack[i]) words.push_back({l.stack_start + 8 * i, words.size(), *l.stack[i]});
  auto by_place = [](const Word& a, const Word& b) {
    return a.address != b.address ? a.address < b.address : a.order < b.order;
  };
  // The handler writes the chain up the stack and the stack words upwards:
  // two runs in order, merged in one pass (a sort was 7% of a line's cost).
  auto split = words.begin() + static_cast<ptrdiff_t>(chain_words);
  if (std::is_sorted(words.begin(), split, by_place) && std::is_sorted(split, words.end(), by_place))
    std::inplace_merge(words.begin(), split, words.end(), by_place);
  else
    std::sort(words.begin(), words.end(), by_place);

  std::vector<Load> loads;
  size_t runs = words.empty() ? 0 : 1;
  for (size_t i = 1; i < words.size(); ++i)
    if (words[i].address != words[i - 1].address && words[i].address != words[i - 1].address + 8) ++runs;
  loads.reserve(2 * runs + 1 + l.segments.size());  // the runs, a gap around each, the segments
  // Runs of consecutive words, each a segment with its bytes.
  for (size_t i = 0; i < words.size();) {
    Load ld{words[i].address, 0, PF_R | PF_W, {}, std::nullopt};
    ld.data.b.reserve(8 * (words.size() - i));  // at most the words left
    uint64_t next = words[i].address;
    while (i < words.size() && words[i].address == next) {
      size_t last = i;  // of the same address, the last given
      while (last + 1 < words.size() && words[last + 1].address == next) ++last;
      ld.data.Put(words[last].value);
      next += 8;
      i = last + 1;
    }
    ld.memsz = ld.data.size();
    loads.push_back(std::move(ld));
  }
  if (l.stack_mapping) {
    uint64_t at = l.stack_mapping->first;
    std::vector<Load> gaps;
    gaps.reserve(runs + 1);
    for (const auto& ld : loads) {
      if (ld.vaddr >= l.stack_mapping->second) break;
      if (ld.vaddr > at) gaps.push_back({at, ld.vaddr - at, PF_R | PF_W, {}, std::nullopt});
      at = std::max(at, ld.vaddr + ld.memsz);
    }
    if (at < l.stack_mapping->second) gaps.push_back({at, l.stack_mapping->second - at, PF_R | PF_W, {}, std::nullopt});
    for (auto& g : gaps) loads.push_back(std::move(g));
  }
  // Each module's offset-0 segment holds an ELF header page with its
  // build-id, as the kernel dumps the first page of an ELF mapping.
  std::vector<bool> header_done(l.modules.size(), false);
  for (const auto& s : l.segments) {
    Load ld{s.start, s.end - s.start, PF_R | (s.write ? PF_W : 0u) | (s.exec ? PF_X : 0u), {}, std::nullopt};
    const auto& m = l.modules[s.module];
    if (s.offset == 0 && !header_done[s.module] && !m.build_id.empty() && s.start >= m.bias) {
      header_done[s.module] = true;
      ld.header_of = s.module;
    }
    loads.push_back(std::move(ld));
  }
  // By address, the first given first among equals; a load that overlaps
  // the one before it is dropped. Sorted by index: a Load is heavy to move.
  std::vector<uint32_t> order(loads.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return loads[a].vaddr != loads[b].vaddr ? loads[a].vaddr < loads[b].vaddr : a < b;
  });
  std::vector<Load> kept;
  kept.reserve(loads.size());
  for (uint32_t i : order) {
    Load& ld = loads[i];
    if (!kept.empty() && ld.vaddr < kept.back().vaddr + kept.back().memsz) continue;
    kept.push_back(std::move(ld));
  }
  return kept;
}

// The line's registers in its machine's NT_PRSTATUS order, which is Reg's
// from the machine's first: x86_64's user_regs_struct (27, rebuilt from
// the ucontext's 23), aarch64's user_pt_regs (the line's own 34).
struct PrRegs {
  std::array<uint64_t, 34> value{};
  size_t count = 0;
};
PrRegs UserRegs(const CrashLine& l) {
  PrRegs out;
  if (l.arch == Arch::kAarch64) {
    out.value = l.registers;
    out.count = kA64RegCount;
    return out;
  }
  // The parser keeps the registers in kX86RegisterNames' order, all 23.
  auto reg = [&](size_t place) { return l.registers[place]; };
  constexpr auto at = [](std::string_view n) {
    size_t i = 0;
    while (i < std::size(kX86RegisterNames) && kX86RegisterNames[i] != n) ++i;
    return i;
  };
  // user_regs_struct's general registers, by their place in the line.
  static constexpr size_t kPlace[] = {at("r15"), at("r14"), at("r13"), at("r12"), at("rbp"), at("rbx"),
                                      at("r11"), at("r10"), at("r9"),  at("r8"),  at("rax"), at("rcx"),
                                      at("rdx"), at("rsi"), at("rdi"), at("rip"), at("eflags"), at("rsp"),
                                      at("csgsfs")};
  static_assert(*std::max_element(std::begin(kPlace), std::end(kPlace)) < std::size(kX86RegisterNames));
  uint64_t csgsfs = reg(kPlace[18]);
  const std::array<uint64_t, kX86RegCount> x86 = {
      reg(kPlace[0]),  reg(kPlace[1]),  reg(kPlace[2]),  reg(kPlace[3]),  reg(kPlace[4]),  reg(kPlace[5]),
      reg(kPlace[6]),  reg(kPlace[7]),  reg(kPlace[8]),  reg(kPlace[9]),  reg(kPlace[10]), reg(kPlace[11]),
      reg(kPlace[12]), reg(kPlace[13]), reg(kPlace[14]), UINT64_MAX,      reg(kPlace[15]), csgsfs & 0xffff,
      reg(kPlace[16]), reg(kPlace[17]), (csgsfs >> 48) & 0xffff, 0, 0, 0, 0,
      (csgsfs >> 32) & 0xffff, (csgsfs >> 16) & 0xffff};
  std::copy(x86.begin(), x86.end(), out.value.begin());
  out.count = kX86RegCount;
  return out;
}

// The AT_PHDR a process has: the main program is the first module, as
// dl_iterate_phdr lists it.
std::optional<uint64_t> ProgramHeaders(const CrashLine& l) {
  for (const auto& s : l.segments)
    if (s.module == 0) return s.start + sizeof(Elf64_Ehdr);
  return std::nullopt;
}

}  // namespace

std::vector<std::byte> SynthesizeCore(const CrashLine& l) {
  std::vector<Load> kept = LayOut(l);
  for (auto& ld : kept) {
    if (!ld.header_of) continue;
    uint64_t end = ld.vaddr + ld.memsz;
    for (const auto& s : l.segments)
      if (s.module == *ld.header_of && s.start >= ld.vaddr) end = std::max(end, s.end);
    ld.data = HeaderPage(l.modules[*ld.header_of], l.arch, ld.vaddr, ld.memsz, end);
  }

  // Notes.
  Bytes notes;
  {
    Bytes pr;
    // elf_prstatus: pr_reg at 112, then pr_fpvalid, padded to 8.
    auto values = UserRegs(l);
    pr.b.assign(112 + 8 * values.count + 8, std::byte{0});
    pr.At<int32_t>(0, l.signal);
    pr.At<int32_t>(4, l.code);
    pr.At<int16_t>(12, static_cast<int16_t>(l.signal));
    pr.At<int32_t>(32, l.tid);
    pr.At<int32_t>(36, 0);
    for (size_t i = 0; i < values.count; ++i) pr.At<uint64_t>(112 + 8 * i, values.value[i]);
    Note(notes, "CORE", NT_PRSTATUS, pr);

    Bytes ps;
    ps.b.assign(136, std::byte{0});
    ps.At<uint8_t>(1, 'R');
    ps.At<int32_t>(24, l.pid);
    std::memcpy(ps.b.data() + 40, l.comm.data(), std::min<size_t>(l.comm.size(), 15));
    std::memcpy(ps.b.data() + 56, l.comm.data(), std::min<size_t>(l.comm.size(), 79));
    Note(notes, "CORE", NT_PRPSINFO, ps);

    Bytes si;
    si.b.assign(128, std::byte{0});
    si.At<int32_t>(0, l.signal);
    si.At<int32_t>(8, l.code);
    si.At<uint64_t>(16, l.fault_address);
    Note(notes, "CORE", NT_SIGINFO, si);

    Bytes aux;
    if (auto phdr = ProgramHeaders(l)) {
      aux.Put<uint64_t>(AT_PHDR);
      aux.Put<uint64_t>(*phdr);
    }
    aux.Put<uint64_t>(AT_PAGESZ);
    aux.Put<uint64_t>(kPage);
    aux.Put<uint64_t>(AT_NULL);
    aux.Put<uint64_t>(0);
    Note(notes, "CORE", NT_AUXV, aux);

    Bytes files;
    files.Put<uint64_t>(l.segments.size());
    files.Put<uint64_t>(kPage);
    for (const auto& s : l.segments) {
      files.Put(s.start);
      files.Put(s.end);
      files.Put(s.offset / kPage);
    }
    for (const auto& s : l.segments) files.Put(l.modules[s.module].path.c_str(), l.modules[s.module].path.size() + 1);
    Note(notes, "CORE", NT_FILE, files);
  }

  // The file: header, program headers, notes, segment bytes.
  size_t phnum = 1 + kept.size();
  uint64_t offset = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
  Bytes out;
  size_t total = offset + notes.size();
  for (const auto& ld : kept) total += ld.data.size();
  out.b.reserve(total);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_CORE;
  eh.e_machine = ElfMachine(l.arch);
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof eh;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<Elf64_Half>(phnum);
  out.Put(eh);
  Elf64_Phdr pn{PT_NOTE, 0, offset, 0, 0, notes.size(), 0, 4};
  out.Put(pn);
  offset += notes.size();
  for (const auto& ld : kept) {
    Elf64_Phdr ph{PT_LOAD, ld.flags, offset, ld.vaddr, 0, ld.data.size(), ld.memsz, kPage};
    out.Put(ph);
    offset += ld.data.size();
  }
  out.Put(notes.b.data(), notes.size());
  for (const auto& ld : kept) out.Put(ld.data.b.data(), ld.data.size());
  return std::move(out.b);
}

namespace {

// The laid-out loads as the core's segments over one buffer of their bytes.
std::vector<std::byte> AddSegments(const std::vector<Load>& kept, CoreParts& parts) {
  std::vector<std::byte> bytes;
  size_t total = 0;
  for (const auto& ld : kept) total += ld.data.size();
  bytes.reserve(total);
  parts.segments.reserve(kept.size());
  for (const auto& ld : kept) {
    Segment seg;
    seg.vaddr = ld.vaddr;
    seg.memsz = ld.memsz;
    seg.offset = bytes.size();
    seg.filesz = seg.present = ld.data.size();
    seg.read = ld.flags & PF_R;
    seg.write = ld.flags & PF_W;
    seg.exec = ld.flags & PF_X;
    bytes.insert(bytes.end(), ld.data.b.begin(), ld.data.b.end());
    parts.segments.push_back(seg);
  }
  return bytes;
}

// The crashing thread, its registers and its signal, as NT_PRSTATUS and
// NT_SIGINFO would hold them.
void AddThread(const CrashLine& l, CoreParts& parts) {
  Thread t;
  t.tid = l.tid;
  t.cursig = static_cast<int16_t>(l.signal);
  t.registers.arch = l.arch;
  auto values = UserRegs(l);
  const size_t first = static_cast<size_t>(NoteMachineOf(l.arch).first_reg);
  for (size_t i = 0; i < values.count; ++i) t.registers.value[first + i] = values.value[i];
  SignalInfo si;
  si.source = SignalInfo::Source::kSiginfoNote;
  si.signo = l.signal;
  si.code = l.code;
  if (SignalHasFaultAddress(si.signo, si.code)) si.fault_address = l.fault_address;
  if (SignalHasSender(si.code)) {  // the same siginfo bytes, read as sender
    si.sender_pid = static_cast<int32_t>(l.fault_address & 0xffffffff);
    si.sender_uid = static_cast<uint32_t>(l.fault_address >> 32);
  }
  t.siginfo = si;
  parts.signal = si;
  parts.threads.push_back(std::move(t));
}

// NT_PRPSINFO's fields, the auxiliary vector the line implies, and NT_FILE.
void AddProcess(const CrashLine& l, CoreParts& parts) {
  ProcessInfo p;
  p.state = 'R';
  p.pid = l.pid;
  auto field = [&](size_t len) {  // pr_fname / pr_psargs: cut to the field, up to a NUL
    std::string v = l.comm.substr(0, len);
    return v.substr(0, v.find('\0'));
  };
  p.comm = field(15);
  p.args = field(79);
  while (!p.args.empty() && p.args.back() == ' ') p.args.pop_back();
  parts.process = std::move(p);

  if (auto phdr = ProgramHeaders(l)) {
    parts.auxv.entries.push_back({AT_PHDR, *phdr});
    parts.auxv.phdr = *phdr;
  }
  parts.auxv.entries.push_back({AT_PAGESZ, kPage});
  parts.auxv.pagesz = kPage;

  parts.files.reserve(l.segments.size());
  for (const auto& s : l.segments) {
    const std::string& path = l.modules[s.module].path;
    parts.files.push_back({s.start, s.end, s.offset / kPage * kPage, path.substr(0, path.find('\0'))});
  }
  if (parts.files.empty()) parts.missing.push_back("no NT_FILE note: mapped files and modules unknown");
}

// The modules, as the core reader finds them in the same line's ELF core:
// one per mapped path with code or with a header page at its first
// offset-0 mapping (whose build-id and bias are the line's).
void AddModules(const CrashLine& l, const std::vector<Load>& kept, CoreParts& parts) {
  auto at = [&](uint64_t addr) -> const Load* {
    auto it = std::upper_bound(kept.begin(), kept.end(), addr, [](uint64_t a, const Load& ld) { return a < ld.vaddr; });
    if (it == kept.begin()) return nullptr;
    --it;
    return addr - it->vaddr < it->memsz ? &*it : nullptr;
  };
  auto objects = GroupMappings(parts.files, [&](uint64_t a) {
    const Load* ld = at(a);
    return ld && (ld->flags & PF_X);
  });
  for (auto& object : objects) {
    Module& m = object.module;
    m.arch = l.arch;
    const Load* header = object.header_at ? at(*object.header_at) : nullptr;
    // The page holds the header, its program headers and the build-id note
    // unless the mapping is smaller (a hostile line).
    bool elf_in_core =
        header && header->vaddr == *object.header_at && header->header_of &&
        header->memsz >= 0x100 + 16 + (l.modules[*header->header_of].build_id.size() / 2 + 3) / 4 * 4;
    if (!elf_in_core && !object.has_code) continue;
    if (elf_in_core) {
      const auto& lm = l.modules[*header->header_of];
      m.load_bias = lm.bias;
      m.build_id = lm.build_id;
      m.build_id_source = Module::BuildIdSource::kCore;
    } else {
      m.load_bias = m.base;
    }
    parts.modules.push_back(std::move(m));
  }
  std::stable_sort(parts.modules.begin(), parts.modules.end(),
                   [](const Module& a, const Module& b) { return a.base < b.base; });
}

}  // namespace

std::unique_ptr<Core> AssembleCore(const CrashLine& l) {
  std::vector<Load> kept = LayOut(l);
  CoreParts parts;
  parts.arch = l.arch;
  std::vector<std::byte> bytes = AddSegments(kept, parts);
  AddThread(l, parts);
  AddProcess(l, parts);
  AddModules(l, kept, parts);
  parts.source = MakeMemorySource(std::move(bytes));
  return Core::Assemble(std::move(parts));
}

}  // namespace coroner
