#include "processor/processor.h"

#include <algorithm>
#include <unordered_map>

#include "unwind/frame_variables.h"
#include "unwind/stack_memory.h"

namespace coroner {

CrashAnalysis ProcessCore(Core& core, SymbolProvider& symbols, const ProcessOptions& options) {
  CrashAnalysis a;
  a.core = &core;
  if (options.depth == AnalysisDepth::kRegisters) return a;
  a.modules = std::make_unique<ModuleMap>(core, symbols);
  const ModuleMap& modules = *a.modules;
  StackMemory stack(core.memory());
  const bool full = options.depth == AnalysisDepth::kFull;
  const size_t crashing_index = core.crashing_thread();
  a.backtraces.resize(core.threads().size());
  // All the threads' frames together are bounded too: a hostile core of
  // 65,536 threads whose stacks each unwind to the frame limit would
  // otherwise take minutes and gigabytes. The crashing thread goes first, with
  // the full limit; the others share what is left, and a thread cut by the
  // budget says so in its stop reason. A dataset row needs the crashing
  // thread alone (the others' stacks would multiply the bytes read).
  size_t budget = kMaxFramesPerCore;
  for (size_t k = 0; k < core.threads().size() && (full || k == 0); ++k) {
    size_t i = k == 0 ? crashing_index : k == crashing_index ? 0 : k;
    UnwindOptions o = options.unwind;
    o.max_frames = std::max<size_t>(1, std::min(options.unwind.max_frames, budget));
    Backtrace& bt = a.backtraces[i];
    bt = BuildBacktrace(core.threads()[i], modules, stack, o);
    AddTailCallFrames(bt, modules);
    budget -= std::min(budget, bt.frames.size());
    if (o.max_frames < options.unwind.max_frames && bt.frames.size() >= o.max_frames) {
      bt.stop_reason = "the core's budget of " + std::to_string(kMaxFramesPerCore) + " frames for all threads is spent";
    }
  }
  // A core without threads still gets the rules that need none.
  if (!a.backtraces.empty()) {
    Backtrace& crashing = a.backtraces[crashing_index];
    a.fault_context = RecoverFaultContext(core, crashing, stack);
    if (full) {
      // The crashing thread's arguments and locals (gdb's `bt full`).
      ReadFrameVariables(crashing, modules, stack);
      // One disassembly per unwound frame (inlined frames share their pc).
      size_t last = SIZE_MAX;
      for (const auto& f : crashing.frames) {
        if (f.physical == last) continue;
        if (a.crashing_disassembly.size() >= kDisassembledFrames) break;
        last = f.physical;
        bool exact = f.physical == 0 || f.trust == FrameTrust::kSignal;
        a.crashing_disassembly.push_back(Disassemble(modules, f.pc, exact));
      }
      if (a.fault_context) a.fault_disassembly = Disassemble(modules, a.fault_context->registers.pc(), true);
    }
  }
  a.diagnosis = Diagnose(core, modules, a.backtraces, a.fault_context, stack,
                         full ? DiagnosisDepth::kReport : DiagnosisDepth::kLabels);
  // A dataset row needs the crashing thread's Python frames alone.
  std::optional<uint64_t> only;
  if (!full && !core.threads().empty()) only = static_cast<uint64_t>(core.threads()[crashing_index].tid);
  if (options.python_frames) a.python = ReadPythonState(modules, core.memory(), only);
  if (a.python) {
    // Python threads meet the core's by native thread id (a core may hold
    // tens of thousands of threads: no search per Python thread).
    std::unordered_map<uint64_t, size_t> by_tid;
    for (size_t i = 0; i < core.threads().size(); ++i) by_tid.emplace(static_cast<uint64_t>(core.threads()[i].tid), i);
    for (const auto& pt : a.python->threads) {
      auto it = by_tid.find(pt.tid);
      if (it != by_tid.end() && !a.backtraces[it->second].frames.empty()) {
        InterleavePythonFrames(a.backtraces[it->second], pt);
      }
    }
  }
  return a;
}

const std::vector<Instruction>& CrashingInstructions(const CrashAnalysis& a) {
  if (a.fault_context || a.crashing_disassembly.empty()) return a.fault_disassembly;
  return a.crashing_disassembly[0];
}

}  // namespace coroner
