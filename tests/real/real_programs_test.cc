// The real-programs corpus (make_real_cores.sh): cores of Debian's python3,
// node, a JVM, ruby, redis, perl, sleep, cat, sqlite3 and nginx, crashed or killed as
// tests/real/expected.tsv says. Each against gdb on the same core (threads,
// every register, the signal, every frame gdb names, the crashing
// instruction) and against its crash method (the syndrome and context), in
// the library and in the text, JSON and Markdown reports.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <nlohmann/json.hpp>

#include "core/signals.h"
#include "unit/run_coroner.h"
#include "zoo/analyzed_core.h"
#include "zoo/gdb_compare.h"
#include "zoo/zoo.h"

namespace coroner::testing {
namespace {

struct RealExpectation {
  std::string signal, code, syndrome, context, method;
};

std::string RealDir() {
  const char* d = std::getenv("CORONER_REAL");
  if (!d) throw std::runtime_error("CORONER_REAL is not set (run the tests through ctest)");
  return d;
}

std::vector<ZooCore> LoadCorpus() {
  std::vector<ZooCore> out;
  for (const auto& r : ReadTsv(RealDir() + "/manifest.tsv")) {
    if (r.size() >= 4) out.push_back({r[0], r[0], r[1], r[2], r[3]});
  }
  return out;
}

const std::map<std::string, RealExpectation>& Expectations() {
  static const auto* m = [] {
    auto* out = new std::map<std::string, RealExpectation>;
    for (const auto& r : ReadTsv(std::string(std::getenv("CORONER_SOURCE_DIR")) + "/tests/real/expected.tsv")) {
      if (r.size() >= 6) (*out)[r[0]] = {r[1], r[2], r[3], r[4], r[5]};
    }
    return out;
  }();
  return *m;
}

// Who wrote each core (the manifest's fifth column): "kernel" or "gdb".
const std::map<std::string, std::string>& Writers() {
  static const auto* m = [] {
    auto* out = new std::map<std::string, std::string>;
    for (const auto& r : ReadTsv(RealDir() + "/manifest.tsv")) {
      if (r.size() >= 5) (*out)[r[0]] = r[4];
    }
    return out;
  }();
  return *m;
}

class RealProgramTest : public ::testing::TestWithParam<ZooCore> {
 protected:
  // gdb writes a core at the first signal it stops at (a kill, not the
  // handler's re-sent signal) and the arguments as it quotes them; where
  // core_pattern leaves no kernel core here, those facts are the core's own.
  bool WrittenByGdb() {
    auto it = Writers().find(GetParam().variant);
    return it != Writers().end() && it->second == "gdb";
  }
  const RealExpectation& Expected() {
    auto it = Expectations().find(GetParam().variant);
    if (it == Expectations().end()) throw std::runtime_error("no line in expected.tsv for " + GetParam().variant);
    return it->second;
  }
};

TEST_P(RealProgramTest, ThreadsRegistersAndSignalMatchGdb) {
  auto gdb = ParseGdbOracle(GetParam().oracle);
  auto a = AnalyzeCore(GetParam().core);
  EXPECT_EQ(static_cast<int>(a->core->threads().size()), gdb.thread_count);
  EXPECT_EQ(gdb.threads.size(), a->core->threads().size());
  ExpectRegistersMatch(gdb, *a->core, true);
  ExpectSignalMatches(gdb, *a->core);
}

TEST_P(RealProgramTest, EveryFrameGdbNamesMatches) {
  auto gdb = ParseGdbOracle(GetParam().oracle);
  auto a = AnalyzeCore(GetParam().core);
  ASSERT_EQ(a->threads().size(), a->core->threads().size());
  for (const Backtrace& t : a->threads()) {
    int tid = t.thread->tid;
    ASSERT_TRUE(gdb.frames.count(tid)) << tid;
    size_t n = ExpectSameFrames(gdb.frames.at(tid), t, "thread " + std::to_string(tid), *a->analysis.modules,
                                /*stop_outside_modules=*/true);
    if (&t == a->analysis.crashing_backtrace()) {
      EXPECT_GE(n, 3u);
    }
  }
}

TEST_P(RealProgramTest, CrashingInstructionMatchesGdb) {
  auto a = AnalyzeCore(GetParam().core);
  ExpectCrashingInstructionMatches(ParseGdbOracle(GetParam().oracle), *a->core, *a->analysis.modules);
}

TEST_P(RealProgramTest, DiagnosisIsTheCrashMethods) {
  const auto& e = Expected();
  auto a = AnalyzeCore(GetParam().core);
  ASSERT_TRUE(a->core->signal());
  EXPECT_EQ(SignalName(a->core->signal()->signo), e.signal);
  if (!WrittenByGdb()) {
    EXPECT_EQ(SignalCodeName(a->core->signal()->signo, a->core->signal()->code).value_or("?"), e.code);
  }
  ASSERT_TRUE(a->analysis.diagnosis);
  EXPECT_EQ(SyndromeName(a->analysis.diagnosis->syndrome), e.syndrome) << e.method;
  EXPECT_EQ(ContextName(a->analysis.diagnosis->context), e.context) << e.method;
}

// The three reports say the same, and each is well formed.
TEST_P(RealProgramTest, ReportsAgree) {
  const auto& e = Expected();
  const std::string& core = GetParam().core;
  auto json = Coroner("analyze --json " + core);
  ASSERT_EQ(json.status, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["diagnosis"]["syndrome"], e.syndrome);
  EXPECT_EQ(j["diagnosis"]["context"], e.context);
  EXPECT_EQ(j["signal"]["name"], e.signal);
  auto text = Coroner("analyze " + core);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("diagnosis: " + e.syndrome + " (" + e.context + ")"), std::string::npos) << text.out;
  auto md = Coroner("analyze --format md " + core);
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_NE(md.out.find(e.syndrome), std::string::npos);
  // Backticks in the evidence are Markdown code, not escaped characters.
  EXPECT_EQ(md.out.find("\\`"), std::string::npos) << md.out;
}

// A module is the image the loader mapped: it begins at a mapping of the
// file's offset 0, holds only that path's mappings, and a second mapping of
// a loaded file (python's mmap of libc; node maps part of itself again) is
// not part of it.
TEST_P(RealProgramTest, ModulesAreTheLoadedImages) {
  auto a = AnalyzeCore(GetParam().core);
  const auto& files = a->core->files();
  std::map<std::string, int> per_path;
  for (const auto& m : a->core->modules()) {
    if (m.is_vdso) continue;
    ++per_path[m.path];
    bool starts_at_header = false;
    for (const auto& f : files) {
      if (f.start == m.base && f.path == m.path && f.offset == 0) starts_at_header = true;
      bool inside = f.start >= m.base && f.start < m.end;
      if (inside) {
        EXPECT_EQ(f.path, m.path) << "a mapping of another file inside " << m.path;
      }
    }
    EXPECT_TRUE(starts_at_header) << m.path;
  }
  for (const auto& [path, n] : per_path) EXPECT_EQ(n, 1) << path;
  if (GetParam().variant == "python-ctypes-mmap") {
    // libc is mapped twice; the module is the one with code, where frame 0 is.
    const Backtrace& bt = a->threads()[a->core->crashing_thread()];
    ASSERT_FALSE(bt.frames.empty());
    ASSERT_TRUE(bt.frames[0].module);
    EXPECT_NE(bt.frames[0].module->module->path.find("libc.so.6"), std::string::npos);
    EXPECT_EQ(bt.frames[0].trust, FrameTrust::kContext);
    size_t libc_mappings_at_0 = 0;
    for (const auto& f : files) libc_mappings_at_0 += f.path.find("libc.so.6") != std::string::npos && f.offset == 0;
    EXPECT_EQ(libc_mappings_at_0, 2u);
  }
}

// A process's arguments keep their line breaks: JSON escapes them, the text
// report shows them as \n (make_real_cores.sh passes python a multi-line
// program).
TEST_P(RealProgramTest, ArgumentsKeepTheirLineBreaks) {
  if (GetParam().variant != "python-ctypes-mmap") GTEST_SKIP() << "only python-ctypes-mmap's arguments are multi-line";
  if (WrittenByGdb()) GTEST_SKIP() << "gdb wrote this core, with the arguments as gdb quotes them";
  auto json = Coroner("analyze --json " + GetParam().core);
  ASSERT_EQ(json.status, 0) << json.err;
  std::string args = nlohmann::json::parse(json.out)["process"]["args"];
  EXPECT_EQ(args.rfind("/usr/bin/python3 -c \nimport ctypes, mmap\nf = open(", 0), 0u) << args;
  auto text = Coroner("analyze " + GetParam().core);
  EXPECT_NE(text.out.find("-c \\nimport ctypes, mmap\\nf = open("), std::string::npos) << text.out;
}

// Threads by what they wait on, as the crash method put them: python's
// three helper threads wait on a lock (futex), in time.sleep and in os.read
// while the main thread runs into NULL.
TEST_P(RealProgramTest, ThreadStatesAreHowTheyWaited) {
  if (GetParam().variant != "python-threads") GTEST_SKIP() << "only python-threads has threads that wait";
  auto a = AnalyzeCore(GetParam().core);
  const Diagnosis& d = *a->analysis.diagnosis;
  ASSERT_EQ(d.thread_states.size(), 4u);
  EXPECT_EQ(d.thread_states[a->core->crashing_thread()].kind, WaitKind::kRunning);
  std::multiset<std::string> others;
  for (size_t i = 0; i < d.thread_states.size(); ++i)
    if (i != a->core->crashing_thread()) others.insert(ThreadStateName(d.thread_states[i]));
  EXPECT_EQ(others, (std::multiset<std::string>{"futex wait", "read", "sleep"}));
}

// What the program's own crash report (logs/NAME.log) says of its fault.
struct LoggedFault {
  int signo = 0;
  std::optional<int> code;
  uint64_t address = 0;
  std::string ending;  // what the handler then did, in the reports' words
};

std::optional<LoggedFault> ReadLoggedFault(const std::string& variant) {
  std::ifstream in(RealDir() + "/logs/" + variant + ".log");
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  LoggedFault f;
  if (variant == "redis-debug-segfault") {
    // "Redis 7.0.15 crashed by signal: 11, si_code: 2" / "Accessing address: 0x7f..."
    if (!std::regex_search(log, m, std::regex(R"(crashed by signal: (\d+), si_code: (\d+))"))) return std::nullopt;
    f.signo = std::stoi(m[1]);
    f.code = std::stoi(m[2]);
    if (!std::regex_search(log, m, std::regex(R"(Accessing address: (0x[0-9a-f]+))"))) return std::nullopt;
    f.address = std::stoull(m[1], nullptr, 16);
    f.ending = "re-raised it";
    return f;
  }
  if (variant == "java-unsafe-null") {
    // The JVM's error file: "siginfo: si_signo: 11 (SIGSEGV), si_code: 1 (SEGV_MAPERR), si_addr: 0x0000000000000000"
    if (!std::regex_search(log, m, std::regex(R"(siginfo: si_signo: (\d+) \(\w+\), si_code: (\d+) \(\w+\), si_addr: 0x([0-9a-f]+))"))) {
      return std::nullopt;
    }
    f.signo = std::stoi(m[1]);
    f.code = std::stoi(m[2]);
    f.address = std::stoull(m[3], nullptr, 16);
    f.ending = "called abort()";
    return f;
  }
  if (variant == "ruby-fiddle-bug") {
    // "-e:1: [BUG] Segmentation fault at 0x0000000000000008"
    if (!std::regex_search(log, m, std::regex(R"(\[BUG\] Segmentation fault at 0x([0-9a-f]+))"))) return std::nullopt;
    f.signo = SIGSEGV;
    f.address = std::stoull(m[1], nullptr, 16);
    f.ending = "called abort()";
    return f;
  }
  return std::nullopt;
}

// A runtime's handler that logs the fault and then re-raises it (redis) or
// aborts (ruby, the JVM): the real fault read from the kernel's signal frame is the
// one the program itself logged, si_code included (redis's SEGV_ACCERR on a
// page never touched), and the reports say what the handler did.
TEST_P(RealProgramTest, TheRealFaultIsTheOneTheProgramLogged) {
  const std::string& v = GetParam().variant;
  if (v != "redis-debug-segfault" && v != "ruby-fiddle-bug" && v != "java-unsafe-null") {
    GTEST_SKIP() << "only redis, ruby and the JVM log their fault";
  }
  auto logged = ReadLoggedFault(v);
  ASSERT_TRUE(logged) << "no fault in " << RealDir() << "/logs/" << v << ".log";
  auto a = AnalyzeCore(GetParam().core);
  ASSERT_TRUE(a->analysis.fault_context) << "no real fault found behind " << SignalName(a->core->signal()->signo);
  const SignalInfo& s = a->analysis.fault_context->signal;
  EXPECT_EQ(s.signo, logged->signo);
  if (logged->code) {
    EXPECT_EQ(s.code, *logged->code);
  }
  ASSERT_TRUE(s.fault_address);
  EXPECT_EQ(*s.fault_address, logged->address);
  auto text = Coroner("analyze " + GetParam().core);
  EXPECT_NE(text.out.find("a handler caught it and " + logged->ending), std::string::npos) << text.out;
  auto md = Coroner("analyze --format md " + GetParam().core);
  EXPECT_NE(md.out.find("a handler caught it and " + logged->ending), std::string::npos) << md.out;
  // ruby maps libc's separate debug file to read it: that copy is no module,
  // and libc's CFI unwinds the handler's frames (gdb's frames agree above).
  for (const auto& m : a->core->modules()) EXPECT_EQ(m.path.find("/usr/lib/debug/"), std::string::npos) << m.path;
  if (v == "ruby-fiddle-bug") {
    bool debug_file_mapped = false;
    for (const auto& f : a->core->files()) debug_file_mapped |= f.path.find("/usr/lib/debug/") != std::string::npos;
    EXPECT_TRUE(debug_file_mapped) << "ruby did not map a debug file: the case above is not tested";
  }
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  for (const Frame& f : bt.frames) EXPECT_NE(f.trust, FrameTrust::kScan) << "frame " << f.index;
}

// Frames through JIT code are kept: between the VM function that faulted
// and the VM function that called into Java, the JVM's error file lists one
// Java or stub frame ("j", "J", "v") for each JIT-code frame the backtrace
// must show.
TEST_P(RealProgramTest, JitFramesAreTheJvmsOwn) {
  if (GetParam().variant != "java-unsafe-null") GTEST_SKIP() << "only the JVM lists its JIT frames";
  std::ifstream in(RealDir() + "/logs/java-unsafe-null.log");
  std::string line, faulted, caller;
  size_t java_frames = 0;
  bool native = false;
  while (std::getline(in, line)) {
    if (line.rfind("Native frames:", 0) == 0) native = true;
    if (!native || line.size() < 4) continue;
    std::string kind = line.substr(0, 3);
    if (kind == "V  " || kind == "C  ") {
      // "V  [libjvm.so+0xed2f94]  Unsafe_PutLong+0x124"
      std::string name = line.substr(line.find("]  ") + 3);
      name = name.substr(0, name.find_first_of("+("));
      if (faulted.empty()) {
        faulted = name;
      } else {
        caller = name;
        break;
      }
    } else if (!faulted.empty() && (kind == "j  " || kind == "J  " || kind == "v  ")) {
      ++java_frames;
    }
  }
  ASSERT_FALSE(caller.empty()) << "no native frames in the JVM's error file";
  auto a = AnalyzeCore(GetParam().core);
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  auto from = std::find_if(bt.frames.begin(), bt.frames.end(), [&](const Frame& f) { return f.function == faulted; });
  ASSERT_NE(from, bt.frames.end()) << faulted;
  auto to = std::find_if(from, bt.frames.end(), [&](const Frame& f) { return f.function == caller; });
  ASSERT_NE(to, bt.frames.end()) << caller << " is not in the backtrace";
  size_t jit = static_cast<size_t>(std::count_if(from, to, [](const Frame& f) { return f.jit; }));
  EXPECT_EQ(jit, java_frames) << "between " << faulted << " and " << caller;
  EXPECT_EQ(static_cast<size_t>(to - from), java_frames + 1) << "only JIT frames between them";
}

std::string CorpusName(const ::testing::TestParamInfo<ZooCore>& info) { return ZooTestName(info); }

INSTANTIATE_TEST_SUITE_P(Corpus, RealProgramTest, ::testing::ValuesIn(LoadCorpus()), CorpusName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RealProgramTest);

}  // namespace
}  // namespace coroner::testing
