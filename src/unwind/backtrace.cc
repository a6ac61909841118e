#include "unwind/backtrace.h"

#include <algorithm>

namespace coroner {

Backtrace BuildBacktrace(const Thread& thread, const ModuleMap& modules, StackMemory& memory,
                         const UnwindOptions& options) {
  Backtrace bt;
  UnwindResult raw = Unwind(thread, modules, memory, options);
  bt.physical_frames = raw.frames.size();
  bt.stop_reason = raw.stop_reason;
  bt.frames.reserve(raw.frames.size());  // more only with inlined frames
  // Recursion repeats pcs: symbolize each once. Recursion is deep in few
  // stacks, so a map (an allocation per frame) was more than a search.
  std::vector<std::pair<uint64_t, PcSymbol>> symbols;
  symbols.reserve(raw.frames.size());
  for (size_t i = 0; i < raw.frames.size(); ++i) {
    const RawFrame& r = raw.frames[i];
    // A return address points after the call: symbolize the call itself.
    uint64_t lookup = r.exact_pc || r.pc == 0 ? r.pc : r.pc - 1;
    auto it = std::find_if(symbols.begin(), symbols.end(), [&](const auto& s) { return s.first == lookup; });
    if (it == symbols.end()) it = symbols.insert(symbols.end(), {lookup, modules.Symbolize(lookup)});
    const PcSymbol& sym = it->second;
    Frame base;
    base.pc = r.pc;
    base.module = sym.module;
    // The contract: pc - load bias, also for a return address (the lookup
    // above is one byte earlier).
    if (sym.module) {
      base.offset = sym.module->ToLink(r.pc);
      base.lookup = sym.offset;
    }
    base.trust = r.trust;
    base.signal_trampoline = r.signal_trampoline;
    base.jit = !sym.module && r.pc != 0 && modules.IsJitCode(r.pc);
    base.physical = i;
    base.sp = r.sp;
    base.cfa = r.cfa;
    base.regs = r.regs;
    if (sym.functions.empty()) {
      base.function = sym.symbol;
      base.index = bt.frames.size();
      bt.frames.push_back(base);
      continue;
    }
    for (const auto& f : sym.functions) {
      Frame fr = base;
      fr.function = f.name.empty() ? sym.symbol : f.name;
      fr.file = f.file;
      fr.line = f.line;
      fr.inlined = f.inlined;
      fr.index = bt.frames.size();
      bt.frames.push_back(std::move(fr));
    }
  }
  return bt;
}

}  // namespace coroner
