// The diagnosis of every zoo core against the table of what each crasher's
// source calls for (tests/crashers/expected.tsv), and the details behind it.
#include <gtest/gtest.h>

#include <set>

#include "diagnose/diagnosis.h"
#include "report/core_report.h"
#include "report/diagnosis_words.h"
#include "symbolize/symbol_provider.h"
#include "unit/run_coroner.h"
#include "zoo/analyzed_core.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

std::unique_ptr<testing::AnalyzedCore> Analyze(const std::string& path) { return testing::AnalyzeCore(path); }

std::string Core(const std::string& v) { return testing::ZooDir() + "/cores/" + v + ".core"; }

class DiagnosisTest : public ::testing::TestWithParam<testing::ZooCore> {};

TEST_P(DiagnosisTest, SyndromeAndContextMatchTheTable) {
  const auto& z = GetParam();
  auto expect = testing::LoadExpectations().at(z.crasher);
  auto a = Analyze(z.core);
  ASSERT_TRUE(a->analysis.diagnosis);
  const Diagnosis& d = *a->analysis.diagnosis;
  EXPECT_EQ(SyndromeName(d.syndrome), expect.syndrome) << Summary(d);
  EXPECT_EQ(ContextName(d.context), expect.context) << Summary(d);
  // The stored names read back as the same labels (the dataset's columns).
  EXPECT_EQ(SyndromeFromName(SyndromeName(d.syndrome)), d.syndrome);
  EXPECT_FALSE(d.evidence.empty());
  EXPECT_FALSE(NextSteps(d).empty());
  // The 16 words below rsp, where the core holds them (a stack overflow's
  // rsp sits on the guard page).
  const Thread& t = a->core->threads()[a->core->crashing_thread()];
  uint64_t sp = a->analysis.fault_context ? a->analysis.fault_context->registers.sp() : t.registers.sp();
  bool present = a->core->memory().State(sp - 8) == AddressState::kPresent;
  EXPECT_EQ(d.red_zone.size(), present ? 16u : 0u);
  // Each classified register holds the value the diagnosis was made from
  // (the core's, or the recovered fault context's), and none is missing.
  const Registers& regs = a->analysis.fault_context ? a->analysis.fault_context->registers : t.registers;
  std::set<std::string> classified;
  for (const auto& r : d.registers) {
    EXPECT_EQ(r.value, regs[r.reg]) << RegName(r.reg);
    classified.insert(std::string(RegName(r.reg)));
  }
  for (const char* name : {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
                           "r13", "r14", "r15", "rip"}) {
    EXPECT_TRUE(classified.count(name)) << name;
  }
  // Register states compiled code cannot produce: the misaligned stack
  // (rsp off by 8 where movaps needs it) and mid_instruction.c's jump two
  // bytes into its 10-byte movabs, from their sources; no other zoo core.
  if (z.crasher == "misaligned_stack" || z.crasher == "mid_instruction") {
    ASSERT_TRUE(d.impossible_state) << Summary(d);
    if (z.crasher == "mid_instruction") {
      const auto* inside = std::get_if<evidence::PcInsideInstruction>(&*d.impossible_state);
      ASSERT_TRUE(inside) << EvidenceSentence(*d.impossible_state);
      EXPECT_EQ(inside->pc - inside->instruction.address, 2u);
      EXPECT_EQ(inside->instruction.bytes.size(), 20u);  // 10 bytes, in hex
      EXPECT_EQ(inside->instruction.text.rfind("movabs", 0), 0u) << inside->instruction.text;
    }
  } else {
    EXPECT_FALSE(d.impossible_state) << EvidenceSentence(*d.impossible_state);
  }
  // The zoo's crashes are software bugs (wild, freed, NULL and constant
  // pointers among them): none is a bit flip away from a good pointer, but
  // bit_flip.c's, which sets bit 40 of a heap pointer: the register that
  // held it and the fault address are both that flip.
  if (z.crasher == "bit_flip") {
    ASSERT_EQ(d.possible_bit_flips.size(), 2u);
    for (const BitFlip& f : d.possible_bit_flips) {
      EXPECT_EQ(f.bit, 40);
      EXPECT_TRUE(f.high_confidence);
      EXPECT_EQ(f.value ^ f.original, uint64_t{1} << 40);
    }
    EXPECT_EQ(d.possible_bit_flips[1].source, "the fault address");
    return;
  }
  for (const BitFlip& f : d.possible_bit_flips) {
    ADD_FAILURE() << "a possible bit flip of " << f.source << " (bit " << f.bit << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, DiagnosisTest, ::testing::ValuesIn(testing::LoadZoo()),
                         testing::ZooTestName);

TEST(Diagnosis, NullDerefNamesTheRegisterAndInstruction) {
  // null_deref.c: walk() reads n->next->value with n->next NULL.
  auto a = Analyze(Core("null_deref-O0"));
  const Diagnosis& d = *a->analysis.diagnosis;
  ASSERT_TRUE(d.null_register);
  EXPECT_EQ(SizedRegName(*d.null_register), "rax");
  EXPECT_EQ(d.faulting_instruction, "mov 0x8(%rax),%rax");  // gdb: x/i $pc
  const auto& rax = *std::find_if(d.registers.begin(), d.registers.end(), [](const auto& r) { return r.reg == Reg::rax; });
  EXPECT_EQ(rax.kind, AddressKind::kNull);
  const auto& rip = *std::find_if(d.registers.begin(), d.registers.end(), [](const auto& r) { return r.reg == Reg::rip; });
  EXPECT_EQ(rip.kind, AddressKind::kCode);
  EXPECT_NE(RegisterDetail(rip).find("walk"), std::string::npos);
}

TEST(Diagnosis, AbortMessagesComeFromGlibc) {
  auto assert_core = Analyze(Core("abort_assert-O0"));
  ASSERT_TRUE(assert_core->analysis.diagnosis->abort_message);
  // abort_assert.c line 7: assert(b >= 0 && "balance must not go negative") in check_balance.
  // The zoo is built from the source tree, so __FILE__ in the message is its path there.
  EXPECT_EQ(*assert_core->analysis.diagnosis->abort_message,
            "abort_assert-O0: " + std::string(std::getenv("CORONER_SOURCE_DIR")) +
                "/tests/crashers/abort_assert.c:7: check_balance: Assertion `b >= 0 && \"balance must not go negative\"' "
                "failed.");
  auto heap = Analyze(Core("double_free-O2"));
  ASSERT_TRUE(heap->analysis.diagnosis->abort_message);
  EXPECT_EQ(*heap->analysis.diagnosis->abort_message, "free(): double free detected in tcache 2");
}

TEST(Diagnosis, ManyThreadsAreGrouped) {
  // many_threads.c: 32 workers; worker 17 crashes, 31 wait in worker_wait, main pauses.
  auto a = Analyze(Core("many_threads-O0"));
  const Diagnosis& d = *a->analysis.diagnosis;
  ASSERT_FALSE(d.thread_groups.empty());
  EXPECT_EQ(d.thread_groups[0].function, "worker_wait");
  EXPECT_EQ(d.thread_groups[0].tids.size(), 31u);
  EXPECT_EQ(d.thread_groups[0].state.kind, WaitKind::kFutex);  // pthread_cond_wait
  EXPECT_EQ(ThreadStateName(d.thread_groups[0].state), "futex wait");
  EXPECT_FALSE(d.thread_groups[0].with_crashing_thread);
  // Each thread's state: the crashing worker ran, main sits in pause().
  ASSERT_EQ(d.thread_states.size(), a->core->threads().size());
  EXPECT_EQ(d.thread_states[a->core->crashing_thread()].kind, WaitKind::kRunning);
  size_t futex = 0, pause = 0;
  for (const auto& s : d.thread_states) futex += s.kind == WaitKind::kFutex, pause += s.kind == WaitKind::kPause;
  EXPECT_EQ(futex, 31u);
  EXPECT_EQ(pause, 1u);
}

TEST(Diagnosis, ReturnToNullSeesTheZeroInTheRedZone) {
  auto a = Analyze(Core("return_to_null-O0"));
  const Diagnosis& d = *a->analysis.diagnosis;
  ASSERT_FALSE(d.red_zone.empty());
  EXPECT_EQ(d.red_zone[0].offset, -8);
  EXPECT_EQ(d.red_zone[0].value, 0u);
  EXPECT_EQ(d.red_zone[0].kind, AddressKind::kNull);
  EXPECT_EQ(RedZoneMeaning(d.red_zone[0]), "zero");
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

TEST(Diagnosis, UncaughtExceptionTypeAndWhat) {
  // uncaught_exception.cc throws std::runtime_error("config file is corrupt").
  for (std::string v : {"uncaught_exception-O0", "uncaught_exception-O2"}) {
    auto a = Analyze(Core(v));
    const Diagnosis& d = *a->analysis.diagnosis;
    ASSERT_TRUE(d.exception_type) << v;
    EXPECT_EQ(*d.exception_type, "std::runtime_error");
    ASSERT_TRUE(d.exception_what) << v;
    EXPECT_EQ(*d.exception_what, "config file is corrupt");
    // A plain build binds _Unwind_RaiseException to libgcc's unwinder.
    ASSERT_TRUE(d.unwinder);
    EXPECT_EQ(*d.unwinder, "libgcc (libgcc_s.so.1)");
  }
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// The reproduction's premise: libstdc++'s _Unwind_RaiseException binds to
// GNU libunwind in the race binary (LD_DEBUG=bindings shows it).
TEST(UnwindRace, ThrowsBindToGnuLibunwind) {
  std::string bin = testing::ZooDir() + "/bin/unwind_race";
  // The binary exits after 100 throws (a 1 ms timer: no crash expected
  // then), so it ends by itself however busy the machine; the timeout is
  // only against a hang. LD_DEBUG is set for the race binary alone: set for
  // `timeout` too, its own lazy bindings would write to the pipe grep has
  // left. grep reads to the end (no -m1), so no write meets a closed pipe.
  std::string cmd = "timeout -s KILL 600 env LD_DEBUG=bindings " + bin + " 1000000 128 100 2>&1 | grep \"_Unwind_RaiseException\"";
  std::string out = testing::Run(cmd).out;
  EXPECT_NE(out.find("libunwind.so.8"), std::string::npos) << out;
}

// The race's core, when the bounded run crashed: labelled as the
// epidemiology story's cores were.
TEST(UnwindRace, CoreIsReturnToNullInExceptionUnwindingWithGnuLibunwind) {
  std::string core = testing::ZooDir() + "/race/unwind_race.core";
  if (FILE* none = fopen((core + ".none").c_str(), "r")) {
    char why[256] = {};
    fgets(why, sizeof why, none);
    fclose(none);
    GTEST_SKIP() << "the race did not crash here: " << why;
  }
  auto a = Analyze(core);
  const Diagnosis& d = *a->analysis.diagnosis;
  EXPECT_TRUE(d.syndrome == Syndrome::kReturnToNull || d.syndrome == Syndrome::kWildJump) << SyndromeName(d.syndrome);
  EXPECT_EQ(d.context, CrashContext::kExceptionUnwind);
  ASSERT_TRUE(d.unwinder);
  EXPECT_EQ(d.unwinder->rfind("GNU libunwind (libunwind.so.8", 0), 0u) << *d.unwinder;
  // The signal that caused it left its frame in the dead stack: the pc it
  // interrupted is the racy instruction, _Ux86_64_setcontext+82.
  bool saw = false;
  for (const auto& e : d.evidence) {
    if (const auto* u = std::get_if<evidence::UnwinderRunning>(&e))
      saw |= u->seen == evidence::UnwinderSeen::kInDeadStack && u->function == "_Ux86_64_setcontext+0x52";
  }
  EXPECT_TRUE(saw);
}

// The race's effect injected at the racy instruction (make_injected_race_core.sh):
// rip 0, [rsp-8] = 0 and a return address into __cxa_throw in the red zone,
// as the story's cores showed.
TEST(UnwindRace, InjectedRaceIsReturnToNullInExceptionUnwindingWithGnuLibunwind) {
  auto a = Analyze(testing::ZooDir() + "/race/unwind_race-injected.core");
  const Diagnosis& d = *a->analysis.diagnosis;
  EXPECT_EQ(a->core->threads()[0].registers.pc(), 0u);
  EXPECT_EQ(d.syndrome, Syndrome::kReturnToNull);
  EXPECT_EQ(d.context, CrashContext::kExceptionUnwind);
  ASSERT_TRUE(d.unwinder);
  EXPECT_EQ(d.unwinder->rfind("GNU libunwind (libunwind.so.8", 0), 0u) << *d.unwinder;
  ASSERT_FALSE(d.red_zone.empty());
  EXPECT_EQ(d.red_zone[0].value, 0u);
  bool cxa_throw = false;
  for (const auto& w : d.red_zone) cxa_throw |= w.return_address && w.where.rfind("__cxa_throw", 0) == 0;
  EXPECT_TRUE(cxa_throw);
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// The analyze JSON is written by a streaming writer in nlohmann::json's
// spelling: read back by nlohmann and dumped again, every zoo core's line
// is the same bytes (key order, escapes, numbers, nulls).
TEST_P(DiagnosisTest, TheJsonLineIsWhatNlohmannWouldWrite) {
  auto a = Analyze(GetParam().core);
  std::string line = CoreToJson(a->analysis);
  auto parsed = nlohmann::ordered_json::parse(line, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << line.substr(0, 200);
  EXPECT_EQ(JsonText(parsed), line);
}

TEST(JsonWriter, EscapesAsNlohmannDoes) {
  const std::string hostile = std::string("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f") + "\xc3\xa9" + "\xe2\x82\xac" + "\xf0\x9f\x98\x80";
  std::string out;
  JsonWriter w(out);
  w.BeginObject();
  w.Key(hostile).String(hostile);
  w.Key("n").BeginArray();
  w.Int(-9223372036854775807 - 1);
  w.UInt(18446744073709551615u);
  w.Bool(false);
  w.Null();
  w.BeginObject();
  w.EndObject();
  w.BeginArray();
  w.EndArray();
  w.EndArray();
  w.EndObject();
  nlohmann::ordered_json j;
  j[hostile] = hostile;
  j["n"] = nlohmann::ordered_json::array(
      {INT64_MIN, UINT64_MAX, false, nullptr, nlohmann::ordered_json::object(), nlohmann::ordered_json::array()});
  EXPECT_EQ(out, JsonText(j));
  // Bytes that are not UTF-8 are written valid, never refused.
  std::string bad;
  JsonWriter b(bad);
  b.String("a\xff\xc3");
  auto parsed = nlohmann::json::parse(bad, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << bad;
  EXPECT_EQ(parsed.get<std::string>().rfind("a", 0), 0u);
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// A frame deep in a long function is decoded from the function's start, but
// only the instructions a report shows are formatted: abort_assert-O0's
// deepest caller frame sits hundreds of bytes into its glibc function.
TEST(Disassembly, OnlyTheShownInstructionsAreFormatted) {
  auto a = Analyze(Core("abort_assert-O0"));
  const Backtrace* bt = a->analysis.crashing_backtrace();
  ASSERT_TRUE(bt);
  const Frame* deep = nullptr;
  uint64_t deepest = 0;
  for (const Frame& f : bt->frames) {
    PcSymbol s = a->analysis.modules->Symbolize(f.pc - 1);
    if (f.index > 0 && s.symbol_offset > deepest && s.symbol_offset <= 4096) deep = &f, deepest = s.symbol_offset;
  }
  // Far enough in that at least 11 instructions precede the call (15
  // bytes is x86's longest): formatting all it decodes would be more than
  // the 11 shown.
  ASSERT_GE(deepest, 11u * 15) << "no frame far into its function";
  uint64_t before = InstructionsFormatted();
  std::vector<Instruction> shown = Disassemble(*a->analysis.modules, deep->pc, false);
  uint64_t formatted = InstructionsFormatted() - before;
  ASSERT_FALSE(shown.empty());
  EXPECT_EQ(formatted, shown.size());
  EXPECT_LE(shown.size(), 11u);  // 6 before, the call, 4 after
  EXPECT_EQ(std::count_if(shown.begin(), shown.end(), [](const Instruction& i) { return i.current; }), 1);
}

}  // namespace
}  // namespace coroner
