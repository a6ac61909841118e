// The diagnosis rules on synthetic cores, one fact at a time: a code page
// holding known instructions, a stack page holding known words, the
// registers and the signal set by hand. Each case is the smallest state a
// rule decides from, so a rule that stops looking at its fact fails here
// without gdb or a crasher (the zoo tests check the same rules on real
// cores).
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/byte_view.h"
#include "core/core.h"
#include "processor/processor.h"
#include "report/diagnosis_words.h"
#include "symbolize/symbol_provider.h"
#include "unit/synth_machine.h"

namespace coroner::testing {
namespace {

Diagnosis Diagnose(const Machine& m) {
  auto core = OpenMachine(m);
  if (!core) return {};
  static FileSymbolProvider symbols{SymbolOptions{{}, {}, false, {}}};
  ProcessOptions o;
  o.depth = AnalysisDepth::kFull;
  CrashAnalysis a = ProcessCore(*core, symbols, o);
  EXPECT_TRUE(a.diagnosis.has_value());
  return a.diagnosis ? *a.diagnosis : Diagnosis{};
}

std::string Name(const Diagnosis& d) { return std::string(SyndromeName(d.syndrome)); }

// The first fact of kind T the rules left, or null.
template <class T>
const T* Fact(const Diagnosis& d) {
  for (const Evidence& e : d.evidence)
    if (const T* f = std::get_if<T>(&e)) return f;
  return nullptr;
}

std::string NullRegister(const Diagnosis& d) { return d.null_register ? SizedRegName(*d.null_register) : ""; }

TEST(DiagnosisRules, ALoadThroughNullIsANullDerefNamingTheRegister) {
  Machine m;
  m.rip = kCode + 0x20;
  m.code_bytes[m.rip] = {0x48, 0x8b, 0x00};  // mov (%rax),%rax
  m.regs[Reg::rax] = 0;
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kNullDeref) << Name(d);
  EXPECT_EQ(NullRegister(d), "rax");
  const auto* null = Fact<evidence::NullBaseRegister>(d);
  ASSERT_TRUE(null);
  EXPECT_EQ(null->reg, (SizedReg{Reg::rax, 64}));
  EXPECT_EQ(null->value, 0u);
  // The code page is executable memory no module or file holds: JIT code,
  // named as such, not "?+0x0".
  EXPECT_EQ(null->where, "JIT code at " + Hex(m.rip));
  EXPECT_NE(Summary(d).find("JIT code at " + Hex(m.rip)), std::string::npos) << Summary(d);
  // A small offset from NULL is still NULL's page.
  m.code_bytes[m.rip] = {0x48, 0x8b, 0x40, 0x10};  // mov 0x10(%rax),%rax
  m.fault_address = 0x10;
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kNullDeref);
}

// An address-size prefix (0x67) makes the base a 32-bit register: r8d or
// eip. Such a base once had no value and was dereferenced anyway (UB).
TEST(DiagnosisRules, AThirtyTwoBitBaseRegisterIsNamed) {
  Machine m;
  m.rip = kCode + 0x20;
  m.code_bytes[m.rip] = {0x67, 0x41, 0x8b, 0x00};  // mov (%r8d),%eax
  m.regs[Reg::r8] = 0xffffffff00000000;              // r8: its low half, r8d, is NULL
  m.fault_address = 0;
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kNullDeref) << Name(d);
  EXPECT_EQ(NullRegister(d), "r8d");
  ASSERT_TRUE(d.null_register);
  EXPECT_EQ(*d.null_register, (SizedReg{Reg::r8, 32}));
  // The sentence names the register as the instruction does.
  ASSERT_TRUE(Fact<evidence::NullBaseRegister>(d));
  EXPECT_EQ(EvidenceSentence(*Fact<evidence::NullBaseRegister>(d)).rfind("r8d = 0x0 (NULL) when `mov (%r8d),%eax`", 0), 0u);
  // eip-relative: the base is the program counter, never a NULL register.
  m.code_bytes[m.rip] = {0x67, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00};  // mov 0x10(%eip),%eax
  m.fault_address = 0x10;
  d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kNullDeref) << Name(d);
  EXPECT_EQ(NullRegister(d), "");
  EXPECT_TRUE(Fact<evidence::NullPage>(d));
}

