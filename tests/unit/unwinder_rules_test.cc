// The unwinder's rules on synthetic stacks (SynthMachine): code whose bytes
// are known, stack words placed by hand, and no CFI (the code is anonymous
// executable memory), so each case exercises one of the steps after CFI:
// the frame-pointer chain, the word at rsp after a call through NULL, the
// scan for return addresses, and the checks that end a walk. The zoo tests
// check CFI unwinding against gdb on real cores.
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

}  // namespace
}  // namespace coroner::testing
