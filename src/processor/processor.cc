#include "processor/processor.h"

#include <sys/stat.h>

#include <algorithm>
#include <unordered_map>

#include "processor/signature.h"
#include "text/text.h"
#include "unwind/frame_variables.h"
#include "unwind/stack_memory.h"

namespace coroner {

namespace {

// GPU state that came with the core: ROCm's AMDGPU notes in it, or a CUDA
// GPU core dump beside it with the core's name (`x.core.nvcudmp`, or the
// name without its extensions: `x.nvcudmp` for `x.core.zst`).
std::vector<GpuState> GpuStateOf(const Core& core, const std::string& path) {
  std::vector<GpuState> out;
  if (uint64_t n = core.amdgpu_state_bytes()) out.push_back({GpuState::Kind::kAmdgpuNotes, n, {}});
  if (path.empty() || path.find("://") != std::string::npos) return out;
  std::string stem = path;
  for (int cut = 0; cut < 3; ++cut) {
    struct stat st;
    std::string candidate = stem + ".nvcudmp";
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      out.push_back({GpuState::Kind::kCudaDump, static_cast<uint64_t>(st.st_size), candidate});
      break;
    }
    size_t dot = stem.rfind('.'), slash = stem.rfind('/');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) break;
    stem.resize(dot);
  }
  return out;
}

// Where glibc's `environ` points: the module that defines `__environ`
// (libc), its value in the core. A setenv that grew the environment moved
// it from the stack to the heap.
std::optional<uint64_t> GlibcEnviron(const Core& core, const ModuleMap& modules) {
  for (const auto& m : modules.modules()) {
    if (!m.image) continue;
    if (auto sym = m.image->SymbolAddress("__environ")) return core.memory().Read<uint64_t>(m.bias + *sym);
  }
  return std::nullopt;
}

}  // namespace

std::string_view GpuStateName(GpuState::Kind kind) {
  switch (kind) {
    case GpuState::Kind::kAmdgpuNotes: return "amdgpu-notes";
    case GpuState::Kind::kCudaDump: return "cuda-dump";
  }
  return "cuda-dump";
}

CoreOptions CoreOptionsFor(const ProcessOptions& options) {
  CoreOptions core;
  core.notes_only = options.depth == AnalysisDepth::kRegisters;
  if (options.python_frames && !core.notes_only) core.is_interpreter = IsPythonInterpreterPath;
  return core;
}