// glibc's EVEX string functions (what an AVX-512 CPU runs for strlen) and
// `rep movsb` (memcpy's large copies): the faulting instruction is decoded
// whole, as gdb writes it, and its null register named.
TEST(DiagnosisRules, ANullStringInAvx512CodeIsANullDerefNamingTheRegister) {
  Machine m;
  m.rip = kCode + 0x40;
  m.code_bytes[m.rip] = {0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x07, 0x00};  // __strlen_evex+24
  m.regs[Reg::rdi] = 0;
  m.regs[Reg::rsi] = kStack + 0x100;
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kNullDeref) << Name(d);
  EXPECT_EQ(NullRegister(d), "rdi");
  EXPECT_EQ(d.faulting_instruction, "vpcmpeqb (%rdi),%ymm16,%k0");  // gdb: x/i __strlen_evex+24
  m.code_bytes[m.rip] = {0xf3, 0xa4};
  d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kNullDeref) << Name(d);
  EXPECT_EQ(NullRegister(d), "rdi");
  EXPECT_EQ(d.faulting_instruction, "rep movsb %ds:(%rsi),%es:(%rdi)");
}

TEST(DiagnosisRules, ALoadThroughGarbageIsABadPointer) {
  Machine m;
  m.rip = kCode + 0x20;
  m.code_bytes[m.rip] = {0x48, 0x8b, 0x00};  // mov (%rax),%rax
  m.regs[Reg::rax] = 0xdead00000000beefull;      // non-canonical: a general-protection fault
  m.code = 0x80;                             // SI_KERNEL, no address
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kBadPointer) << Name(d);
  const auto* bad = Fact<evidence::BadAccess>(d);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->why, evidence::BadAddress::kNonCanonical);
  EXPECT_TRUE(bad->general_protection);
  EXPECT_EQ(bad->address, std::optional<uint64_t>(0xdead00000000beefull));  // computed from the operand
  EXPECT_NE(EvidenceSentence(*bad).find("non-canonical"), std::string::npos);
  // Mapped, canonical, far from NULL: the address itself was bad.
  m.regs[Reg::rax] = 0x7f0000001000;
  m.code = 1;
  m.fault_address = 0x7f0000001000;
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kBadPointer);
}

// A bad pointer one flipped bit away from a mapped address (or NULL) is a
// possible bit flip; an overrun just past a mapping, or a wild pointer with
// nothing a bit away, is not.
TEST(DiagnosisRules, ABadPointerOneBitFromAMappedAddressIsAPossibleBitFlip) {
  Machine m;
  m.rip = kCode + 0x20;
  m.code_bytes[m.rip] = {0x48, 0x8b, 0x00};  // mov (%rax),%rax
  const uint64_t good = kStack + 0x100;
  // Bit 40 flipped: canonical, unmapped.
  m.regs[Reg::rax] = m.fault_address = good ^ (uint64_t{1} << 40);
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kBadPointer) << Name(d);
  ASSERT_EQ(d.possible_bit_flips.size(), 1u);
  EXPECT_EQ(d.possible_bit_flips[0].source, "rax");
  EXPECT_EQ(d.possible_bit_flips[0].original, good);
  EXPECT_EQ(d.possible_bit_flips[0].bit, 40);
  EXPECT_TRUE(d.possible_bit_flips[0].high_confidence);
  const auto* flip = Fact<evidence::PossibleBitFlip>(d);
  ASSERT_TRUE(flip);
  EXPECT_EQ(flip->flip.bit, 40);
  EXPECT_EQ(flip->original_kind, AddressKind::kStack);
  EXPECT_NE(EvidenceSentence(*flip).find("bit 40 flipped"), std::string::npos);
  // Bit 63 flipped: non-canonical, a general-protection fault with no
  // address; the register still names it.
  m.regs[Reg::rax] = good ^ (uint64_t{1} << 63);
  m.code = 0x80;  // SI_KERNEL
  m.fault_address = 0;
  d = Diagnose(m);
  ASSERT_EQ(d.possible_bit_flips.size(), 1u) << Name(d);
  EXPECT_EQ(d.possible_bit_flips[0].bit, 63);
  EXPECT_EQ(d.possible_bit_flips[0].original, good);
  // A high bit set in NULL.
  m.code = 1;
  m.regs[Reg::rax] = m.fault_address = uint64_t{1} << 44;
  d = Diagnose(m);
  ASSERT_EQ(d.possible_bit_flips.size(), 1u) << Name(d);
  EXPECT_EQ(d.possible_bit_flips[0].original, 0u);
  // A round constant a program may write to is not taken for a flip of NULL.
  m.regs[Reg::rax] = m.fault_address = 0x10000000;
  EXPECT_TRUE(Diagnose(m).possible_bit_flips.empty());
  // 16 bytes past the stack mapping's end: an overrun (only a low bit, 12,
  // would bring it back), not a flip.
  m.regs[Reg::rax] = m.fault_address = kStack + 8192 + 0x10;
  EXPECT_TRUE(Diagnose(m).possible_bit_flips.empty());
  // A wild pointer with nothing mapped one bit away.
  m.regs[Reg::rax] = m.fault_address = 0x5a5a5a5a5a5aull;
  EXPECT_TRUE(Diagnose(m).possible_bit_flips.empty());
}

