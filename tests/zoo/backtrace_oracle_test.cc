// Backtraces of every zoo core against gdb's on the same core: the frames of
// the crashing thread (and of every thread of multi-threaded cores), in
// order, by pc and by function name; file:line of frame 0 where debug info
// exists. gdb's synthesized tail-call frames are left out: coroner reports
// the physical frames only.
#include <gtest/gtest.h>

#include "core/core.h"
#include "report/diagnosis_words.h"
#include "symbolize/demangle.h"
#include "symbolize/disassembler.h"
#include "symbolize/symbol_provider.h"
#include "unwind/backtrace.h"
#include "unwind/signal_context.h"
#include "core/signals.h"
#include <csignal>
#include "zoo/analyzed_core.h"
#include "zoo/gdb_compare.h"
#include "zoo/zoo.h"
#include "text/text.h"

namespace coroner {
namespace {

std::unique_ptr<testing::AnalyzedCore> Analyze(const std::string& path) { return testing::AnalyzeCore(path); }


class BacktraceTest : public ::testing::TestWithParam<testing::ZooCore> {};

TEST_P(BacktraceTest, MatchesGdb) {
  const auto& z = GetParam();
  auto gdb = testing::ParseGdbOracle(z.oracle);
  auto a = Analyze(z.core);
  const Thread& crashed = a->core->threads()[a->core->crashing_thread()];
  ASSERT_TRUE(gdb.frames.count(crashed.tid));
  const auto& gframes = gdb.frames.at(crashed.tid);
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  ASSERT_FALSE(gframes.empty());
  EXPECT_GE(testing::ExpectSameFrames(gframes, bt, "crashing thread", *a->analysis.modules), 1u);
  // file:line of frame 0 where gdb has it.
  if (gframes[0].file != "-") {
    EXPECT_EQ(Basename(bt.frames[0].file), Basename(gframes[0].file));
    EXPECT_EQ(bt.frames[0].line, gframes[0].line);
  }
  // Every other thread too.
  size_t others = 0;
  for (const Backtrace& t : a->threads()) {
    if (&t == a->analysis.crashing_backtrace()) continue;
    int tid = t.thread->tid;
    ASSERT_TRUE(gdb.frames.count(tid));
    testing::ExpectSameFrames(gdb.frames.at(tid), t, "thread " + std::to_string(tid), *a->analysis.modules);
    ++others;
  }
  EXPECT_EQ(others + 1, a->core->threads().size());
}

TEST_P(BacktraceTest, FramesCarryHowTheyWereFound) {
  auto a = Analyze(GetParam().core);
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  ASSERT_FALSE(bt.frames.empty());
  EXPECT_EQ(bt.frames[0].trust, FrameTrust::kContext);
  for (size_t i = 1; i < bt.frames.size(); ++i) {
    const Frame& f = bt.frames[i];
    if (f.trust == FrameTrust::kTailCall) {
      // A tail call's frame belongs to the unwound frame it jumped to.
      EXPECT_EQ(f.physical, bt.frames[i - 1].physical);
    } else if (f.physical == 0) {
      EXPECT_EQ(f.trust, FrameTrust::kContext);  // an inlined frame at the crash pc
    } else {
      EXPECT_NE(f.trust, FrameTrust::kContext);
    }
    // After a signal trampoline comes the interrupted context.
    if (bt.frames[i - 1].signal_trampoline) {
      EXPECT_EQ(f.trust, FrameTrust::kSignal);
    }
  }
  EXPECT_NE(bt.stop_reason.kind, StopReason::Kind::kNone);
}

// A frame's pc is the running instruction where the kernel saved it (frame
// 0, the context a signal frame holds) and a return address everywhere else;
// each physical frame's first frame carries the instructions around its pc,
// the current one being the instruction at pc, or the call that ends at a
// return address.
TEST_P(BacktraceTest, FramesKnowWhatTheirPcIs) {
  auto a = Analyze(GetParam().core);
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  ASSERT_FALSE(bt.frames.empty());
  EXPECT_EQ(bt.frames[0].pc_kind, PcKind::kInstruction);
  size_t disassembled = 0;
  for (size_t i = 0; i < bt.frames.size(); ++i) {
    const Frame& f = bt.frames[i];
    std::string where = "frame " + std::to_string(i);
    // The context a signal frame holds is found with trust kSignal, and so
    // are the calls inlined at its pc; a tail call's frame is where the
    // tail call would have returned.
    bool interrupted = f.trust != FrameTrust::kTailCall && (f.physical == 0 || f.trust == FrameTrust::kSignal);
    EXPECT_EQ(f.pc_kind, interrupted ? PcKind::kInstruction : PcKind::kReturnAddress) << where;
    bool starts = i == 0 || bt.frames[i - 1].physical != f.physical;
    EXPECT_EQ(f.disassembly.has_value(), starts && f.physical < kDisassembledFrames) << where;
    if (!f.disassembly) continue;
    ++disassembled;
    for (const Instruction& ins : *f.disassembly) {
      if (!ins.current) continue;
      uint64_t end = ins.address + ins.bytes.size() / 2;
      EXPECT_EQ(f.pc_kind == PcKind::kInstruction ? ins.address : end, f.pc) << where << " " << ins.text;
    }
  }
  EXPECT_EQ(disassembled, std::min(bt.frames.back().physical + 1, kDisassembledFrames));
}

INSTANTIATE_TEST_SUITE_P(Zoo, BacktraceTest, ::testing::ValuesIn(testing::LoadZoo()),
                         testing::ZooTestName);

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// deep_recursion.c: descend(200) calls itself down to descend(0), which faults.
TEST(Backtrace, DeepRecursionHasEveryFrame) {
  auto a = Analyze(testing::ZooDir() + "/cores/deep_recursion-O0.core");
  const Backtrace& bt = a->threads()[0];
  size_t descend = 0;
  while (descend < bt.frames.size() && bt.frames[descend].function == "descend") ++descend;
  EXPECT_EQ(descend, 201u);
  ASSERT_GT(bt.frames.size(), descend);
  EXPECT_EQ(bt.frames[descend].function, "main");
  for (size_t i = 1; i < descend; ++i) EXPECT_EQ(bt.frames[i].trust, FrameTrust::kCfi);
}

// The frame limit bounds the walk and says so.
TEST(Backtrace, FrameLimitIsReported) {
  auto a = Analyze(testing::ZooDir() + "/cores/stack_overflow-O0.core");
  EXPECT_EQ(a->threads()[0].frames.size(), 1024u);
  EXPECT_EQ(a->threads()[0].stop_reason, (StopReason{StopReason::Kind::kFrameLimit, 1024}));
  EXPECT_EQ(StopReasonText(a->threads()[0].stop_reason), "frame limit of 1024 reached");
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// What the re-raising crashers' sources say the hidden fault is.
struct HiddenFault {
  std::string code;
  uint64_t address;
  SignalInfo::Source source;
};
const std::map<std::string, HiddenFault> kHiddenFaults = {
    // reraise.c: strlen(NULL) in parse_header; plain sa_handler, so no siginfo in the frame.
    {"reraise", {"SEGV_MAPERR", 0x0, SignalInfo::Source::kSigcontext}},
    // reraise_siginfo.c: a store to 0x10000000; SA_SIGINFO, so the frame has the siginfo.
    {"reraise_siginfo", {"SEGV_MAPERR", 0x10000000, SignalInfo::Source::kSignalFrame}},
};

TEST_P(BacktraceTest, RecoversTheFaultBehindAReRaise) {
  const auto& z = GetParam();
  auto a = Analyze(z.core);
  StackMemory stack(a->core->memory());
  auto fc = RecoverFaultContext(*a->core, a->threads()[a->core->crashing_thread()], stack);
  auto hidden = kHiddenFaults.find(z.crasher);
  if (hidden == kHiddenFaults.end() || z.variant.ends_with("-gcore")) {
    EXPECT_FALSE(fc.has_value()) << "no signal was re-raised in " << z.variant;
    return;
  }
  ASSERT_TRUE(fc.has_value());
  EXPECT_EQ(fc->signal.signo, SIGSEGV);
  EXPECT_EQ(SignalCodeName(fc->signal.signo, fc->signal.code).value_or("?"), hidden->second.code);
  ASSERT_TRUE(fc->signal.fault_address);
  EXPECT_EQ(*fc->signal.fault_address, hidden->second.address);
  EXPECT_EQ(fc->signal.source, hidden->second.source);
  // The registers are the ones gdb restores from the same signal frame.
  auto gdb = testing::ParseGdbOracle(z.oracle);
  int tid = a->core->threads()[a->core->crashing_thread()].tid;
  ASSERT_TRUE(gdb.signal_context.count(tid));
  for (const auto& [name, value] : gdb.signal_context.at(tid)) {
    // gdb's signal-frame unwinder does not restore eflags (it shows the inner
    // frame's); coroner reads the saved one, RF set as at a fault.
    if (name == "eflags") continue;
    EXPECT_EQ(fc->registers[*RegFromName(name)], value) << name;
  }
  EXPECT_EQ(gdb.signal_context.at(tid).size(), 18u);
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// The crashing instruction against gdb's `x/2i $pc`.
TEST_P(BacktraceTest, CrashingInstructionMatchesGdb) {
  const auto& z = GetParam();
  auto a = Analyze(z.core);
  testing::ExpectCrashingInstructionMatches(testing::ParseGdbOracle(z.oracle), *a->core, *a->analysis.modules);
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// call_null.c: pc 0, the caller's return address at [rsp]; found by scanning.
TEST(Backtrace, CallThroughNullIsRecoveredByStackScan) {
  for (std::string v : {"call_null-O0", "call_null-O2"}) {
    auto a = Analyze(testing::ZooDir() + "/cores/" + v + ".core");
    const Backtrace& bt = a->threads()[0];
    ASSERT_GE(bt.frames.size(), 3u) << v;
    EXPECT_EQ(bt.frames[0].pc, 0u);
    EXPECT_TRUE(bt.frames[0].function.empty());
    EXPECT_EQ(bt.frames[1].function, "dispatch");
    EXPECT_EQ(bt.frames[1].trust, FrameTrust::kScan);
    // The scanned frame sits just above the slot the call pushed.
    EXPECT_EQ(bt.frames[1].sp, a->core->threads()[0].registers.sp() + 8);
  }
}

// no_cfi.c built without unwind tables: leaf() is frameless, middle() and
// main() keep frame pointers.
TEST(Backtrace, FunctionsWithoutCfiAreWalkedByFramePointer) {
  auto a = Analyze(testing::ZooDir() + "/cores/no_cfi-fp.core");
  const Backtrace& bt = a->threads()[0];
  ASSERT_GE(bt.frames.size(), 4u);
  EXPECT_EQ(bt.frames[0].function, "leaf");
  EXPECT_EQ(bt.frames[1].function, "middle");
  EXPECT_EQ(bt.frames[1].trust, FrameTrust::kFp);
  EXPECT_EQ(bt.frames[2].function, "main");
  EXPECT_EQ(bt.frames[2].trust, FrameTrust::kFp);
}

// big_heap.c: a 1 GiB heap mapping. A full analysis reads a few stack pages,
// the notes and module headers, as for a small core: not the heap.
TEST(Backtrace, BytesReadDoNotGrowWithTheHeap) {
  auto big = Analyze(testing::ZooDir() + "/cores/big_heap-O0.core");
  auto small = Analyze(testing::ZooDir() + "/cores/null_deref-O0.core");
  ASSERT_GT(*big->core->size(), 1ull << 30);
  EXPECT_LT(big->core->bytes_read(), 1u << 20);
  EXPECT_LT(big->core->bytes_read(), small->core->bytes_read() + 64 * 1024);
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// A compressed core unwinds exactly as the plain one: the unwinder reads
// memory through the same byte source.
TEST(Backtrace, CompressedCoresUnwindTheSame) {
  std::string dir = testing::ZooDir() + "/cores/";
  for (std::string name : {"null_deref-O0.core.zst", "null_deref-O0.core.lz4", "many_threads-O0.core.xz"}) {
    auto packed = Analyze(dir + name);
    auto plain = Analyze(dir + name.substr(0, name.rfind('.')));
    ASSERT_EQ(packed->threads().size(), plain->threads().size());
    for (size_t t = 0; t < plain->threads().size(); ++t) {
      const auto& a = packed->threads()[t].frames;
      const auto& b = plain->threads()[t].frames;
      ASSERT_EQ(a.size(), b.size()) << name << " thread " << t;
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].pc, b[i].pc);
        EXPECT_EQ(a[i].function, b[i].function);
      }
    }
  }
}

}  // namespace
}  // namespace coroner
