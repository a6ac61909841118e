#include "unwind/unwinder.h"

#include <dwarf.h>

#include <cstdlib>
#include <memory>

#include "unwind/dwarf_expression.h"
#include "unwind/machine_steps.h"

namespace coroner {
namespace {

struct FreeDeleter {
  void operator()(Dwarf_Frame* f) const { std::free(f); }
};

// Evaluates a CFI expression. `is_value` reports whether the result is a
// value (a register's contents, DW_OP_stack_value) rather than an address.
std::optional<uint64_t> Evaluate(const Dwarf_Op* ops, size_t nops, const DwarfRegisters& regs,
                                 std::optional<uint64_t> cfa, StackMemory& mem, bool& is_value) {
  ExpressionContext context;
  context.regs = &regs;
  context.cfa = cfa;
  context.memory = &mem;
  ExpressionResult r = EvaluateExpression(ops, nops, context);
  is_value = r.kind == ExpressionResult::Kind::kValue;
  if (r.kind == ExpressionResult::Kind::kFailed) return std::nullopt;
  return r.value;
}

// One step by CFI. nullopt when the module has no CFI for the pc or a rule
// cannot be evaluated.
std::optional<RawFrame> StepCfi(RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                bool& end_of_stack, std::optional<uint64_t> pac_mask) {
  const UnwindMachine& machine = UnwindMachineOf(modules.arch());
  const DwarfAbi& abi = machine.abi;
  end_of_stack = false;
  uint64_t lookup = cur.exact_pc ? cur.pc : cur.pc - 1;
  const MappedModule* m = modules.Find(lookup);
  if (!m || !m->image) return std::nullopt;
  std::unique_ptr<Dwarf_Frame, FreeDeleter> frame(m->image->FrameAt(m->ToLink(lookup)));
  if (!frame) return std::nullopt;

  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_cfa(frame.get(), &ops, &nops) != 0 || nops == 0) return std::nullopt;
  bool is_value;
  auto cfa = Evaluate(ops, nops, cur.regs, std::nullopt, mem, is_value);
  if (!cfa) return std::nullopt;
  cur.cfa = cfa;

  Dwarf_Addr start, end;
  bool signal = false;
  int ra = dwarf_frame_info(frame.get(), &start, &end, &signal);
  if (ra < 0 || ra >= abi.count) ra = abi.ra;