// SEGV_ACCERR on a store into a mapping without write permission (here the
// code page itself) is a write to read-only memory; a load from the same
// address with the same code is not, and neither is a store with
// SEGV_MAPERR or into a writable mapping.
TEST(DiagnosisRules, AStoreIntoAReadOnlyMappingIsWriteToReadonly) {
  Machine m;
  m.rip = kCode + 0x20;
  m.code_bytes[m.rip] = {0x48, 0x89, 0x08};  // mov %rcx,(%rax)
  m.regs[Reg::rax] = kCode + 0x100;
  m.code = 2;  // SEGV_ACCERR
  m.fault_address = kCode + 0x100;
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kWriteToReadonly) << Name(d);
  const auto* wrote = Fact<evidence::WroteReadonly>(d);
  ASSERT_TRUE(wrote);
  EXPECT_EQ(wrote->address, kCode + 0x100);
  EXPECT_TRUE(wrote->mapping.read);
  EXPECT_TRUE(wrote->mapping.exec);
  EXPECT_LE(wrote->mapping.start, kCode + 0x100);
  EXPECT_GT(wrote->mapping.end, kCode + 0x100);
  EXPECT_NE(EvidenceSentence(*wrote).find("r-x mapping"), std::string::npos) << EvidenceSentence(*wrote);
  m.code_bytes[m.rip] = {0x48, 0x8b, 0x08};  // mov (%rax),%rcx: a load
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kBadPointer);
  m.code_bytes[m.rip] = {0x48, 0x89, 0x08};
  m.code = 1;  // SEGV_MAPERR
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kBadPointer);
  m.code = 2;
  m.regs[Reg::rax] = m.fault_address = kStack + 0x100;  // writable
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kBadPointer);
}

TEST(DiagnosisRules, PcZeroIsReturnToNullOrCallToNullByTheStack) {
  Machine m;
  m.rip = 0;
  // A ret popped 0: the word it popped, just below rsp, is still 0.
  m.stack_words[kSp - 8] = 0;
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kReturnToNull);
  // A call through a NULL pointer pushed its return address, just after
  // `call *%rax`.
  Machine c;
  c.rip = 0;
  c.code_bytes[kCode + 0x10] = {0xff, 0xd0};  // call *%rax
  c.stack_words[kSp] = kCode + 0x12;
  EXPECT_EQ(Diagnose(c).syndrome, Syndrome::kCallToNull);
  // Neither: a jump to 0.
  Machine j;
  j.rip = 0;
  EXPECT_EQ(Diagnose(j).syndrome, Syndrome::kWildJump);
}

TEST(DiagnosisRules, APcOutsideCodeIsAWildJump) {
  Machine m;
  m.rip = kStack + 0x100;  // the stack is not executable
  m.fault_address = m.rip;
  m.code = 2;  // SEGV_ACCERR
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kWildJump);
}

TEST(DiagnosisRules, AnAlignedStoreToAMisalignedStackIsMisalignedStack) {
  Machine m;
  m.rip = kCode + 0x30;
  m.code_bytes[m.rip] = {0x0f, 0x29, 0x04, 0x24};  // movaps %xmm0,(%rsp)
  m.rsp = kSp + 8;
  m.code = 0x80;  // the CPU's general-protection fault
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kMisalignedStack) << Name(Diagnose(m));
  // The same store on an aligned stack is not that.
  m.rsp = kSp;
  EXPECT_NE(Diagnose(m).syndrome, Syndrome::kMisalignedStack);
}

