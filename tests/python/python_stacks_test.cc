// Python stacks read from cores of real CPython interpreters
// (make_python_cores.sh runs crash_scenario.py under Debian's python3.11 and
// whatever pyenv CPythons 3.11+ this machine has). The expected frames are
// the interpreter's own view of its threads, written by the script just
// before it crashes (sys._current_frames: qualified names, files, lines),
// and the thread ids are threading's native ids.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <nlohmann/json.hpp>

#include "python/interpreter_layout.h"
#include "python/location_table.h"
#include "python/python_stacks.h"
#include "unit/run_coroner.h"
#include "zoo/analyzed_core.h"
#include "zoo/zoo.h"

namespace coroner::testing {
namespace {

struct PythonCase {
  std::string name, interpreter, core, expected;
  std::string sysroot;  // the machine's tree for a core of another machine ("" for this one's)
};
void PrintTo(const PythonCase& c, std::ostream* os) { *os << c.name; }

std::string PythonDir() {
  const char* d = std::getenv("CORONER_PYTHON");
  if (!d) throw std::runtime_error("CORONER_PYTHON is not set (run the tests through ctest)");
  return d;
}

std::vector<PythonCase> LoadCases() {
  std::vector<PythonCase> out;
  for (const auto& r : ReadTsv(PythonDir() + "/manifest.tsv")) {
    if (r.size() >= 4) out.push_back({r[0], r[1], r[2], r[3], r.size() >= 6 && r[5] != "-" ? r[5] : ""});
  }
  return out;
}

std::string CaseName(const ::testing::TestParamInfo<PythonCase>& info) {
  std::string n = info.param.name;
  for (auto& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

// The case's core, or `bytes` standing for it, analyzed as `coroner
// analyze` does (with the machine's tree for an aarch64 one).
std::unique_ptr<AnalyzedCore> AnalyzeCase(const PythonCase& c, std::vector<std::byte>* bytes = nullptr) {
  if (c.sysroot.empty() && !bytes) return AnalyzeCore(c.core);
  if (c.sysroot.empty()) {
    auto a = std::make_unique<AnalyzedCore>();
    auto core = Core::Open(MakeMemorySource(std::move(*bytes)), {});
    if (!core.ok()) throw std::runtime_error(core.error().message);
    a->core = std::move(*core);
    a->analysis = ProcessCore(*a->core, ZooSymbols(), {});
    return a;
  }
  if (!bytes) return AnalyzeCrossCore(c.core, c.sysroot, {});
  return AnalyzeCrossSource(MakeMemorySource(std::move(*bytes)), c.core, c.sysroot, {});
}

// The command-line options `coroner` needs for the case's core.
std::string Flags(const PythonCase& c) { return c.sysroot.empty() ? "" : " --sysroot " + c.sysroot; }

nlohmann::json Expected(const PythonCase& c) {
  std::ifstream in(c.expected);
  return nlohmann::json::parse(in);
}

const nlohmann::json& MainThread(const nlohmann::json& e) {
  for (const auto& t : e["threads"]) {
    if (t["main"].get<bool>()) return t;
  }
  throw std::runtime_error("no main thread in the expectation");
}

const PythonThread* FindThread(const PythonState& s, uint64_t tid) {
  for (const auto& t : s.threads) {
    if (t.tid == tid) return &t;
  }
  return nullptr;
}

void ExpectFrames(const std::vector<PythonFrame>& got, const nlohmann::json& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].function, want[i]["function"].get<std::string>()) << what << " frame " << i;
    EXPECT_EQ(got[i].file, want[i]["file"].get<std::string>()) << what << " frame " << i;
    EXPECT_EQ(got[i].line, want[i]["line"].get<int>()) << what << " frame " << i;
  }
}

class PythonStacksTest : public ::testing::TestWithParam<PythonCase> {};

TEST_P(PythonStacksTest, EveryThreadsFramesAreTheInterpretersOwn) {
  auto e = Expected(GetParam());
  auto a = AnalyzeCase(GetParam());
  ASSERT_TRUE(a->analysis.python) << "no CPython found";
  const PythonState& s = *a->analysis.python;
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(s.version, e["version"].get<std::string>());
  EXPECT_EQ(s.threads.size(), e["threads"].size());
  for (const auto& t : e["threads"]) {
    uint64_t tid = t["tid"].get<uint64_t>();
    const PythonThread* pt = FindThread(s, tid);
    ASSERT_TRUE(pt) << "thread " << tid;
    EXPECT_EQ(pt->stop_reason, "") << "thread " << tid;
    ExpectFrames(pt->frames, t["frames"], "thread " + std::to_string(tid));
    // The crashing thread called into ctypes with the GIL held; every
    // other thread is blocked or computing with it released.
    EXPECT_EQ(pt->holds_gil, t["main"].get<bool>()) << "thread " << tid;
  }
  // The core's crashing thread is the script's main thread.
  EXPECT_EQ(static_cast<uint64_t>(a->core->threads()[a->core->crashing_thread()].tid),
            MainThread(e)["tid"].get<uint64_t>());
}

TEST_P(PythonStacksTest, PythonFramesSitInTheEvalFramesThatRunThem) {
  auto e = Expected(GetParam());
  auto a = AnalyzeCase(GetParam());
  const Backtrace& bt = *a->analysis.crashing_backtrace();
  std::vector<PythonFrame> python;
  for (size_t i = 0; i < bt.frames.size(); ++i) {
    const Frame& f = bt.frames[i];
    EXPECT_EQ(f.index, i);
    if (f.trust != FrameTrust::kPython) continue;
    python.push_back({f.function, f.file, f.line});
    // The native code around the pc is the eval frame's, not the Python
    // frame's.
    EXPECT_FALSE(f.disassembly.has_value()) << "frame " << i;
    // Outward of a Python frame: another one of its group, or the eval
    // frame running the group, sharing its physical frame and pc.
    ASSERT_LT(i + 1, bt.frames.size());
    const Frame& next = bt.frames[i + 1];
    EXPECT_TRUE(next.trust == FrameTrust::kPython || IsEvalFrame(next)) << "frame " << i + 1 << " " << next.function;
    EXPECT_EQ(next.physical, f.physical);
    EXPECT_EQ(next.pc, f.pc);
  }
  ExpectFrames(python, MainThread(e)["frames"], "crashing thread");
  // The callback (compare) runs in its own eval frame, called from libc's
  // qsort, which the sorting Python frame called through ctypes.
  auto at = [&](const std::string& fn) {
    for (size_t i = 0; i < bt.frames.size(); ++i) {
      if (bt.frames[i].function == fn) return i;
    }
    return bt.frames.size();
  };
  size_t compare = at("compare"), sorter = at("sort_with_callback");
  ASSERT_LT(compare, sorter);
  bool qsort_between = false;
  size_t evals_between = 0;
  for (size_t i = compare + 1; i < sorter; ++i) {
    if (bt.frames[i].function.find("qsort") != std::string::npos) qsort_between = true;
    if (IsEvalFrame(bt.frames[i])) ++evals_between;
  }
  EXPECT_TRUE(qsort_between);
  EXPECT_EQ(evals_between, 1u);
}

TEST_P(PythonStacksTest, ReportsShowThePythonFrames) {
  auto e = Expected(GetParam());
  const auto& top = MainThread(e)["frames"][0];
  auto text = Coroner("analyze" + Flags(GetParam()) + " " + GetParam().core);
  std::string line = "compare (" + top["file"].get<std::string>() + ":" + std::to_string(top["line"].get<int>()) +
                     ") [python]";
  EXPECT_NE(text.out.find(line), std::string::npos) << line;
  auto json = Coroner("analyze --json" + Flags(GetParam()) + " " + GetParam().core);
  auto j = nlohmann::json::parse(json.out);
  size_t crashing = j["crashing_thread"].get<size_t>();
  std::vector<std::string> names;
  for (const auto& f : j["threads"][crashing]["frames"]) {
    ASSERT_TRUE(f["kind"] == "python" || f["kind"] == "native");
    if (f["kind"] == "python") {
      EXPECT_EQ(f["trust"], "python");
      names.push_back(f["function"].get<std::string>());
    }
  }
  ASSERT_EQ(names.size(), MainThread(e)["frames"].size());
  EXPECT_EQ(names.front(), "compare");
  EXPECT_EQ(names.back(), "<module>");
  // The Markdown call chain: the script's frames are the application's
  // Python code; the interpreter (the executable or libpython) is CPython.
  auto md = Coroner("analyze --format md" + Flags(GetParam()) + " " + GetParam().core);
  EXPECT_NE(md.out.find("| compare (Python) | "), std::string::npos);
  EXPECT_NE(md.out.find(":" + std::to_string(top["line"].get<int>()) + " | application (Python) |"), std::string::npos);
  EXPECT_NE(md.out.find("| \\_PyEval\\_EvalFrameDefault | "), std::string::npos);
  EXPECT_EQ(md.out.find("| application |"), std::string::npos) << "CPython is not the application";
  EXPECT_NE(md.out.find("**Python code:** compare ("), std::string::npos);
  EXPECT_NE(md.out.find(", holding the GIL"), std::string::npos);
}

// The Python frames of a .zst core are those of the plain one; a core cut
// short (`--max-bytes`) gives the frames its bytes hold and says where each
// thread's chain was cut, never frames that are not there.
TEST_P(PythonStacksTest, CompressedAndCutCoresGiveWhatTheirBytesHold) {
  auto python_of = [](const CommandResult& r) {
    EXPECT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    std::vector<std::string> frames;
    for (const auto& t : j["threads"]) {
      for (const auto& f : t["frames"]) {
        if (f["kind"] == "python") frames.push_back(f["function"].get<std::string>() + ":" + f["line"].dump());
      }
    }
    return std::make_pair(j["python"], frames);
  };
  auto plain = python_of(Coroner("analyze --json" + Flags(GetParam()) + " " + GetParam().core));
  std::string zst = GetParam().core + ".zst";
  ASSERT_TRUE(std::filesystem::exists(zst));
  auto packed = python_of(Coroner("analyze --json" + Flags(GetParam()) + " " + zst));
  EXPECT_EQ(packed.first, plain.first);
  EXPECT_EQ(packed.second, plain.second);
  // Reading the interpreter's objects does not decode the stream again:
  // the scenario's 48 MiB of random bytes put its heap far behind the
  // decoder's window by the time the stacks are unwound, so the frames
  // above come from the read plan (the interpreter's writable data and the
  // small anonymous mappings, RetainIfRoom), not from a second decode.
  // Without the plan, a pyenv CPython's frames are missing here and
  // Debian's python3.11 decodes its stream a second time.
  {
    auto a = GetParam().sysroot.empty() ? AnalyzeCore(zst) : AnalyzeCrossCore(zst, GetParam().sysroot, {});
    ASSERT_TRUE(a->analysis.python);
    EXPECT_LE(a->core->source().BytesDecoded(), std::filesystem::file_size(GetParam().core)) << "decoded more than once";
  }

  auto e = Expected(GetParam());
  uint64_t size = std::filesystem::file_size(GetParam().core);
  int cut_threads = 0, cuts_with_python = 0;
  for (uint64_t keep : {size / 2, size / 4}) {
    auto cut = python_of(Coroner("analyze --json" + Flags(GetParam()) + " --max-bytes " + std::to_string(keep) + " " + GetParam().core));
    const auto& p = cut.first;
    // No interpreter: gdb writes the notes after the memory, so a cut gdb
    // core has no threads or modules at all.
    if (p.is_null()) continue;
    ++cuts_with_python;
    if (p["threads"].empty()) {
      // The interpreter's own data (libpython's .data) lies past the cut.
      EXPECT_FALSE(p["error"].is_null()) << p.dump();
      ++cut_threads;
    }
    for (const auto& t : p["threads"]) {
      for (const auto& want : e["threads"]) {
        if (want["tid"] != t["tid"]) continue;
        EXPECT_LE(t["frames"].get<size_t>(), want["frames"].size());
        if (t["frames"].get<size_t>() < want["frames"].size()) {
          EXPECT_FALSE(t["stop_reason"].is_null()) << t.dump();
          ++cut_threads;
        }
      }
    }
  }
  if (cuts_with_python > 0) {
    EXPECT_GT(cut_threads, 0) << "no thread lost frames to a cut: the cuts test nothing";
  }
}

// The dataset keeps the Python frames (trust "python") among the crashing
// thread's frames, and the signature names the Python code the crash came
// through, not the interpreter's C functions or libc's strlen.
TEST_P(PythonStacksTest, ScanStoresPythonFramesAndSignsWithThem) {
  auto e = Expected(GetParam());
  std::string db = ::testing::TempDir() + "/" + GetParam().name + ".db";
  std::filesystem::remove(db);
  auto scan = Coroner("scan" + Flags(GetParam()) + " " + GetParam().core + " --db " + db);
  ASSERT_EQ(scan.status, 0) << scan.err;
  auto q = Coroner("query --db " + db + " \"SELECT signature, syndrome FROM cores\" --json");
  ASSERT_EQ(q.status, 0) << q.err;
  auto rows = nlohmann::json::parse(q.out);
  ASSERT_EQ(rows.size(), 1u);
  // compare() crashed; sort_with_callback() called qsort, which called it;
  // Trainer.step recursed into sort_with_callback (recursion reads as one frame).
  EXPECT_EQ(rows[0]["signature"], rows[0]["syndrome"].get<std::string>() + " | compare | sort_with_callback | Trainer.step");
  auto f = Coroner("query --db " + db +
                   " \"SELECT function, file, line FROM frames WHERE trust = 'python' ORDER BY \\\"index\\\"\" --json");
  ASSERT_EQ(f.status, 0) << f.err;
  auto frames = nlohmann::json::parse(f.out);
  const auto& want = MainThread(e)["frames"];
  ASSERT_EQ(frames.size(), want.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i]["function"], want[i]["function"]) << i;
    EXPECT_EQ(frames[i]["file"], want[i]["file"]) << i;
    EXPECT_EQ(frames[i]["line"], want[i]["line"]) << i;
  }
}

