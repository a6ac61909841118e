// The processor: the one place a core becomes an analysis. `analyze`,
// `scan` (cores and crash lines), `sources`, the fuzzers and the tests all
// call ProcessCore; the report renders its CrashAnalysis and the dataset
// stores it, and neither assembles one. (rust-minidump's process_minidump
// -> ProcessState is the model: one function, one result, the depth chosen
// by the caller.)
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/core.h"
#include "diagnose/diagnosis.h"
#include "processor/process_identity.h"
#include "python/python_stacks.h"
#include "symbolize/disassembler.h"
#include "symbolize/module_map.h"
#include "symbolize/symbol_provider.h"
#include "unwind/backtrace.h"
#include "unwind/signal_context.h"
#include "unwind/unwinder.h"

namespace coroner {

// How far the analysis goes.
enum class AnalysisDepth {
  kRegisters,  // the notes only: threads' registers, the signal, the modules the core lists
  kLabels,     // and the crashing thread unwound and symbolized, the real fault behind a
               // re-raised signal, the diagnosis's labels: a dataset row
  kFull,       // and every thread, the crashing thread's variables, the disassembly around
               // its frames and the fault, the whole diagnosis: the report
};

struct ProcessOptions {
  AnalysisDepth depth = AnalysisDepth::kFull;
  UnwindOptions unwind;  // max_frames bounds each thread
  bool python_frames = true;  // read a CPython process's Python stacks
  // The core's file, where a CUDA GPU core dump may sit beside it; empty
  // for a URL or a crash line.
  std::string input_path;
  EnvironmentPolicy environment;  // the identity variables kept besides the built-in ones
};

// Frames unwound for all the threads of one core together (each thread is
// also bounded by UnwindOptions::max_frames): 1,000 threads of 60 frames fit.
constexpr size_t kMaxFramesPerCore = 65536;
// Physical frames of the crashing thread disassembled around their pc
// (Frame::disassembly).
constexpr size_t kDisassembledFrames = 64;

// GPU state that came with a core, for the GPU's own debugger.
struct GpuState {
  enum class Kind { kAmdgpuNotes, kCudaDump };
  Kind kind = Kind::kAmdgpuNotes;
  uint64_t bytes = 0;
  std::string path;  // kCudaDump: the dump's file
};
// The dataset's `gpu_state` attribute: "amdgpu-notes" or "cuda-dump".
std::string_view GpuStateName(GpuState::Kind kind);

struct CrashAnalysis {
  const Core* core = nullptr;
  std::string path;  // as the user named the input
  // The module map the frames point into; null at kRegisters.
  std::unique_ptr<ModuleMap> modules;
  // Every thread of the core, in its order, with its frames. At kRegisters
  // none is unwound (`modules` is null); at kLabels only the crashing thread
  // and the signed one are, and the others have no frames.
  std::vector<Backtrace> threads;
  // The thread the signature names (SignedThread): the crashing thread, or
  // the main thread of a process another process signalled.
  size_t signed_thread = 0;
  // The real fault behind a re-raised signal, for the crashing thread.
  std::optional<FaultContext> fault_context;
  // At kFull: the instructions around the real fault's pc. (Those around
  // each frame's pc are the frame's: Frame::disassembly.)
  std::vector<Instruction> fault_disassembly;
  std::optional<Diagnosis> diagnosis;  // from kLabels on
  // The crash's bucket (processor/signature.h): the syndrome and the
  // crashing thread's top frames of the program's own, Python frames
  // included; from kLabels on. `analyze` shows it, `scan` stores it.
  std::string signature;
  // A CPython process's Python threads (from kLabels on; nullopt in any
  // other process). Their frames are also in `threads`, each at the
  // native eval frame that runs it (trust kPython); the diagnosis is made
  // from the native frames alone.
  std::optional<PythonState> python;
  // GPU state that came with the core: ROCm's AMDGPU notes, a CUDA GPU
  // dump beside it. Empty when there is none.
  std::vector<GpuState> gpu_state;
  // Who the process was: its command line, the identity variables of its
  // environment (no others) and its job; from kLabels on.
  std::optional<ProcessIdentity> identity;

  // The crashing thread with its frames; null when nothing was unwound
  // (kRegisters) or the core has no threads.
  const Backtrace* crashing_backtrace() const {
    return modules && core && core->crashing_thread() < threads.size() ? &threads[core->crashing_thread()] : nullptr;
  }
  // The thread the signature names, with its frames; null as above.
  const Backtrace* signed_backtrace() const {
    return modules && signed_thread < threads.size() ? &threads[signed_thread] : nullptr;
  }
};

// How to open a core for this analysis: with the Python stacks read,
// CPython's memory joins the core's read plan, so that a stream-compressed
// core gives them in its one pass.
CoreOptions CoreOptionsFor(const ProcessOptions& options);

// The thread a core's signature names: the thread that crashed, except
// when another process sent the signal to the whole process (kill(),
// sigqueue(): SI_USER, SI_QUEUE): the kernel gave it to whichever thread
// it chose, and where the process stood is its main thread's place (a
// watchdog's SIGABRT to a hung rank may land on its data loader's thread).
// A signal sent to one thread (tkill) names that thread.
size_t SignedThread(const Core& core);

// Analyzes `core` to the depth asked. The core and the provider must outlive
// the result (frames point into the module map, which points into both).
CrashAnalysis ProcessCore(Core& core, SymbolProvider& symbols, const ProcessOptions& options);

// The words the analysis's outputs must not show: those holding a hidden
// variable's bytes (HiddenEnvironment::HoldsWord), for a HiddenWordsScope
// around writing them. The analysis must outlive it.
std::function<bool(uint64_t)> HiddenWords(const CrashAnalysis& analysis);

// The signature of an analysis at kLabels or deeper (empty before).
std::string CrashSignature(const CrashAnalysis& analysis);

// The instructions around the fault: the real fault's when a handler
// re-raised it, else frame 0's. Empty when there are none.
const std::vector<Instruction>& CrashingInstructions(const CrashAnalysis& analysis);

}  // namespace coroner
