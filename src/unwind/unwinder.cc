#include "unwind/unwinder.h"

#include <dwarf.h>

#include <cstdlib>
#include <memory>

#include "unwind/dwarf_expression.h"

namespace coroner {
namespace {

constexpr DwarfAbi kX86Abi{16, 7, 6, 17};
constexpr DwarfAbi kA64Abi{30, 31, 29, 32};

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

// The registers a function must give back as it found them: the SysV ABI's
// rbx, rbp, r12-r15; AAPCS64's x19-x29.
bool IsCalleeSaved(Arch arch, int r) {
  if (arch == Arch::kAarch64) return r >= 19 && r <= 29;
  return r == 3 || r == 6 || (r >= 12 && r <= 15);
}

// aarch64's signal return: `mov x8, #139` (rt_sigreturn); `svc #0`, as the
// kernel's vDSO and qemu-user's trampoline both have it, without CFI.
bool IsA64SigreturnAt(const ModuleMap& modules, uint64_t pc) {
  uint32_t code[2] = {};
  if (modules.ReadCode(pc, std::as_writable_bytes(std::span(code))) != sizeof code) return false;
  return code[0] == 0xd2801168 && code[1] == 0xd4000001;
}

// One step by CFI. nullopt when the module has no CFI for the pc or a rule
// cannot be evaluated.
std::optional<RawFrame> StepCfi(RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                bool& end_of_stack, std::optional<uint64_t> pac_mask) {
  const Arch arch = modules.arch();
  const DwarfAbi& abi = DwarfAbiOf(arch);
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
      if (rops == nullptr || IsCalleeSaved(arch, r)) next.regs[r] = cur.regs[r];
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
  next.pc = StripPointerAuthentication(arch, *return_address, pac_mask);
  next.regs[abi.ra] = next.pc;
  next.sp = *next.regs[abi.sp];
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
std::optional<RawFrame> StepX86Prologue(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem) {
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
  std::optional<uint64_t> rbp = cur.regs[kX86Abi.fp];
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
  next.regs[kX86Abi.sp] = next.sp;
  next.regs[kX86Abi.fp] = rbp;
  next.regs[kX86Abi.ra] = next.pc;
  next.trust = FrameTrust::kFp;
  next.exact_pc = false;
  return next;
}

// aarch64's: `bl` put the return address in x30, and a function that saves
// it does so with its frame record (`stp x29, x30, [sp, #-n]!`, after a
// `paciasp` or `bti`). At the crash, before that store or in a function
// that never makes one (a leaf), the return address is still in x30.
std::optional<RawFrame> StepA64Prologue(const RawFrame& cur, const ModuleMap& modules,
                                        std::optional<uint64_t> pac_mask) {
  if (!cur.exact_pc || !cur.regs[30]) return std::nullopt;
  PcSymbol sym = modules.Symbolize(cur.pc);
  if (sym.symbol.empty() || sym.symbol_offset > 4096) return std::nullopt;
  uint64_t start = cur.pc - sym.symbol_offset;
  uint32_t code[4] = {};
  size_t n = modules.ReadCode(start, std::as_writable_bytes(std::span(code))) / 4;
  std::optional<uint64_t> record_at;  // the offset of the frame record's store
  for (size_t i = 0; i < n; ++i) {
    // stp x29, x30, [sp, #imm]! (pre-index) or [sp, #imm]
    if ((code[i] & 0xffc07fff) == 0xa9807bfd || (code[i] & 0xffc07fff) == 0xa9007bfd) {
      record_at = 4 * i;
      break;
    }
  }
  if (record_at && cur.pc > start + *record_at) return std::nullopt;  // saved: the x29 chain applies
  uint64_t ra = StripPointerAuthentication(Arch::kAarch64, *cur.regs[30], pac_mask);
  if (!LooksLikeReturnAddress(modules, ra)) return std::nullopt;
  RawFrame next = cur;
  next.pc = ra;
  next.trust = FrameTrust::kFp;
  next.exact_pc = false;
  next.cfa.reset();
  return next;
}

std::optional<RawFrame> StepFramePointer(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                         std::optional<uint64_t> pac_mask) {
  const Arch arch = modules.arch();
  const DwarfAbi& abi = DwarfAbiOf(arch);
  if (arch == Arch::kAarch64) {
    if (auto p = StepA64Prologue(cur, modules, pac_mask)) return p;
  } else if (auto p = StepX86Prologue(cur, modules, mem)) {
    return p;
  }
  // The frame record: [fp] the caller's fp, [fp + 8] the return address,
  // on both machines.
  auto fp = cur.regs[abi.fp];
  if (!fp || *fp % 8 != 0 || *fp < cur.sp || *fp - cur.sp > (64u << 20)) return std::nullopt;
  auto saved_fp = mem.Read64(*fp);
  auto ra = mem.Read64(*fp + 8);
  if (!saved_fp || !ra) return std::nullopt;
  uint64_t pc = StripPointerAuthentication(arch, *ra, pac_mask);
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
  const Arch arch = modules.arch();
  const DwarfAbi& abi = DwarfAbiOf(arch);
  for (size_t i = include_sp ? 0 : 1; i < words; ++i) {
    uint64_t slot = cur.sp + 8 * i;
    auto w = mem.Read64(slot);
    if (!w) return std::nullopt;  // ran off the stack's present bytes
    uint64_t pc = StripPointerAuthentication(arch, *w, pac_mask);
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

// Through aarch64's signal return trampoline: the kernel's struct
// rt_sigframe at sp (siginfo, then the ucontext, whose sigcontext holds
// fault_address, x0-x30, sp, pc, pstate). The interrupted context is the
// next frame, at its exact pc.
constexpr uint64_t kA64SigcontextInFrame = 128 + 176;
std::optional<RawFrame> StepA64Sigreturn(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem) {
  if (!IsA64SigreturnAt(modules, cur.pc)) return std::nullopt;
  uint64_t regs_at = cur.sp + kA64SigcontextInFrame + 8;
  RawFrame next;
  for (int r = 0; r < 31; ++r) next.regs[r] = mem.Read64(regs_at + 8 * r);
  auto sp = mem.Read64(regs_at + 31 * 8), pc = mem.Read64(regs_at + 32 * 8);
  if (!sp || !pc) return std::nullopt;
  next.regs[kA64Abi.sp] = next.sp = *sp;
  next.pc = *pc;
  next.trust = FrameTrust::kSignal;
  next.exact_pc = true;
  return next;
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

const DwarfAbi& DwarfAbiOf(Arch arch) { return arch == Arch::kAarch64 ? kA64Abi : kX86Abi; }

uint64_t StripPointerAuthentication(Arch arch, uint64_t address, std::optional<uint64_t> pac_mask) {
  if (arch != Arch::kAarch64) return address;
  // Without the kernel's mask (qemu-user writes none), every bit above a
  // 48-bit user address space may be the code's, or a tag.
  return address & ~pac_mask.value_or(0xffff000000000000ull);
}

DwarfRegisters ToDwarfRegisters(const Registers& r) {
  DwarfRegisters d;
  if (r.arch == Arch::kAarch64) {
    for (size_t i = 0; i < 31; ++i) d[i] = r[A64X(i)];
    d[kA64Abi.sp] = r[Reg::sp];
    return d;
  }
  const Reg order[] = {Reg::rax, Reg::rdx, Reg::rcx, Reg::rbx, Reg::rsi, Reg::rdi, Reg::rbp, Reg::rsp, Reg::r8,
                       Reg::r9,  Reg::r10, Reg::r11, Reg::r12, Reg::r13, Reg::r14, Reg::r15, Reg::rip};
  for (size_t i = 0; i < 17; ++i) d[i] = r[order[i]];
  return d;
}

A64Call A64CallKind(uint32_t insn) {
  if ((insn & 0xfc000000) == 0x94000000) return A64Call::kDirect;  // bl imm26
  if ((insn & 0xfffffc1f) == 0xd63f0000 ||                          // blr xn
      (insn & 0xfffff800) == 0xd63f0800 ||                          // blraaz, blrabz
      (insn & 0xfffff800) == 0xd73f0800)                            // blraa, blrab
    return A64Call::kIndirect;
  return A64Call::kNone;
}

bool LooksLikeReturnAddress(const ModuleMap& modules, uint64_t addr) {
  if (addr < 8 || !modules.IsCode(addr)) return false;
  if (modules.arch() == Arch::kAarch64) {
    uint32_t insn = 0;
    if (addr % 4 != 0 || modules.ReadCode(addr - 4, std::as_writable_bytes(std::span(&insn, 1))) != 4) return false;
    return A64CallKind(insn) != A64Call::kNone;
  }
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

  const bool a64 = modules.arch() == Arch::kAarch64;
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
    if (a64 && pc_is_code && (next = StepA64Sigreturn(cur, modules, mem))) cur.signal_trampoline = true;
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
    if (!next && a64 && top_frame && !pc_is_code && cur.regs[30]) {
      // A `blr` to NULL or to data: the caller is where x30 returns to.
      uint64_t ra = StripPointerAuthentication(Arch::kAarch64, *cur.regs[30], pac_mask);
      if (LooksLikeReturnAddress(modules, ra)) {
        next = cur;
        next->pc = ra;
        next->trust = FrameTrust::kFp;
        next->exact_pc = false;
        next->cfa.reset();
      }
    }
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
    bool leaf = a64 && cur.exact_pc && next->sp == cur.sp;
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