// Interpreter memory that is not what it should be (every field the reader
// follows, overwritten) gives the native stack and a reason, never a crash,
// a loop or more frames than the limits. The damage lands in the thread
// states, frames and code objects the reader found in the intact core.
TEST_P(PythonStacksTest, DamagedInterpreterStateNeverCrashes) {
  std::ifstream in(GetParam().core, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> intact(raw.size());
  std::memcpy(intact.data(), raw.data(), raw.size());
  raw.clear();
  auto a = AnalyzeCase(GetParam());
  ASSERT_TRUE(a->analysis.python);
  std::vector<uint64_t> targets;
  for (const auto& t : a->analysis.python->threads) {
    targets.push_back(t.thread_state);
    for (const auto& f : t.frames) {
      targets.push_back(f.address);
      targets.push_back(f.code);
    }
  }
  ASSERT_FALSE(targets.empty());
  auto file_offset = [&](uint64_t addr) -> std::optional<uint64_t> {
    const Segment* s = a->core->memory().Find(addr);
    if (!s || addr - s->vaddr + 8 > s->present) return std::nullopt;
    return s->offset + (addr - s->vaddr);
  };
  std::mt19937_64 rng(24);
  const uint64_t kinds[] = {0, 1, 0xffffffffffffffff, 0x4141414141414141};
  auto signature = [](const PythonState& s) {
    std::string out;
    for (const auto& t : s.threads) {
      out += t.stop_reason + ";";
      for (const auto& f : t.frames) out += f.function + f.file + std::to_string(f.line) + ",";
    }
    return out;
  };
  const std::string undamaged = signature(*a->analysis.python);
  int changed = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<std::byte> bytes = intact;
    for (int k = 0; k < 24; ++k) {
      uint64_t at = targets[rng() % targets.size()] + (rng() % 256) * 8;
      auto off = file_offset(at);
      if (!off || *off + 8 > bytes.size()) continue;
      // A value the reader must check: NULL, a small number, all ones, a
      // wild pointer, or another object's address (a loop or a wrong type).
      uint64_t v = rng() % 2 ? targets[rng() % targets.size()] : kinds[rng() % 4];
      std::memcpy(bytes.data() + *off, &v, 8);
    }
    auto analyzed = AnalyzeCase(GetParam(), &bytes);
    const CrashAnalysis& damaged = analyzed->analysis;
    if (!damaged.python) continue;
    changed += signature(*damaged.python) != undamaged;
    size_t total = 0;
    for (const auto& t : damaged.python->threads) {
      EXPECT_LE(t.frames.size(), kMaxPythonFramesPerThread);
      total += t.frames.size();
      for (const auto& f : t.frames) {
        EXPECT_LE(f.function.size(), kMaxPythonString + 3);
        EXPECT_LE(f.file.size(), kMaxPythonString + 3);
      }
    }
    EXPECT_LE(total, kMaxPythonFrames);
    // The native frames are all still there.
    size_t native = 0;
    for (const auto& f : damaged.crashing_backtrace()->frames) native += f.trust != FrameTrust::kPython;
    size_t intact_native = 0;
    for (const auto& f : a->analysis.crashing_backtrace()->frames) intact_native += f.trust != FrameTrust::kPython;
    EXPECT_EQ(native, intact_native) << "trial " << trial;
  }
  // The damage reached what the reader reads.
  EXPECT_GT(changed, 20);
}

