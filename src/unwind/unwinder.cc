#include "unwind/unwinder.h"

#include <dwarf.h>

#include <cstdlib>
#include <memory>

#include "unwind/dwarf_expression.h"

namespace coroner {
namespace {

constexpr int kRaColumn = 16;
constexpr int kRsp = 7;
constexpr int kRbp = 6;

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

bool IsCalleeSaved(int dwarf_reg) { return dwarf_reg == 3 || dwarf_reg == 6 || (dwarf_reg >= 12 && dwarf_reg <= 15); }

// One step by CFI. nullopt when the module has no CFI for the pc or a rule
// cannot be evaluated.
std::optional<RawFrame> StepCfi(RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                bool& end_of_stack) {
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
  if (ra < 0 || ra > kRaColumn) ra = kRaColumn;

  RawFrame next;
  for (int r = 0; r <= kRaColumn; ++r) {
    Dwarf_Op mem_ops[3];
    Dwarf_Op* rops = nullptr;
    size_t rn = 0;
    if (dwarf_frame_register(frame.get(), r, mem_ops, &rops, &rn) != 0) continue;
    if (rn == 0) {
      // null ops: same value; ops_mem: undefined. libdw reports a register
      // the CFI says nothing about as undefined; for the registers the SysV
      // ABI makes callee-saved (rbx, rbp, r12-r15) no rule means the
      // function left them alone, as gdb also takes it.
      if (rops == nullptr || IsCalleeSaved(r)) next.regs[r] = cur.regs[r];
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
  // The caller's stack pointer is the CFA (the x86_64 default rule), unless
  // the CFI restores it from memory (signal frames).
  if (!next.regs[kRsp]) next.regs[kRsp] = *cfa;
  next.pc = *return_address;
  next.regs[kRaColumn] = next.pc;
  next.sp = *next.regs[kRsp];
  next.trust = cur.signal_trampoline ? FrameTrust::kSignal : FrameTrust::kCfi;
  // After a signal trampoline the pc is the interrupted instruction itself.
  next.exact_pc = signal;
  if (signal) next.trust = FrameTrust::kSignal;
  return next;
}

// Without CFI, at an exact pc (the crash itself), the function's prologue
// says where the return address is (what gdb's prologue analyzer does): not
// yet pushed rbp, or no frame at all (a leaf), means it is at [rsp]; between
// `push %rbp` and `mov %rsp,%rbp` it is at [rsp+8].
std::optional<RawFrame> StepPrologue(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem) {
  if (!cur.exact_pc) return std::nullopt;
  PcSymbol sym = modules.Symbolize(cur.pc);
  if (sym.symbol.empty() || sym.symbol_offset > 4096) return std::nullopt;
  uint64_t start = cur.pc - sym.symbol_offset;
  uint8_t code[12] = {};
  if (modules.ReadCode(start, std::as_writable_bytes(std::span(code))) < sizeof code) return std::nullopt;
  size_t p = (code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa) ? 4 : 0;  // endbr64
  bool push = code[p] == 0x55;
  bool mov = push && code[p + 1] == 0x48 && ((code[p + 2] == 0x89 && code[p + 3] == 0xe5) ||
                                             (code[p + 2] == 0x8b && code[p + 3] == 0xec));
  uint64_t ra_slot;
  std::optional<uint64_t> rbp = cur.regs[kRbp];
  if (!push || cur.pc <= start + p) {
    ra_slot = cur.sp;  // a frameless function, or before its push
  } else if (mov && cur.pc <= start + p + 1) {
    ra_slot = cur.sp + 8;  // pushed rbp, not yet moved rsp into it
    rbp = mem.Read64(cur.sp);
  } else {
    return std::nullopt;  // the frame is set up: the rbp chain applies
  }
  auto ra = mem.Read64(ra_slot);
  if (!ra || !LooksLikeReturnAddress(modules, *ra)) return std::nullopt;
  RawFrame next;
  next.pc = *ra;
  next.sp = ra_slot + 8;
  next.regs[kRsp] = next.sp;
  next.regs[kRbp] = rbp;
  next.regs[kRaColumn] = next.pc;
  next.trust = FrameTrust::kFp;
  next.exact_pc = false;
  return next;
}

std::optional<RawFrame> StepFramePointer(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem) {
  if (auto p = StepPrologue(cur, modules, mem)) return p;
  auto rbp = cur.regs[kRbp];
  if (!rbp || *rbp % 8 != 0 || *rbp < cur.sp || *rbp - cur.sp > (64u << 20)) return std::nullopt;
  auto saved_rbp = mem.Read64(*rbp);
  auto ra = mem.Read64(*rbp + 8);
  if (!saved_rbp || !ra || !modules.IsCode(*ra)) return std::nullopt;
  RawFrame next;
  next.pc = *ra;
  next.sp = *rbp + 16;
  next.regs[kRsp] = next.sp;
  next.regs[kRbp] = *saved_rbp;
  next.regs[kRaColumn] = next.pc;
  // Callee-saved registers other than rbp are not known without CFI.
  next.trust = FrameTrust::kFp;
  next.exact_pc = false;
  return next;
}

std::optional<RawFrame> StepScan(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                 size_t words, bool include_sp) {
  for (size_t i = include_sp ? 0 : 1; i < words; ++i) {
    uint64_t slot = cur.sp + 8 * i;
    auto w = mem.Read64(slot);
    if (!w) return std::nullopt;  // ran off the stack's present bytes
    if (!LooksLikeReturnAddress(modules, *w)) continue;
    RawFrame next;
    next.pc = *w;
    next.sp = slot + 8;
    next.regs[kRsp] = next.sp;
    next.regs[kRbp] = cur.regs[kRbp];  // may still be a valid frame pointer
    next.regs[kRaColumn] = next.pc;
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

DwarfRegisters ToDwarfRegisters(const Registers& r) {
  DwarfRegisters d;
  const Reg order[] = {Reg::rax, Reg::rdx, Reg::rcx, Reg::rbx, Reg::rsi, Reg::rdi, Reg::rbp, Reg::rsp, Reg::r8,
                       Reg::r9,  Reg::r10, Reg::r11, Reg::r12, Reg::r13, Reg::r14, Reg::r15, Reg::rip};
  for (size_t i = 0; i < 17; ++i) d[i] = r[order[i]];
  return d;
}

bool LooksLikeReturnAddress(const ModuleMap& modules, uint64_t addr) {
  if (addr < 8 || !modules.IsCode(addr)) return false;
  std::byte b[8];
  if (modules.ReadCode(addr - 8, b) != 8) return false;
  auto at = [&](int back) { return static_cast<uint8_t>(b[8 - back]); };
  if (at(5) == 0xe8) return true;  // call rel32
  // call r/m64: ff /2, 2 to 7 bytes (with an optional REX prefix).
  for (int n = 2; n <= 7; ++n) {
    if (at(n) == 0xff && ((at(n - 1) >> 3) & 7) == 2) {
      uint8_t modrm = at(n - 1);
      int mod = modrm >> 6, rm = modrm & 7;
      int len = 2;
      if (mod != 3 && rm == 4) ++len;  // SIB
      if (mod == 1) len += 1;
      else if (mod == 2 || (mod == 0 && rm == 5)) len += 4;
      else if (mod == 0 && rm == 4 && (at(n - 2) & 7) == 5) len += 4;  // SIB with no base
      if (len == n) return true;
    }
  }
  return false;
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

  while (result.frames.size() < options.max_frames) {
    RawFrame& cur = result.frames.back();
    cur.signal_trampoline = false;
    std::optional<RawFrame> next;
    bool end_of_stack = false;
    bool pc_is_code = modules.IsCode(cur.pc);
    if (pc_is_code) {
      next = StepCfi(cur, modules, mem, end_of_stack);
      if (next && next->exact_pc) {
        // The frame just stepped through was the signal trampoline.
        cur.signal_trampoline = true;
      }
      if (end_of_stack) {
        result.stop_reason = {StopReason::Kind::kEndOfCfi};
        break;
      }
      if (!next) next = StepFramePointer(cur, modules, mem);
    }
    if (!next) {
      // pc 0 or in data, or nothing else worked: look for a return address,
      // starting at [rsp] for the top frame (a call through NULL left it there).
      bool top_frame = result.frames.size() == 1;
      next = StepScan(cur, modules, mem, options.scan_words, top_frame || !pc_is_code);
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
    if (next->sp <= cur.sp && !cur.signal_trampoline) {
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
