#include "unwind/signal_context.h"

#include <csignal>

#include "core/byte_view.h"

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

// The siginfo a signal frame holds at `at`, when it is a plausible one: the
// kernel copies it only for SA_SIGINFO handlers, and otherwise those bytes
// are whatever the stack held.
std::optional<SignalInfo> FrameSiginfo(StackMemory& memory, uint64_t at) {
  auto w0 = memory.Read64(at);       // si_signo, si_errno
  auto w1 = memory.Read64(at + 8);   // si_code, padding
  auto w2 = memory.Read64(at + 16);  // si_addr / si_pid, si_uid
  if (!w0 || !w1 || !w2) return std::nullopt;
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
  return plausible ? std::optional(s) : std::nullopt;
}

// aarch64's struct rt_sigframe: siginfo (128 bytes), then the ucontext
// (uc_flags, uc_link, uc_stack, uc_sigmask, padding to 128 bytes of sigset,
// then uc_mcontext at offset 176): struct sigcontext is fault_address,
// regs[31], sp, pc, pstate, then the __reserved records (16-byte aligned).
constexpr uint64_t kA64Sigcontext = 128 + 176;
constexpr uint64_t kA64Reserved = kA64Sigcontext + 288;
constexpr uint64_t kA64ReservedSize = 4096;
constexpr uint32_t kEsrMagic = 0x45535201;

}  // namespace

std::optional<SignalInfo> SignalFromEsr(uint64_t esr, uint64_t fault_address, uint64_t pc, bool mapped) {
  SignalInfo s;
  s.source = SignalInfo::Source::kSigcontext;
  const uint32_t ec = static_cast<uint32_t>(esr >> 26) & 0x3f, fsc = esr & 0x3f;
  switch (ec) {
    case 0x24:  // data abort from EL0
    case 0x20:  // instruction abort from EL0
      if (fsc == 0x21) {  // alignment fault
        s.signo = SIGBUS, s.code = BUS_ADRALN;
      } else if (fsc == 0x11) {  // synchronous tag check fault (MTE)
        s.signo = SIGSEGV, s.code = 9;  // SEGV_MTESERR
      } else if (fsc == 0x10 || fsc == 0x18) {  // synchronous external abort, parity or ECC error
        s.signo = SIGBUS, s.code = BUS_OBJERR;
      } else if ((fsc & 0x3c) == 0x04) {  // translation fault: the mappings decide
        s.signo = SIGSEGV, s.code = mapped ? SEGV_ACCERR : SEGV_MAPERR;
      } else {
        s.signo = SIGSEGV;
        s.code = (fsc & 0x3c) == 0x0c || (fsc & 0x3c) == 0x08 ? SEGV_ACCERR : SEGV_MAPERR;
      }
      s.fault_address = fault_address;
      return s;
    case 0x22:  // pc alignment
      s.signo = SIGBUS, s.code = BUS_ADRALN, s.fault_address = pc;
      return s;
    case 0x26:  // sp alignment
      s.signo = SIGBUS, s.code = BUS_ADRALN, s.fault_address = fault_address;
      return s;
    case 0x00:  // unknown reason: an undefined instruction
    case 0x0e:  // illegal execution state
      s.signo = SIGILL, s.code = ILL_ILLOPC, s.fault_address = pc;
      return s;
    case 0x3c:  // brk
      s.signo = SIGTRAP, s.code = TRAP_BRKPT, s.fault_address = pc;
      return s;
    default:
      return std::nullopt;
  }
}