// A frame chain that loops back on itself ends with that reason.
TEST_P(PythonStacksTest, AFrameChainLoopEndsTheChain) {
  std::ifstream in(GetParam().core, std::ios::binary);
  std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(raw.size());
  std::memcpy(bytes.data(), raw.data(), raw.size());
  auto a = AnalyzeCase(GetParam());
  ASSERT_TRUE(a->analysis.python);
  const PythonThread* main = FindThread(*a->analysis.python, a->core->threads()[a->core->crashing_thread()].tid);
  ASSERT_TRUE(main && main->frames.size() > 3);
  auto minor = std::stoi(a->analysis.python->version.substr(2));
  auto layout = KnownLayout(minor);
  if (!layout) {  // 3.13 on: the core's own debug offsets
    std::array<std::byte, kDebugOffsetsSize> offsets;
    ASSERT_EQ(a->core->memory().ReadUpTo(a->analysis.python->runtime, offsets), offsets.size());
    std::string error;
    auto d = LayoutFromDebugOffsets(offsets, error);
    ASSERT_TRUE(d) << error;
    layout = d->layout;
  }
  // The third frame's `previous` points back at the first.
  uint64_t at = main->frames[2].address + layout->frame_previous;
  const Segment* s = a->core->memory().Find(at);
  ASSERT_TRUE(s);
  uint64_t target = main->frames[0].address;
  std::memcpy(bytes.data() + s->offset + (at - s->vaddr), &target, 8);
  auto analyzed = AnalyzeCase(GetParam(), &bytes);
  const CrashAnalysis& looped = analyzed->analysis;
  ASSERT_TRUE(looped.python);
  const PythonThread* t = FindThread(*looped.python, main->tid);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->frames.size(), 3u);
  EXPECT_NE(t->stop_reason.find("loops"), std::string::npos) << t->stop_reason;
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonStacksTest, ::testing::ValuesIn(LoadCases()), CaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PythonStacksTest);

