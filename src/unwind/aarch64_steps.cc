// aarch64's unwinding: AAPCS64's registers, pointer authentication, `bl`
// and `blr`, the link register of a leaf or a bad call, and the kernel's
// signal frame where the trampoline has no CFI.
#include "unwind/machine_steps.h"

namespace coroner {
namespace {

constexpr DwarfAbi kAbi{30, 31, 29, 32};

// AAPCS64's x19-x29.
bool CalleeSaved(int r) { return r >= 19 && r <= 29; }

DwarfRegisters ToDwarf(const Registers& r) {
  DwarfRegisters d;
  for (size_t i = 0; i < 31; ++i) d[i] = r[A64X(i)];
  d[kAbi.sp] = r[Reg::sp];
  return d;
}

// Without the kernel's mask (qemu-user writes none), every bit above a
// 48-bit user address space may be the code's, or a tag.
uint64_t CleanReturnAddress(uint64_t address, std::optional<uint64_t> pac_mask) {
  return address & ~pac_mask.value_or(0xffff000000000000ull);
}

bool FollowsCall(const ModuleMap& modules, uint64_t addr) {
  uint32_t insn = 0;
  if (addr % 4 != 0 || modules.ReadCode(addr - 4, std::as_writable_bytes(std::span(&insn, 1))) != 4) return false;
  return A64CallKind(insn) != A64Call::kNone;
}

// The signal return: `mov x8, #139` (rt_sigreturn); `svc #0`, as the
// kernel's vDSO and qemu-user's trampoline both have it, without CFI.
bool IsSigreturnAt(const ModuleMap& modules, uint64_t pc) {
  uint32_t code[2] = {};
  if (modules.ReadCode(pc, std::as_writable_bytes(std::span(code))) != sizeof code) return false;
  return code[0] == 0xd2801168 && code[1] == 0xd4000001;
}

// Through the trampoline: the kernel's struct rt_sigframe at sp (siginfo,
// then the ucontext, whose sigcontext holds fault_address, x0-x30, sp, pc,
// pstate). The interrupted context is the next frame, at its exact pc.
constexpr uint64_t kSigcontextInFrame = 128 + 176;
std::optional<RawFrame> StepSigreturn(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem) {
  if (!IsSigreturnAt(modules, cur.pc)) return std::nullopt;
  uint64_t regs_at = cur.sp + kSigcontextInFrame + 8;
  RawFrame next;
  for (int r = 0; r < 31; ++r) next.regs[r] = mem.Read64(regs_at + 8 * r);
  auto sp = mem.Read64(regs_at + 31 * 8), pc = mem.Read64(regs_at + 32 * 8);
  if (!sp || !pc) return std::nullopt;
  next.regs[kAbi.sp] = next.sp = *sp;
  next.pc = *pc;
  next.trust = FrameTrust::kSignal;
  next.exact_pc = true;
  return next;
}

// The caller where x30 says: the frame as it is, at the return address.
std::optional<RawFrame> CallerFromLinkRegister(const RawFrame& cur, const ModuleMap& modules,
                                               std::optional<uint64_t> pac_mask) {
  if (!cur.regs[30]) return std::nullopt;
  uint64_t ra = CleanReturnAddress(*cur.regs[30], pac_mask);
  if (!LooksLikeReturnAddress(modules, ra)) return std::nullopt;
  RawFrame next = cur;
  next.pc = ra;
  next.trust = FrameTrust::kFp;
  next.exact_pc = false;
  next.cfa.reset();
  return next;
}

// `bl` put the return address in x30, and a function that saves it does so
// with its frame record (`stp x29, x30, [sp, #-n]!`, after a `paciasp` or
// `bti`). At the crash, before that store or in a function that never makes
// one (a leaf), the return address is still in x30.
std::optional<RawFrame> StepPrologue(const RawFrame& cur, const ModuleMap& modules, StackMemory&,
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
  return CallerFromLinkRegister(cur, modules, pac_mask);
}

// A `blr` to NULL or to data: the caller is where x30 returns to.
std::optional<RawFrame> StepBadCall(const RawFrame& cur, const ModuleMap& modules, std::optional<uint64_t> pac_mask) {
  return CallerFromLinkRegister(cur, modules, pac_mask);
}

}  // namespace

A64Call A64CallKind(uint32_t insn) {
  if ((insn & 0xfc000000) == 0x94000000) return A64Call::kDirect;  // bl imm26
  if ((insn & 0xfffffc1f) == 0xd63f0000 ||                          // blr xn
      (insn & 0xfffff800) == 0xd63f0800 ||                          // blraaz, blrabz
      (insn & 0xfffff800) == 0xd73f0800)                            // blraa, blrab
    return A64Call::kIndirect;
  return A64Call::kNone;
}

const UnwindMachine kAarch64Unwind{kAbi,          CalleeSaved,  ToDwarf,     CleanReturnAddress, FollowsCall,
                                   StepSigreturn, StepPrologue, StepBadCall, true};

}  // namespace coroner