  RawFrame next;
  for (int r = 0; r < abi.count; ++r) {
    Dwarf_Op mem_ops[3];
    Dwarf_Op* rops = nullptr;
    size_t rn = 0;
    if (dwarf_frame_register(frame.get(), r, mem_ops, &rops, &rn) != 0) continue;
    if (rn == 0) {
      // null ops: same value; ops_mem: undefined. libdw reports a register
      // the CFI says nothing about as undefined; for the registers the SysV
      // ABI makes callee-saved (rbx, rbp, r12-r15) no rule means the
      // function left them alone, as gdb also takes it.
      if (rops == nullptr || machine.callee_saved(r)) next.regs[r] = cur.regs[r];
      continue;
    }
    bool value = false;
    auto v = Evaluate(rops, rn, cur.regs, cfa, mem, value);
    if (!v) continue;
    if (value) {
      next.regs[r] = v;
    } else {
      next.regs[r] = mem.Read64(*v);
    }
  }
  auto return_address = next.regs[ra];
  if (!return_address) {
    end_of_stack = true;  // the CFI says there is no caller (_start, clone)
    return std::nullopt;
  }
  // The caller's stack pointer is the CFA (the default rule of both ABIs),
  // unless the CFI restores it from memory (signal frames).
  if (!next.regs[abi.sp]) next.regs[abi.sp] = *cfa;
  next.pc = machine.clean_return_address(*return_address, pac_mask);
  next.regs[abi.ra] = next.pc;
  next.sp = *next.regs[abi.sp];
  next.trust = cur.signal_trampoline ? FrameTrust::kSignal : FrameTrust::kCfi;
  // After a signal trampoline the pc is the interrupted instruction itself.
  next.exact_pc = signal;
  if (signal) next.trust = FrameTrust::kSignal;
  return next;
}

std::optional<RawFrame> StepFramePointer(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                         std::optional<uint64_t> pac_mask) {
  const UnwindMachine& machine = UnwindMachineOf(modules.arch());
  const DwarfAbi& abi = machine.abi;
  if (auto p = machine.step_prologue(cur, modules, mem, pac_mask)) return p;
  // The frame record: [fp] the caller's fp, [fp + 8] the return address,
  // on both machines.
  auto fp = cur.regs[abi.fp];
  if (!fp || *fp % 8 != 0 || *fp < cur.sp || *fp - cur.sp > (64u << 20)) return std::nullopt;
  auto saved_fp = mem.Read64(*fp);
  auto ra = mem.Read64(*fp + 8);
  if (!saved_fp || !ra) return std::nullopt;
  uint64_t pc = machine.clean_return_address(*ra, pac_mask);
  if (!modules.IsCode(pc)) return std::nullopt;
  RawFrame next;
  next.pc = pc;
  // x86_64's record is at the top of the frame; aarch64's is at its bottom
  // or top, which only the CFI knows: above the record is the least the
  // caller's sp can be.
  next.sp = *fp + 16;
  next.regs[abi.sp] = next.sp;
  next.regs[abi.fp] = *saved_fp;
  next.regs[abi.ra] = next.pc;
  // Callee-saved registers other than the frame pointer are not known without CFI.
  next.trust = FrameTrust::kFp;
  next.exact_pc = false;
  return next;
}

std::optional<RawFrame> StepScan(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                 size_t words, bool include_sp, std::optional<uint64_t> pac_mask) {
  const UnwindMachine& machine = UnwindMachineOf(modules.arch());
  const DwarfAbi& abi = machine.abi;
  for (size_t i = include_sp ? 0 : 1; i < words; ++i) {
    uint64_t slot = cur.sp + 8 * i;
    auto w = mem.Read64(slot);
    if (!w) return std::nullopt;  // ran off the stack's present bytes
    uint64_t pc = machine.clean_return_address(*w, pac_mask);
    if (!LooksLikeReturnAddress(modules, pc)) continue;
    RawFrame next;
    next.pc = pc;
    next.sp = slot + 8;
    next.regs[abi.sp] = next.sp;
    next.regs[abi.fp] = cur.regs[abi.fp];  // may still be a valid frame pointer
    next.regs[abi.ra] = next.pc;
    next.trust = FrameTrust::kScan;
    next.exact_pc = false;
    return next;
  }
  return std::nullopt;
}

}  // namespace

const char* FrameTrustName(FrameTrust t) {
  switch (t) {
    case FrameTrust::kContext: return "context";
    case FrameTrust::kCfi: return "cfi";
    case FrameTrust::kFp: return "fp";
    case FrameTrust::kScan: return "scan";
    case FrameTrust::kSignal: return "signal";
    case FrameTrust::kTailCall: return "tailcall";
    case FrameTrust::kPython: return "python";
  }
  return "unknown";
}

std::optional<FrameTrust> FrameTrustFromName(std::string_view name) {
  for (FrameTrust t : {FrameTrust::kContext, FrameTrust::kCfi, FrameTrust::kFp, FrameTrust::kScan, FrameTrust::kSignal,
                       FrameTrust::kTailCall, FrameTrust::kPython})
    if (name == FrameTrustName(t)) return t;
  return std::nullopt;
}

const DwarfAbi& DwarfAbiOf(Arch arch) { return UnwindMachineOf(arch).abi; }

uint64_t StripPointerAuthentication(Arch arch, uint64_t address, std::optional<uint64_t> pac_mask) {
  return UnwindMachineOf(arch).clean_return_address(address, pac_mask);
}

DwarfRegisters ToDwarfRegisters(const Registers& r) { return UnwindMachineOf(r.arch).to_dwarf(r); }

bool LooksLikeReturnAddress(const ModuleMap& modules, uint64_t addr) {
  if (addr < 8 || !modules.IsCode(addr)) return false;
  return UnwindMachineOf(modules.arch()).follows_call(modules, addr);
}