TEST(DiagnosisRules, TheSignalDecidesTheRest) {
  Machine m;
  m.rip = kCode + 0x40;
  m.code_bytes[m.rip] = {0x48, 0xf7, 0xf1};  // div %rcx
  m.signo = SIGFPE;
  m.code = 1;  // FPE_INTDIV
  m.fault_address = m.rip;
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kFpe);
  m.signo = SIGILL;
  m.code = 2;  // ILL_ILLOPN
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kIllegalInstruction);
  m.signo = SIGBUS;
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kBusError);
  // abort(): tgkill from the process itself (si_pid shares si_addr's place).
  m.signo = SIGABRT;
  m.code = -6;  // SI_TKILL
  m.fault_address = 1234;
  EXPECT_EQ(Diagnose(m).syndrome, Syndrome::kAbort);
}

TEST(DiagnosisRules, ASignalFromAnotherProcessIsExternal) {
  Machine m;
  m.rip = kCode + 0x52;
  m.code_bytes[kCode + 0x50] = {0x0f, 0x05};  // syscall: the thread waits in the kernel
  for (int signo : {SIGSEGV, SIGABRT, SIGBUS}) {
    m.signo = signo;
    m.code = 0;              // SI_USER
    m.fault_address = 4321;  // si_pid: not the process (tid 1234)
    Diagnosis d = Diagnose(m);
    EXPECT_EQ(d.syndrome, Syndrome::kExternalSignal) << Name(d);
    ASSERT_EQ(d.evidence.size(), 2u);
    const auto* sent = std::get_if<evidence::SignalSent>(&d.evidence[0]);
    ASSERT_TRUE(sent);
    EXPECT_FALSE(sent->by_itself);
    EXPECT_EQ(sent->signal.sender_pid, 4321);
    EXPECT_NE(EvidenceSentence(d.evidence[0]).find("sent by pid 4321"), std::string::npos);
    const auto* in = std::get_if<evidence::ThreadWasIn>(&d.evidence[1]);
    ASSERT_TRUE(in);
    EXPECT_TRUE(in->wait.syscall);
    EXPECT_NE(EvidenceSentence(d.evidence[1]).find("blocked in system call"), std::string::npos);
    // From the process itself in tgkill (raise), it is what the signal says.
    m.fault_address = 1234;
    m.regs[Reg::orig_rax] = 234;  // tgkill
    EXPECT_NE(Diagnose(m).syndrome, Syndrome::kExternalSignal);
    // From the process itself to a thread blocked in another system call
    // (a handler passing on a kill): no instruction of the thread did it.
    m.regs[Reg::orig_rax] = 232;  // epoll_wait
    d = Diagnose(m);
    EXPECT_EQ(d.syndrome, Syndrome::kExternalSignal) << Name(d);
    ASSERT_EQ(d.evidence.size(), 2u);
    ASSERT_TRUE(std::get_if<evidence::SignalSent>(&d.evidence[0]));
    EXPECT_TRUE(std::get<evidence::SignalSent>(d.evidence[0]).by_itself);
    ASSERT_TRUE(std::get_if<evidence::ThreadWasIn>(&d.evidence[1]));
    EXPECT_EQ(std::get<evidence::ThreadWasIn>(d.evidence[1]).wait, (ThreadWait{WaitKind::kPoll, 232}));
    EXPECT_NE(EvidenceSentence(d.evidence[1]).find("232 (epoll_wait)"), std::string::npos) << EvidenceSentence(d.evidence[1]);
    // Running when it came, the thread may have raised it: not external.
    m.code_bytes.erase(kCode + 0x50);
    EXPECT_NE(Diagnose(m).syndrome, Syndrome::kExternalSignal);
    m.code_bytes[kCode + 0x50] = {0x0f, 0x05};
    m.regs.erase(Reg::orig_rax);
  }
}