CrashAnalysis ProcessCore(Core& core, SymbolProvider& symbols, const ProcessOptions& options) {
  CrashAnalysis a;
  a.core = &core;
  a.gpu_state = GpuStateOf(core, options.input_path);
  a.threads.resize(core.threads().size());
  for (size_t i = 0; i < core.threads().size(); ++i) a.threads[i].thread = &core.threads()[i];
  if (options.depth == AnalysisDepth::kRegisters) return a;
  a.modules = std::make_unique<ModuleMap>(core, symbols);
  const ModuleMap& modules = *a.modules;
  a.identity = IdentifyProcess(core, options.environment, GlibcEnviron(core, modules));
  StackMemory stack(core.memory());
  const bool full = options.depth == AnalysisDepth::kFull;
  const size_t crashing_index = core.crashing_thread();
  // All the threads' frames together are bounded too: a hostile core of
  // 65,536 threads whose stacks each unwind to the frame limit would
  // otherwise take minutes and gigabytes. The crashing thread goes first, with
  // the full limit; the others share what is left, and a thread cut by the
  // budget says so in its stop reason. A dataset row needs the crashing
  // thread alone (the others' stacks would multiply the bytes read).
  a.signed_thread = SignedThread(core);
  size_t budget = kMaxFramesPerCore;
  for (size_t k = 0; k < core.threads().size(); ++k) {
    size_t i = k == 0 ? crashing_index : k == crashing_index ? 0 : k;
    if (!full && i != crashing_index && i != a.signed_thread) continue;
    UnwindOptions o = options.unwind;
    o.max_frames = std::max<size_t>(1, std::min(options.unwind.max_frames, budget));
    Backtrace& bt = a.threads[i];
    bt = BuildBacktrace(core.threads()[i], modules, stack, o);
    AddTailCallFrames(bt, modules);
    budget -= std::min(budget, bt.frames.size());
    if (o.max_frames < options.unwind.max_frames && bt.frames.size() >= o.max_frames) {
      bt.stop_reason = {StopReason::Kind::kCoreBudget, kMaxFramesPerCore};
    }
  }
  // A core without threads still gets the rules that need none.
  if (!a.threads.empty()) {
    Backtrace& crashing = a.threads[crashing_index];
    a.fault_context = RecoverFaultContext(core, crashing, stack);
    if (full) {
      // The crashing thread's arguments and locals (gdb's `bt full`).
      ReadFrameVariables(crashing, modules, stack);
      for (Frame& f : crashing.frames) {
        HideEnvironmentSecrets(f.args, a.identity->hidden);
        HideEnvironmentSecrets(f.locals, a.identity->hidden);
      }
      // One disassembly per physical frame, on its first frame (its inlined
      // calls share its pc; a tail call's frames follow their callee's).
      for (size_t i = 0; i < crashing.frames.size() && crashing.frames[i].physical < kDisassembledFrames; ++i) {
        Frame& f = crashing.frames[i];
        if (i > 0 && f.physical == crashing.frames[i - 1].physical) continue;
        f.disassembly = Disassemble(modules, f.pc, f.pc_kind == PcKind::kInstruction);
      }
      if (a.fault_context) a.fault_disassembly = Disassemble(modules, a.fault_context->registers.pc(), true);
    }
  }
  a.diagnosis = Diagnose(core, modules, a.threads, a.fault_context, stack,
                         full ? DiagnosisDepth::kReport : DiagnosisDepth::kLabels);
  if (a.diagnosis) HideEnvironmentSecrets(*a.diagnosis, a.identity->hidden);
  // A dataset row needs the signed thread's Python frames alone.
  std::optional<uint64_t> only;
  if (!full && !core.threads().empty()) only = static_cast<uint64_t>(core.threads()[a.signed_thread].tid);
  if (options.python_frames) a.python = ReadPythonState(modules, core.memory(), only);
  if (a.python) {
    // Python threads meet the core's by native thread id (a core may hold
    // tens of thousands of threads: no search per Python thread).
    std::unordered_map<uint64_t, Backtrace*> by_tid;
    for (auto& t : a.threads) by_tid.emplace(static_cast<uint64_t>(t.thread->tid), &t);
    for (const auto& pt : a.python->threads) {
      auto it = by_tid.find(pt.tid);
      if (it != by_tid.end() && !it->second->frames.empty()) InterleavePythonFrames(*it->second, pt);
    }
  }
  a.signature = CrashSignature(a);
  return a;
}

std::function<bool(uint64_t)> HiddenWords(const CrashAnalysis& analysis) {
  if (!analysis.identity) return nullptr;
  const HiddenEnvironment* hidden = &analysis.identity->hidden;
  return [hidden](uint64_t word) { return hidden->HoldsWord(word); };
}

size_t SignedThread(const Core& core) {
  const size_t crashing = core.crashing_thread();
  const auto& s = core.signal();
  if (!s || !s->sender_pid || *s->sender_pid <= 0) return crashing;
  bool to_process = s->code == 0 /* SI_USER */ || s->code == -1 /* SI_QUEUE */;
  bool own = core.process() && core.process()->pid == *s->sender_pid;
  for (const auto& t : core.threads()) own |= t.tid == *s->sender_pid;
  if (!to_process || own || !core.process()) return crashing;
  for (size_t i = 0; i < core.threads().size(); ++i)
    if (core.threads()[i].tid == core.process()->pid) return i;
  return crashing;
}

std::string CrashSignature(const CrashAnalysis& a) {
  if (!a.diagnosis) return "";
  // What the dataset keeps of each frame, so that epi re-signing from the
  // rows makes the same signature.
  std::vector<StoredFrame> frames;
  if (const Backtrace* crashing = a.signed_backtrace()) {
    frames.reserve(crashing->frames.size());
    for (const Frame& f : crashing->frames)
      frames.push_back({ValidUtf8(f.function), f.module ? ValidUtf8(f.module->module->path) : std::string(), f.trust});
  }
  bool reraised = a.fault_context.has_value() && a.signed_backtrace() == a.crashing_backtrace();
  return MakeSignature(std::string(SyndromeName(a.diagnosis->syndrome)), SignatureFrames(frames, reraised));
}

const std::vector<Instruction>& CrashingInstructions(const CrashAnalysis& a) {
  const Backtrace* bt = a.crashing_backtrace();
  if (a.fault_context || !bt) return a.fault_disassembly;
  // Frame 0's physical frame: the first disassembled (a Python frame placed
  // before it has none).
  for (const auto& f : bt->frames) {
    if (f.disassembly) return *f.disassembly;
  }
  return a.fault_disassembly;
}

}  // namespace coroner