UnwindResult Unwind(const Thread& thread, const ModuleMap& modules, StackMemory& mem,
                    const UnwindOptions& options) {
  UnwindResult result;
  result.frames.reserve(std::min<size_t>(options.max_frames, 16));  // most stacks; more grow
  RawFrame top;
  top.pc = thread.registers.pc();
  top.sp = thread.registers.sp();
  top.regs = ToDwarfRegisters(thread.registers);
  top.trust = FrameTrust::kContext;
  top.exact_pc = true;
  result.frames.push_back(top);

  const UnwindMachine& machine = UnwindMachineOf(modules.arch());
  const std::optional<uint64_t> pac_mask = thread.a64.pac_insn_mask;
  // The function at the program's entry point called nothing before it: a
  // return address into it is the walk's end, whatever the stack holds
  // above (aarch64's _start has no CFI to say so, and an old executable
  // stack made its words look like code).
  // Only a return address within the function's size (4 KiB when the
  // symbol table gives none) is looked up: not a lookup every frame.
  std::optional<uint64_t> entry_function;
  uint64_t entry_span = 0;
  if (auto entry = modules.entry()) {
    PcSymbol sym = modules.Symbolize(*entry);
    if (!sym.symbol.empty()) entry_function = *entry - sym.symbol_offset;
    entry_span = sym.symbol_size > 0 ? sym.symbol_size : 4096;
  }
  while (result.frames.size() < options.max_frames) {
    RawFrame& cur = result.frames.back();
    if (entry_function && !cur.exact_pc && result.frames.size() > 1 && cur.pc - 1 >= *entry_function &&
        cur.pc - 1 - *entry_function < entry_span) {
      PcSymbol sym = modules.Symbolize(cur.pc - 1);
      if (!sym.symbol.empty() && cur.pc - 1 - sym.symbol_offset == *entry_function) {
        result.stop_reason = {StopReason::Kind::kEntryPoint};
        break;
      }
    }
    cur.signal_trampoline = false;
    std::optional<RawFrame> next;
    bool end_of_stack = false;
    bool pc_is_code = modules.IsCode(cur.pc);
    if (pc_is_code && machine.step_sigreturn && (next = machine.step_sigreturn(cur, modules, mem)))
      cur.signal_trampoline = true;
    if (pc_is_code && !next) {
      next = StepCfi(cur, modules, mem, end_of_stack, pac_mask);
      if (next && next->exact_pc) {
        // The frame just stepped through was the signal trampoline.
        cur.signal_trampoline = true;
      }
      if (end_of_stack) {
        result.stop_reason = {StopReason::Kind::kEndOfCfi};
        break;
      }
      if (!next) next = StepFramePointer(cur, modules, mem, pac_mask);
    }
    bool top_frame = result.frames.size() == 1;
    if (!next && top_frame && !pc_is_code && machine.step_bad_call) next = machine.step_bad_call(cur, modules, pac_mask);
    if (!next) {
      // pc 0 or in data, or nothing else worked: look for a return address,
      // starting at [rsp] for the top frame (a call through NULL left it there).
      next = StepScan(cur, modules, mem, options.scan_words, top_frame || !pc_is_code, pac_mask);
    }
    if (!next) {
      result.stop_reason = {pc_is_code ? StopReason::Kind::kNothingFound : StopReason::Kind::kPcNotCode};
      break;
    }
    if (next->pc == 0) {
      result.stop_reason = {StopReason::Kind::kReturnAddressZero};
      break;
    }
    // The stack grows down: a caller's frame is above its callee's, except
    // across a signal frame (an alternate signal stack).
    // On aarch64 a function that has not stored its frame record (a leaf)
    // returns with the stack pointer where it is: only from the frame at an
    // exact pc, the crash or the context a signal interrupted.
    bool leaf = machine.leaf_keeps_sp && cur.exact_pc && next->sp == cur.sp;
    if (next->sp <= cur.sp && !cur.signal_trampoline && !leaf) {
      result.stop_reason = {StopReason::Kind::kStackDidNotMoveUp};
      break;
    }
    result.frames.push_back(*next);
  }
  if (result.frames.size() >= options.max_frames) {
    result.stop_reason = {StopReason::Kind::kFrameLimit, options.max_frames};
  }
  return result;
}

}  // namespace coroner
