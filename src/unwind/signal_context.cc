#include "unwind/signal_context.h"

#include <csignal>

#include "core/signals.h"

namespace coroner {
namespace {

// struct ucontext (x86_64): uc_flags, uc_link, uc_stack (24 bytes), then
// uc_mcontext (struct sigcontext, 256 bytes), uc_sigmask (8): 304 bytes, and
// the siginfo follows it in struct rt_sigframe.
constexpr uint64_t kMcontext = 40;
constexpr uint64_t kSiginfo = 304;
// After the 18 general registers: cs/gs/fs/ss, err, trapno, oldmask, cr2.
constexpr uint64_t kSegments = kMcontext + 18 * 8;
constexpr uint64_t kTrapno = kSegments + 16, kCr2 = kSegments + 32;
constexpr uint64_t kPageFault = 14;  // #PF

// The signal a CPU exception raises, from the trap number the kernel saved
// in the sigcontext (used when the handler was not SA_SIGINFO, so the kernel
// wrote no siginfo into the frame). For a page fault the kernel's si_code
// says whether any mapping holds the address (SEGV_ACCERR) or none does
// (SEGV_MAPERR); the error code's "page present" bit does not say that (a
// write to a PROT_READ page never touched is "not present" and ACCERR), so
// the core's mappings decide.
std::optional<SignalInfo> FromTrap(uint64_t trapno, uint64_t cr2, uint64_t rip, const Memory& mappings) {
  SignalInfo s;
  s.source = SignalInfo::Source::kSigcontext;
  switch (trapno) {
    case kPageFault:
      s.signo = SIGSEGV;
      s.code = mappings.Find(cr2) ? SEGV_ACCERR : SEGV_MAPERR;
      s.fault_address = cr2;
      return s;
    case 13:  // #GP: non-canonical address and the like
      s.signo = SIGSEGV;
      s.code = 0x80;  // SI_KERNEL
      return s;
    case 0:  // #DE
      s.signo = SIGFPE;
      s.code = FPE_INTDIV;
      s.fault_address = rip;
      return s;
    case 6:  // #UD
      s.signo = SIGILL;
      s.code = ILL_ILLOPN;
      s.fault_address = rip;
      return s;
    default:
      return std::nullopt;
  }
}

// Whether a siginfo in the frame is the kernel's for the trap the
// sigcontext records: the same signal (a page fault may be a SIGBUS: a
// mapped file's page past its end) at the same address.
bool NamesTheTrap(const SignalInfo& s, const SignalInfo& trap, uint64_t trapno) {
  bool same_signal = s.signo == trap.signo || (trapno == kPageFault && s.signo == SIGBUS);
  return same_signal && (!trap.fault_address || s.fault_address == trap.fault_address);
}

}  // namespace

std::optional<FaultContext> ReadSignalFrame(const Core& core, const Thread& thread, uint64_t ucontext,
                                            StackMemory& memory) {
  // sigcontext's general registers, in its order.
  static const Reg kOrder[] = {Reg::r8,  Reg::r9,  Reg::r10, Reg::r11, Reg::r12, Reg::r13,
                               Reg::r14, Reg::r15, Reg::rdi, Reg::rsi, Reg::rbp, Reg::rbx,
                               Reg::rdx, Reg::rax, Reg::rcx, Reg::rsp, Reg::rip, Reg::eflags};
  FaultContext fc;
  fc.frame_address = ucontext;
  fc.registers = thread.registers;  // fs_base, gs_base, orig_rax: the thread's own
  for (size_t i = 0; i < std::size(kOrder); ++i) {
    auto v = memory.Read64(ucontext + kMcontext + 8 * i);
    if (!v) return std::nullopt;
    fc.registers[kOrder[i]] = *v;
  }
  // cs, gs, fs, ss as four 16-bit fields.
  if (auto seg = memory.Read64(ucontext + kMcontext + 8 * std::size(kOrder))) {
    fc.registers[Reg::cs] = *seg & 0xffff;
    fc.registers[Reg::gs] = (*seg >> 16) & 0xffff;
    fc.registers[Reg::fs] = (*seg >> 32) & 0xffff;
    fc.registers[Reg::ss] = (*seg >> 48) & 0xffff;
  }
  // The kernel copies the siginfo into the frame only for SA_SIGINFO
  // handlers; otherwise those bytes are whatever the stack held. A siginfo
  // is believed when it names the fault the sigcontext's trap describes,
  // and its si_code is the kernel's word on the fault.
  auto trapno = memory.Read64(ucontext + kTrapno);
  auto cr2 = memory.Read64(ucontext + kCr2);
  std::optional<SignalInfo> trap;
  if (trapno && cr2) trap = FromTrap(*trapno, *cr2, fc.registers[Reg::rip], core.memory());
  auto w0 = memory.Read64(ucontext + kSiginfo);       // si_signo, si_errno
  auto w1 = memory.Read64(ucontext + kSiginfo + 8);   // si_code, padding
  auto w2 = memory.Read64(ucontext + kSiginfo + 16);  // si_addr / si_pid, si_uid
  if (w0 && w1 && w2) {
    SignalInfo s;
    s.source = SignalInfo::Source::kSignalFrame;
    s.signo = static_cast<int32_t>(*w0 & 0xffffffff);
    s.err = static_cast<int32_t>(*w0 >> 32);
    s.code = static_cast<int32_t>(*w1 & 0xffffffff);
    if (SignalHasFaultAddress(s.signo, s.code)) s.fault_address = *w2;
    if (SignalHasSender(s.code)) {
      s.sender_pid = static_cast<int32_t>(*w2 & 0xffffffff);
      s.sender_uid = static_cast<uint32_t>(*w2 >> 32);
    }
    bool plausible = s.signo > 0 && s.signo <= 64 && SignalCodeName(s.signo, s.code).has_value();
    if (plausible && (!trap || NamesTheTrap(s, *trap, *trapno))) {
      fc.signal = s;
      return fc;
    }
  }
  if (!trap) return std::nullopt;
  fc.signal = *trap;
  return fc;
}

std::optional<FaultContext> RecoverFaultContext(const Core& core, const Backtrace& crashing,
                                                StackMemory& memory) {
  if (!core.signal() || core.signal()->code > 0 || core.threads().empty()) return std::nullopt;
  const Thread& thread = core.threads()[core.crashing_thread()];
  for (const Frame& f : crashing.frames) {
    if (!f.signal_trampoline) continue;
    auto fc = ReadSignalFrame(core, thread, f.sp, memory);
    if (fc && fc->signal.code > 0 && SignalHasFaultAddress(fc->signal.signo, fc->signal.code)) return fc;
  }
  return std::nullopt;
}

}  // namespace coroner
