#include "unwind/backtrace.h"

#include <algorithm>
#include <functional>

namespace coroner {

Backtrace BuildBacktrace(const Thread& thread, const ModuleMap& modules, StackMemory& memory,
                         const UnwindOptions& options) {
  Backtrace bt;
  bt.thread = &thread;
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
    base.pc_kind = r.exact_pc ? PcKind::kInstruction : PcKind::kReturnAddress;
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

namespace {

// The chains of tail-call sites from the function entered at `from` to the
// one entered at `to`, depth first, each at most kMaxChain long; stops once
// a second chain shows the path is not proved. `budget` bounds the functions
// whose DWARF is walked, for the whole backtrace (hostile DWARF, deep
// recursion).
constexpr size_t kMaxChain = 8;
constexpr size_t kMaxFunctionsWalked = 512;

// `arrives(site)`: the tail call at `site` went to the running function.
void FindTailChains(const ModuleImage& image, uint64_t from, const std::function<bool(const CallSite&)>& arrives,
                    std::vector<CallSite>& path, std::vector<uint64_t>& visited,
                    std::vector<std::vector<CallSite>>& chains, size_t& budget) {
  if (chains.size() > 1 || path.size() >= kMaxChain || budget == 0) return;
  --budget;
  visited.push_back(from);
  for (const CallSite& site : image.TailCallsFrom(from)) {
    if (chains.size() > 1) continue;
    path.push_back(site);
    if (arrives(site)) {
      chains.push_back(path);
    } else if (site.target && std::find(visited.begin(), visited.end(), *site.target) == visited.end()) {
      FindTailChains(image, *site.target, arrives, path, visited, chains, budget);
    }
    path.pop_back();
  }
}

}  // namespace

void AddTailCallFrames(Backtrace& bt, const ModuleMap& modules) {
  size_t budget = kMaxFunctionsWalked;
  std::vector<Frame> out;
  out.reserve(bt.frames.size());
  for (size_t i = 0; i < bt.frames.size(); ++i) {
    out.push_back(bt.frames[i]);
    // The callee's last (outermost) frame and the caller's first.
    if (i + 1 >= bt.frames.size() || bt.frames[i + 1].physical == bt.frames[i].physical) continue;
    const Frame& callee = bt.frames[i];
    const Frame& caller = bt.frames[i + 1];
    if (callee.signal_trampoline || caller.signal_trampoline || caller.trust == FrameTrust::kScan ||
        caller.trust == FrameTrust::kSignal || !callee.module || !caller.module || !callee.module->image ||
        !caller.module->image || !callee.lookup || !caller.offset) {
      continue;
    }
    const ModuleImage& image = *callee.module->image;
    std::optional<CallSite> call = caller.module->image->CallSiteReturningTo(*caller.offset);
    if (!call) continue;
    // What the call went to, in the callee's module: a call into another
    // module (through the PLT) names an external function, which that
    // module must export.
    // (Plain values, not optionals: GCC 12 at -O2 takes an optional
    // reassigned in a branch for maybe-uninitialized.)
    bool known = false;
    uint64_t target = 0;
    // Where the tail calls were made: in the callee's module, or in the
    // caller's when a function of its own jumped on into the callee's
    // module through the PLT (`release` calls `free` last: `b free@plt`).
    const MappedModule* chain_module = callee.module;
    if (callee.module == caller.module) {
      known = call->target.has_value();
      target = call->target.value_or(0);
    } else if (!call->target_name.empty() && image.DefinesDynamic(call->target_name)) {
      std::optional<uint64_t> exported = image.SymbolAddress(call->target_name);
      known = exported.has_value();
      target = exported.value_or(0);
    } else if (call->target) {
      chain_module = caller.module;
      known = true;
      target = *call->target;
    }
    std::optional<uint64_t> running = image.FunctionEntry(*callee.lookup);
    if (!running && chain_module != callee.module) {
      // A library without debug information: its symbol table's start.
      PcSymbol sym = modules.Symbolize(callee.module->bias + *callee.lookup);
      if (!sym.symbol.empty() && sym.symbol_offset <= *callee.lookup) running = *callee.lookup - sym.symbol_offset;
    }
    if (!known || !running || (chain_module == callee.module && target == *running)) continue;
    std::function<bool(const CallSite&)> arrives = [&](const CallSite& site) { return site.target == running; };
    if (chain_module != callee.module) {
      arrives = [&](const CallSite& site) {
        return !site.target && !site.target_name.empty() && image.DefinesDynamic(site.target_name) &&
               image.SymbolAddress(site.target_name) == running;
      };
    }
    std::vector<CallSite> path;
    std::vector<uint64_t> visited;
    std::vector<std::vector<CallSite>> chains;
    FindTailChains(*chain_module->image, target, arrives, path, visited, chains, budget);
    // Unproved where the search ran out before it could see a second chain.
    if (chains.size() != 1 || budget == 0) continue;
    // Innermost first: the last tail call made is the nearest the callee.
    for (auto site = chains[0].rbegin(); site != chains[0].rend(); ++site) {
      Frame f;
      f.pc = site->return_pc + chain_module->bias;
      f.pc_kind = PcKind::kReturnAddress;
      f.module = chain_module;
      f.offset = site->return_pc;
      f.lookup = site->return_pc - 1;
      PcSymbol sym = modules.Symbolize(f.pc - 1);
      // Named by the innermost function at the jump, as gdb names it.
      f.function = sym.functions.empty() || sym.functions[0].name.empty() ? sym.symbol : sym.functions[0].name;
      if (!sym.functions.empty()) {
        f.file = sym.functions[0].file;
        f.line = sym.functions[0].line;
      }
      f.trust = FrameTrust::kTailCall;
      f.physical = callee.physical;
      f.sp = callee.cfa.value_or(callee.sp);
      out.push_back(std::move(f));
    }
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].index = i;
  bt.frames = std::move(out);
}

}  // namespace coroner