// aarch64's register index is extended and shifted before it is added:
// a[0x4000] on a NULL `long *` (ldr x0, [x0, x1, lsl #3]) is 0x20000, past
// the NULL pages; a[-1] through a 32-bit index (sxtw #2) is 4 bytes below
// the base, not 4 GiB above it. (A sent signal: the operand decides the
// address, as for qemu's cores without siginfo.)
TEST(DiagnosisRules, AnAarch64IndexIsShiftedAndExtended) {
  Machine m;
  m.arch = Arch::kAarch64;
  m.rip = kCode + 0x20;
  m.code_bytes[m.rip] = {0x00, 0x78, 0x61, 0xf8};  // ldr x0, [x0, x1, lsl #3]
  m.regs[Reg::x0] = 0;
  m.regs[Reg::x1] = 0x4000;
  m.code = -6;  // SI_TKILL
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kBadPointer) << Name(d);
  const auto* bad = Fact<evidence::BadAccess>(d);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->address, 0x20000u);
  Machine low = m;
  low.regs[Reg::x1] = 0x100;  // a[0x100]: 0x800, within the NULL pages
  EXPECT_EQ(Diagnose(low).syndrome, Syndrome::kNullDeref) << Name(Diagnose(low));
  Machine minus = m;
  minus.code_bytes[m.rip] = {0x00, 0xd8, 0x61, 0xb8};  // ldr w0, [x0, w1, sxtw #2]
  minus.regs[Reg::x0] = 0x7000000010ull;
  minus.regs[Reg::x1] = 0xffffffffull;  // w1 = -1
  d = Diagnose(minus);
  bad = Fact<evidence::BadAccess>(d);
  ASSERT_TRUE(bad) << Name(d);
  EXPECT_EQ(bad->address, 0x700000000cull);
}

// An asynchronous MTE tag check fault (SEGV_MTEAERR) comes late, with
// si_addr 0: a tag mismatch whose address is unknown, not a NULL
// dereference by the instruction at pc.
TEST(DiagnosisRules, AnAsynchronousTagCheckFaultIsNoNullDereference) {
  Machine m;
  m.arch = Arch::kAarch64;
  m.rip = kCode + 0x20;
  m.code_bytes[m.rip] = {0x20, 0x00, 0x80, 0xd2};  // mov x0, #1: dereferences nothing
  m.code = 8;  // SEGV_MTEAERR
  m.fault_address = 0;
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kBadPointer) << Name(d);
  const auto* bad = Fact<evidence::BadAccess>(d);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->why, evidence::BadAddress::kTagMismatch);
  EXPECT_FALSE(bad->address);
  EXPECT_NE(EvidenceSentence(*bad).find("tag mismatch, address unknown"), std::string::npos) << EvidenceSentence(*bad);
}

// aarch64 checks the stack pointer's alignment on every load and store
// based on it: SIGBUS, BUS_ADRALN there with sp 8 bytes off is a
// misaligned stack, named with sp's value. The same instruction with sp
// aligned, or a load based on another register, is a bus error. (No real
// core of it can be made here: qemu-user does not check sp's alignment.)
TEST(DiagnosisRules, AnAarch64SpAlignmentFaultIsAMisalignedStack) {
  Machine m;
  m.arch = Arch::kAarch64;
  m.rip = kCode + 0x20;
  m.code_bytes[m.rip] = {0xe0, 0x07, 0x40, 0xf9};  // ldr x0, [sp, #8]
  m.rsp = kSp - 8;
  m.signo = SIGBUS;
  m.code = 1;  // BUS_ADRALN
  m.fault_address = m.rsp + 8;
  Diagnosis d = Diagnose(m);
  EXPECT_EQ(d.syndrome, Syndrome::kMisalignedStack) << Name(d);
  const auto* op = Fact<evidence::MisalignedStackOperand>(d);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->base, (SizedReg{Reg::sp, 64}));
  EXPECT_EQ(op->value, kSp - 8);
  EXPECT_EQ(EvidenceSentence(*op).find("`ldr x0, [sp, #8]` uses sp as its base"), 0u) << EvidenceSentence(*op);
  EXPECT_NE(EvidenceSentence(*op).find("8 bytes off"), std::string::npos) << EvidenceSentence(*op);

  Machine aligned = m;
  aligned.rsp = kSp;
  EXPECT_EQ(Diagnose(aligned).syndrome, Syndrome::kBusError) << Name(Diagnose(aligned));
  Machine other = m;
  other.code_bytes[m.rip] = {0x20, 0x04, 0x40, 0xf9};  // ldr x0, [x1, #8]
  other.regs[Reg::x1] = kStack + 0x101;
  EXPECT_EQ(Diagnose(other).syndrome, Syndrome::kBusError) << Name(Diagnose(other));
}

}  // namespace
}  // namespace coroner::testing