namespace {

std::optional<FaultContext> ReadA64SignalFrame(const Core& core, const Thread& thread, uint64_t frame,
                                               StackMemory& memory) {
  FaultContext fc;
  fc.frame_address = frame;
  fc.registers = thread.registers;
  for (size_t i = 0; i < kA64RegCount; ++i) {  // x0-x30, sp, pc, pstate
    auto v = memory.Read64(frame + kA64Sigcontext + 8 + 8 * i);
    if (!v) return std::nullopt;
    fc.registers[A64X(i)] = *v;
  }
  const uint64_t fault_address = memory.Read64(frame + kA64Sigcontext).value_or(0);
  // The records: {magic, size}, until a zero magic; bounded by __reserved.
  for (uint64_t at = 0; at + 16 <= kA64ReservedSize;) {
    auto head = memory.Read64(frame + kA64Reserved + at);
    if (!head) break;
    uint32_t magic = static_cast<uint32_t>(*head), size = static_cast<uint32_t>(*head >> 32);
    if (magic == 0 || size < 8 || size % 16 != 0 || size > kA64ReservedSize - at) break;
    if (magic == kEsrMagic) fc.esr = memory.Read64(frame + kA64Reserved + at + 8);
    at += size;
  }
  std::optional<SignalInfo> from_esr;
  if (fc.esr) from_esr = SignalFromEsr(*fc.esr, fault_address, fc.registers.pc(), core.memory().Find(fault_address));
  // The siginfo is copied only for SA_SIGINFO handlers: believed when it is
  // a plausible signal, and the ESR's when the kernel saved one.
  if (auto s = FrameSiginfo(memory, frame); s && (!from_esr || from_esr->signo == s->signo)) {
    fc.signal = *s;
    return fc;
  }
  if (!from_esr && core.signal() && core.signal()->signo == SIGSEGV) {
    // No siginfo (a handler without SA_SIGINFO) and no syndrome (qemu-user
    // saves none): the SIGSEGV that was re-raised, at the sigcontext's
    // fault_address, its code from the core's mappings.
    from_esr = SignalInfo{};
    from_esr->source = SignalInfo::Source::kSigcontext;
    from_esr->signo = SIGSEGV;
    from_esr->code = core.memory().Find(fault_address) ? SEGV_ACCERR : SEGV_MAPERR;
    from_esr->fault_address = fault_address;
  }
  if (!from_esr) return std::nullopt;
  fc.signal = *from_esr;
  return fc;
}

// Whether the thread stopped right after asking the kernel to send a signal
// (a system call instruction just before pc, and kill, tkill, tgkill,
// rt_sigqueueinfo or rt_tgsigqueueinfo the number its register holds), for
// a core whose signal has no siginfo to say it was sent.
bool SendingASignal(const Thread& t, const Frame& top) {
  const bool a64 = t.registers.arch == Arch::kAarch64;
  std::byte code[4] = {};
  const size_t length = a64 ? 4 : 2;
  const uint64_t pc = t.registers.pc();
  if (!top.module || !top.module->image || pc < length ||
      top.module->image->ReadCode(top.module->ToLink(pc - length), std::span(code, length)) != length)
    return false;
  const bool after_syscall = a64 ? std::to_integer<uint32_t>(code[0]) == 0x01 && std::to_integer<uint32_t>(code[1]) == 0 &&
                                       std::to_integer<uint32_t>(code[2]) == 0 && std::to_integer<uint32_t>(code[3]) == 0xd4
                                 : code[0] == std::byte{0x0f} && code[1] == std::byte{0x05};
  if (!after_syscall) return false;
  if (a64) {
    uint64_t nr = t.registers[Reg::x8];
    return nr == 129 || nr == 130 || nr == 131 || nr == 138 || nr == 240;
  }
  uint64_t nr = t.registers[Reg::orig_rax];
  return nr == 62 || nr == 200 || nr == 234 || nr == 129 || nr == 297;
}

}  // namespace

std::string EsrDescription(uint64_t esr) {
  const uint32_t ec = static_cast<uint32_t>(esr >> 26) & 0x3f, fsc = esr & 0x3f;
  auto abort = [&](const char* what) {
    std::string kind;
    switch (fsc & 0x3c) {
      case 0x04: kind = "translation fault"; break;
      case 0x08: kind = "access flag fault"; break;
      case 0x0c: kind = "permission fault"; break;
      default:
        kind = fsc == 0x21 ? "alignment fault" : fsc == 0x11 ? "tag check fault (MTE)" : "fault status " + Hex(fsc);
    }
    if ((fsc & 0x3c) >= 0x04 && (fsc & 0x3c) <= 0x0c) kind += " (level " + std::to_string(fsc & 3) + ")";
    std::string out = std::string(what) + ", " + kind;
    if (ec == 0x24) out += (esr & (1u << 6)) ? ", write" : ", read";  // WnR
    return out;
  };
  switch (ec) {
    case 0x24: return abort("data abort");
    case 0x20: return abort("instruction abort");
    case 0x22: return "PC alignment fault";
    case 0x26: return "SP alignment fault";
    case 0x00: return "undefined instruction";
    case 0x0e: return "illegal execution state";
    case 0x3c: return "brk " + Hex(esr & 0xffff);
    case 0x15: return "svc";
    default: return {};
  }
}

std::optional<FaultContext> ReadSignalFrame(const Core& core, const Thread& thread, uint64_t ucontext,
                                            StackMemory& memory) {
  if (core.arch() == Arch::kAarch64) return ReadA64SignalFrame(core, thread, ucontext, memory);
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
  if (auto s = FrameSiginfo(memory, ucontext + kSiginfo); s && (!trap || NamesTheTrap(*s, *trap, *trapno))) {
    fc.signal = *s;
    return fc;
  }
  if (!trap) return std::nullopt;
  fc.signal = *trap;
  return fc;
}

std::optional<FaultContext> RecoverFaultContext(const Core& core, const Backtrace& crashing,
                                                StackMemory& memory) {
  if (!core.signal() || core.signal()->code > 0 || core.threads().empty()) return std::nullopt;
  const Thread& thread = core.threads()[core.crashing_thread()];
  // A core without siginfo (qemu-user's) says no code: sent only when the
  // thread was sending it.
  if (core.signal()->source == SignalInfo::Source::kPrstatus &&
      (crashing.frames.empty() || !SendingASignal(thread, crashing.frames[0])))
    return std::nullopt;
  for (const Frame& f : crashing.frames) {
    if (!f.signal_trampoline) continue;
    auto fc = ReadSignalFrame(core, thread, f.sp, memory);
    if (fc && fc->signal.code > 0 && SignalHasFaultAddress(fc->signal.signo, fc->signal.code)) return fc;
  }
  return std::nullopt;
}

}  // namespace coroner
