// The unwinder's rules on synthetic stacks (SynthMachine): code whose bytes
// are known, stack words placed by hand, and no CFI (the code is anonymous
// executable memory), so each case exercises one of the steps after CFI:
// the frame-pointer chain, the word at rsp after a call through NULL, the
// scan for return addresses, and the checks that end a walk; and aarch64's
// own (its frame records with signed return addresses, the link register
// of a call through NULL, the kernel's signal frame without CFI, the scan
// for what follows `bl`). The zoo tests check CFI unwinding against gdb on
// real cores of both machines.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "symbolize/module_map.h"
#include "symbolize/symbol_provider.h"
#include "unit/synth_machine.h"
#include "unwind/stack_memory.h"
#include "unwind/unwinder.h"

namespace coroner::testing {
namespace {

// Return addresses: the bytes after a 5-byte `call rel32` (e8 ...), which
// is what makes a code address a return address to the scan.
constexpr uint64_t kCallA = kCode + 0x100, kReturnA = kCallA + 5;
constexpr uint64_t kCallB = kCode + 0x200, kReturnB = kCallB + 5;
constexpr uint64_t kCallC = kCode + 0x300, kReturnC = kCallC + 5;
// A code address no call precedes (int3 bytes before it).
constexpr uint64_t kNotAReturn = kCode + 0x400;

Machine WithCalls() {
  Machine m;
  for (uint64_t call : {kCallA, kCallB, kCallC}) m.code_bytes[call] = {0xe8, 0x00, 0x00, 0x00, 0x00};
  m.rip = kCode + 0x20;  // in a function whose frame is set up (no prologue bytes at a symbol)
  m.code_bytes[m.rip] = {0x48, 0x8b, 0x00};  // mov (%rax),%rax
  return m;
}

UnwindResult Walk(const Machine& m, size_t max_frames = 1024) {
  auto core = OpenMachine(m);
  if (!core) return {};
  static FileSymbolProvider symbols{SymbolOptions{{}, {}, false, {}}};
  ModuleMap modules(*core, symbols);
  StackMemory memory(core->memory());
  UnwindOptions options;
  options.max_frames = max_frames;
  return Unwind(core->threads().at(0), modules, memory, options);
}

std::vector<uint64_t> Pcs(const UnwindResult& r) {
  std::vector<uint64_t> pcs;
  for (const auto& f : r.frames) pcs.push_back(f.pc);
  return pcs;
}

std::vector<FrameTrust> Trusts(const UnwindResult& r) {
  std::vector<FrameTrust> trusts;
  for (const auto& f : r.frames) trusts.push_back(f.trust);
  return trusts;
}

TEST(UnwinderRules, TheFramePointerChainIsFollowedToAZeroReturnAddress) {
  Machine m = WithCalls();
  uint64_t fp1 = kSp + 0x40, fp2 = kSp + 0x100;
  m.regs[Reg::rbp] = fp1;
  m.stack_words[fp1] = fp2, m.stack_words[fp1 + 8] = kReturnA;
  m.stack_words[fp2] = 0, m.stack_words[fp2 + 8] = kReturnB;
  m.stack_words[fp2 + 16] = 0;  // not reached: rbp 0 ends the chain
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 3u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(Pcs(r)[0], m.rip);
  EXPECT_EQ(Pcs(r)[1], kReturnA);
  EXPECT_EQ(Pcs(r)[2], kReturnB);
  EXPECT_EQ(Trusts(r)[0], FrameTrust::kContext);
  EXPECT_EQ(Trusts(r)[1], FrameTrust::kFp);
  EXPECT_EQ(Trusts(r)[2], FrameTrust::kFp);
  // Each frame's sp is the slot above its return address.
  EXPECT_EQ(r.frames[1].sp, fp1 + 16);
  EXPECT_EQ(r.frames[2].sp, fp2 + 16);
  // Return addresses are not exact pcs: they are looked up at the call.
  EXPECT_FALSE(r.frames[1].exact_pc);
}

TEST(UnwinderRules, ACallThroughNullIsUnwoundFromTheWordAtRsp) {
  Machine m = WithCalls();
  m.rip = 0;  // `call *%rax` with rax NULL: the return address is at [rsp]
  m.stack_words[m.rsp] = kReturnA;
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 2u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(r.frames[1].pc, kReturnA);
  EXPECT_EQ(r.frames[1].trust, FrameTrust::kScan);
  EXPECT_EQ(r.frames[1].sp, m.rsp + 8);
}

TEST(UnwinderRules, TheScanTakesOnlyCodeAddressesThatFollowACall) {
  Machine m = WithCalls();
  m.rip = 0;
  m.stack_words[m.rsp] = kNotAReturn;           // code, but no call before it
  m.stack_words[m.rsp + 8] = kStack + 0x100;    // a stack address
  m.stack_words[m.rsp + 16] = kReturnC;         // the first real return address
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 2u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(r.frames[1].pc, kReturnC);
  EXPECT_EQ(r.frames[1].sp, m.rsp + 24);
}

TEST(UnwinderRules, AFramePointerThatPointsAtItselfIsFollowedOnce) {
  Machine m = WithCalls();
  uint64_t fp = kSp + 0x40;
  m.regs[Reg::rbp] = fp;
  m.stack_words[fp] = fp;  // the saved rbp is the frame itself
  m.stack_words[fp + 8] = kReturnA;
  UnwindResult r = Walk(m);
  // Frame 1 comes from the chain. Its rbp now lies below its sp, where no
  // caller's frame can be, so the chain is not followed again (a loop
  // otherwise), and the scan above finds nothing.
  ASSERT_EQ(r.frames.size(), 2u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(r.frames[1].pc, kReturnA);
  EXPECT_EQ(r.stop_reason.kind, StopReason::Kind::kNothingFound);
}

TEST(UnwinderRules, AFramePointerBelowTheStackPointerIsNotFollowed) {
  Machine m = WithCalls();
  uint64_t fp = kSp - 0x40;  // below rsp: not a frame of a caller
  m.regs[Reg::rbp] = fp;
  m.stack_words[fp] = kSp + 0x100;
  m.stack_words[fp + 8] = kReturnA;
  m.stack_words[m.rsp + 8] = kReturnB;  // what the scan finds instead
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 2u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(r.frames[1].pc, kReturnB);
  EXPECT_EQ(r.frames[1].trust, FrameTrust::kScan);
}

TEST(UnwinderRules, AWalkStopsAtTheFrameLimitAndSaysSo) {
  Machine m = WithCalls();
  // A chain of 8 frames, each 0x40 above the last.
  uint64_t fp = kSp + 0x40;
  m.regs[Reg::rbp] = fp;
  for (int i = 0; i < 8; ++i, fp += 0x40) {
    m.stack_words[fp] = fp + 0x40;
    m.stack_words[fp + 8] = kReturnA;
  }
  UnwindResult r = Walk(m, 4);
  EXPECT_EQ(r.frames.size(), 4u);
  EXPECT_EQ(r.stop_reason, (StopReason{StopReason::Kind::kFrameLimit, 4}));
}

TEST(UnwinderRules, AStackWithoutReturnAddressesEndsAtTheTopFrame) {
  Machine m = WithCalls();
  m.rip = kNotAReturn + 0x10;  // no frame pointer, nothing on the stack is a return address
  UnwindResult r = Walk(m);
  ASSERT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.stop_reason.kind, StopReason::Kind::kNothingFound);
}

// aarch64: `bl` (94000000, a branch to itself) at each call site; the
// return address is the next instruction.
constexpr uint64_t kA64CallA = kCode + 0x100, kA64ReturnA = kA64CallA + 4;
constexpr uint64_t kA64CallB = kCode + 0x200, kA64ReturnB = kA64CallB + 4;
constexpr uint64_t kA64BlrC = kCode + 0x300, kA64ReturnC = kA64BlrC + 4;
// A pointer authentication code above the 48-bit address space, as
// `paciasp` leaves in a saved x30.
constexpr uint64_t kPac = 0x002a000000000000ull;

Machine A64WithCalls() {
  Machine m;
  m.arch = Arch::kAarch64;
  auto put = [&](uint64_t at, uint32_t insn) {
    m.code_bytes[at] = {static_cast<uint8_t>(insn), static_cast<uint8_t>(insn >> 8), static_cast<uint8_t>(insn >> 16),
                        static_cast<uint8_t>(insn >> 24)};
  };
  put(kA64CallA, 0x94000000);  // bl .
  put(kA64CallB, 0x94000000);  // bl .
  put(kA64BlrC, 0xd63f0100);   // blr x8
  m.rip = kCode + 0x20;
  put(m.rip, 0xf9400000);      // ldr x0, [x0]
  return m;
}

TEST(UnwinderRulesA64, TheFrameRecordChainIsFollowedWithItsSignedReturnAddressesCleaned) {
  Machine m = A64WithCalls();
  uint64_t fp1 = kSp + 0x40, fp2 = kSp + 0x100;
  m.regs[Reg::x29] = fp1;
  m.stack_words[fp1] = fp2, m.stack_words[fp1 + 8] = kA64ReturnA | kPac;
  m.stack_words[fp2] = 0, m.stack_words[fp2 + 8] = kA64ReturnB | kPac;
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 3u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(Pcs(r)[0], m.rip);
  EXPECT_EQ(Pcs(r)[1], kA64ReturnA);
  EXPECT_EQ(Pcs(r)[2], kA64ReturnB);
  EXPECT_EQ(Trusts(r)[1], FrameTrust::kFp);
  EXPECT_EQ(Trusts(r)[2], FrameTrust::kFp);
  EXPECT_EQ(r.frames[1].sp, fp1 + 16);
  EXPECT_EQ(r.frames[2].sp, fp2 + 16);
  EXPECT_FALSE(r.frames[1].exact_pc);
}

TEST(UnwinderRulesA64, ACallThroughNullIsUnwoundFromTheLinkRegister) {
  Machine m = A64WithCalls();
  m.rip = 0;  // `blr x8` with x8 NULL: the return address is in x30, not on the stack
  m.regs[Reg::x30] = kA64ReturnC | kPac;
  m.stack_words[m.rsp] = kA64ReturnA;  // what a scan would take instead
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 2u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(r.frames[1].pc, kA64ReturnC);
  EXPECT_EQ(r.frames[1].trust, FrameTrust::kFp);
  // A call leaves the stack pointer where it was: the caller's sp is the same.
  EXPECT_EQ(r.frames[1].sp, m.rsp);
}

TEST(UnwinderRulesA64, TheScanTakesOnlyCodeAddressesThatFollowBlOrBlr) {
  Machine m = A64WithCalls();
  m.rip = 0;
  m.regs[Reg::x30] = kCode + 0x404;  // code, but `brk` before it: no caller in x30
  m.stack_words[m.rsp] = kCode + 0x404;
  m.stack_words[m.rsp + 8] = kA64ReturnA + 2;  // not on an instruction
  m.stack_words[m.rsp + 16] = kA64ReturnC;     // after blr: the first real return address
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 2u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(r.frames[1].pc, kA64ReturnC);
  EXPECT_EQ(r.frames[1].trust, FrameTrust::kScan);
  EXPECT_EQ(r.frames[1].sp, m.rsp + 24);
}

// The kernel's signal frame, through a trampoline without CFI (`mov x8,
// #139; svc #0`, as the vDSO and qemu-user have it): struct rt_sigframe at
// sp holds siginfo (128 bytes), then the ucontext whose sigcontext (at 176)
// holds fault_address, x0-x30, sp and pc. The interrupted context is the
// next frame, at its exact pc.
TEST(UnwinderRulesA64, TheSignalFrameIsReadWhereTheTrampolineHasNoCfi) {
  Machine m = A64WithCalls();
  m.rip = kCode + 0x500;
  m.code_bytes[m.rip] = {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4};  // mov x8, #139; svc #0
  const uint64_t regs_at = m.rsp + 128 + 176 + 8;
  const uint64_t interrupted_pc = kCode + 0x20, interrupted_sp = kSp + 0x600;
  for (int i = 0; i < 31; ++i) m.stack_words[regs_at + 8 * i] = 0x1000 + i;
  m.stack_words[regs_at + 31 * 8] = interrupted_sp;
  m.stack_words[regs_at + 32 * 8] = interrupted_pc;
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 2u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_TRUE(r.frames[0].signal_trampoline);
  EXPECT_EQ(r.frames[1].pc, interrupted_pc);
  EXPECT_EQ(r.frames[1].sp, interrupted_sp);
  EXPECT_EQ(r.frames[1].trust, FrameTrust::kSignal);
  EXPECT_TRUE(r.frames[1].exact_pc);
  EXPECT_EQ(r.frames[1].regs[19], 0x1000u + 19);  // a callee-saved register, from the frame
  EXPECT_EQ(r.frames[1].regs[29], 0x1000u + 29);
}

TEST(UnwinderRulesA64, AFrameRecordBelowTheStackPointerIsNotFollowed) {
  Machine m = A64WithCalls();
  uint64_t fp = kSp - 0x40;
  m.regs[Reg::x29] = fp;
  m.stack_words[fp] = kSp + 0x100;
  m.stack_words[fp + 8] = kA64ReturnA;
  m.stack_words[m.rsp + 8] = kA64ReturnB;  // what the scan finds instead
  UnwindResult r = Walk(m);
  ASSERT_GE(r.frames.size(), 2u) << static_cast<int>(r.stop_reason.kind);
  EXPECT_EQ(r.frames[1].pc, kA64ReturnB);
  EXPECT_EQ(r.frames[1].trust, FrameTrust::kScan);
}

}  // namespace
}  // namespace coroner::testing