// The interpreters the machine image may carry: a version not found is
// skipped with a message, not failed.
TEST(PythonInterpreters, EachMinorVersionHasACore) {
  auto cases = LoadCases();
  std::string missing;
  for (const char* v : {"3.11", "3.12", "3.13"}) {
    bool found = false;
    for (const auto& c : cases) found |= c.interpreter.find("python" + std::string(v)) != std::string::npos;
    if (!found) missing += std::string(missing.empty() ? "" : ", ") + v;
  }
  if (!missing.empty()) GTEST_SKIP() << "no CPython " << missing << " on this machine: not tested";
}

// Debian's arm64 python3.11 under qemu-user: fetched from the Debian
// archive by make_python_cores.sh, which says why where it could not be.
TEST(PythonInterpreters, AnAarch64InterpreterHasACore) {
  for (const auto& c : LoadCases())
    if (!c.sysroot.empty()) return;
  std::ifstream why(PythonDir() + "/aarch64.skipped");
  std::string reason;
  std::getline(why, reason);
  ASSERT_FALSE(reason.empty()) << "no aarch64 interpreter's core, and no reason given";
  GTEST_SKIP() << "no aarch64 CPython core: " << reason;
}

// --- A deep recursion at the end of a long location table -------------------

// One function whose location table is some 600 KB (a branch never taken
// holds 100,000 statements) recurses 4,000 times from its last line and
// crashes at the bottom. Every frame's line is the source's, and the table
// is decoded once for the one instruction all the callers share, not once
// per frame (which took 32 s): the bytes decoded are counted, not timed.
TEST(PythonStacks, ADeepRecursionDecodesItsLineOnce) {
  const std::string python = "/usr/bin/python3.11";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << python << " is not installed";
  namespace fs = std::filesystem;
  fs::path dir = fs::path(::testing::TempDir()) / ("python-deep-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string script = (dir / "deep.py").string(), core = (dir / "deep.core").string();
  {
    std::ofstream out(script);
    out << "#!" << python << "\n"                                   // line 1
        << "import ctypes, sys\n"                                   // line 2
        << "sys.setrecursionlimit(10000)\n"                         // line 3
        << "def deep(n):\n"                                         // line 4
        << "    if n == 0:\n"                                       // line 5
        << "        ctypes.string_at(0)\n"                          // line 6: the crash
        << "    if n < 0:\n";                                       // line 7
    for (int i = 0; i < 100000; ++i) out << "        x" << i % 7 << " = n + " << i << "\n";  // lines 8..100007
    out << "    return deep(n - 1) + 1\n"                           // line 100008
        << "deep(4000)\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  std::string cmd = std::string(std::getenv("CORONER_SOURCE_DIR")) + "/tests/fixtures/make_core.sh " + script + " " +
                    core + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto a = AnalyzeCore(core);
  ASSERT_TRUE(a->analysis.python) << "no Python state";
  const PythonState& state = *a->analysis.python;
  EXPECT_EQ(state.error, "");
  const PythonThread* main = nullptr;
  for (const auto& t : state.threads)
    if (t.frames.size() > 4000) main = &t;
  ASSERT_TRUE(main) << "no thread 4,000 frames deep";
  size_t deep = 0;
  for (size_t i = 0; i < main->frames.size(); ++i) {
    const auto& f = main->frames[i];
    if (f.function != "deep") continue;
    EXPECT_EQ(f.line, deep == 0 ? 6 : 100008) << "frame " << i;
    ++deep;
  }
  EXPECT_EQ(deep, 4001u);
  // The table, read to the shared instruction's entry a few times over
  // (64, 256, ... bytes) for the callers and once for the crash: about
  // twice its size, where once a frame was 4,000 times.
  EXPECT_LT(state.line_table_bytes, 4u << 20) << state.line_table_bytes;
  fs::remove_all(dir);
}

// --- The location table, on tables written by hand ---------------------------

TEST(LocationTable, EveryEntryFormGivesItsLine) {
  // Entries: a short form (code 0, 2 units) on the first line; a one-line
  // form (code 11: line +1, 1 unit, two column bytes); a no-column form
  // (code 13, 3 units, line -1 as a signed varint: 3); a long form (code
  // 14, 1 unit, line +300: 600 = 0x18 | 0x40, 0x09 ...); a no-location
  // entry (code 15, 2 units).
  std::vector<uint8_t> t = {
      0x80 | (0 << 3) | 1, 0x05,                    // units 0-1: line 10
      0x80 | (11 << 3) | 0, 0x04, 0x08,             // unit 2: line 11
      0x80 | (13 << 3) | 2, 0x03,                   // units 3-5: line 10
      0x80 | (14 << 3) | 0, 0x58, 0x09, 0, 1, 2,    // unit 6: line 310
      0x80 | (15 << 3) | 1,                         // units 7-8: none
  };
  EXPECT_EQ(LineOfInstruction(t, 10, 0), 10);
  EXPECT_EQ(LineOfInstruction(t, 10, 1), 10);
  EXPECT_EQ(LineOfInstruction(t, 10, 2), 11);
  EXPECT_EQ(LineOfInstruction(t, 10, 5), 10);
  EXPECT_EQ(LineOfInstruction(t, 10, 6), 310);
  EXPECT_EQ(LineOfInstruction(t, 10, 7), std::nullopt);
  EXPECT_EQ(LineOfInstruction(t, 10, 9), std::nullopt);  // past the table
}

TEST(LocationTable, DamagedTablesEndTheLookup) {
  // A varint that never ends, a table that starts mid-entry, an empty one.
  std::vector<uint8_t> endless = {0x80 | (13 << 3), 0x7f, 0x7f, 0x7f};
  EXPECT_EQ(LineOfInstruction(endless, 1, 0), std::nullopt);
  std::vector<uint8_t> mid = {0x05, 0x80};
  EXPECT_EQ(LineOfInstruction(mid, 1, 0), std::nullopt);
  EXPECT_EQ(LineOfInstruction({}, 1, 0), std::nullopt);
}

// Line deltas near 2^62 each: adding them overflowed int64 (UBSan); the
// line is lost and the lookup finds none, without undefined behaviour.
TEST(LocationTable, HugeLineDeltasFindNoLine) {
  auto varint = [](uint64_t v) {
    std::vector<uint8_t> out;
    do {
      uint8_t b = v & 0x3f;
      v >>= 6;
      if (v) b |= 0x40;
      out.push_back(b);
    } while (v);
    return out;
  };
  std::vector<uint8_t> t;
  for (int i = 0; i < 3; ++i) {
    t.push_back(0x80 | (13 << 3) | 0);  // no-column form, 1 unit
    auto d = varint((uint64_t{1} << 63) - 2);  // +(2^62 - 1)
    t.insert(t.end(), d.begin(), d.end());
  }
  t.push_back(0x80 | (13 << 3) | 0);
  auto back = varint(((uint64_t{1} << 62) - 1) << 1 | 1);  // -(2^62 - 1)
  t.insert(t.end(), back.begin(), back.end());
  for (uint64_t unit = 0; unit < 4; ++unit) EXPECT_EQ(LineOfInstruction(t, 1, unit), std::nullopt) << unit;
}

}  // namespace
}  // namespace coroner::testing
