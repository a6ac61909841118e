// libcoroner_crashlog on real crashes, and its lines read back.
//
// Every zoo crasher runs with the shared library preloaded: it must still
// die of its signal with a core dumped and write exactly one line. `coroner
// scan` of the line and of that run's core must give the same syndrome and
// signature wherever registers decide the syndrome, and link the two as one
// event. A program linked with the static library crashes the hard ways (a
// prior handler, two threads at once, no malloc allowed, a thread's stack
// overflow). Hostile lines are rejected with a reason.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/core.h"
#include "core/registers.h"
#include "core/signals.h"
#include "core/crash_line.h"
#include "dataset/dataset.h"
#include "source/byte_source.h"
#include "unit/run_coroner.h"
#include "zoo/scan_rows.h"
#include "zoo/zoo.h"

namespace coroner::testing {
namespace {

namespace fs = std::filesystem;

std::string Work() {
  static const std::string dir =
      fs::path(::testing::TempDir() + "/crashlog-test-" + std::to_string(getpid())).lexically_normal().string();
  return dir;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct ProcessRun {
  int status = 0;
  std::string dir;  // its working directory (where a kernel core lands)
};

// Runs argv in `dir` with RLIMIT_CORE unlimited and `env` added; `in_child`
// runs in the child before the exec.
ProcessRun Exec(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& dir,
                void (*in_child)() = nullptr) {
  fs::create_directories(dir);
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(120);
    struct rlimit unlimited {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &unlimited);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    alarm(60);
    if (in_child) in_child();
    execv(args[0], args.data());
    _exit(121);
  }
  ProcessRun r;
  r.dir = dir;
  waitpid(pid, &r.status, 0);
  return r;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string KernelCore(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("core", 0) == 0) return e.path().string();
  return "";
}

// Syndromes the registers and the stack words around rsp decide.
const std::set<std::string> kRegisterSyndromes = {
    "null-deref", "bad-pointer", "return-to-null", "call-to-null", "wild-jump",  "misaligned-stack",
    "stack-overflow", "abort",   "illegal-instruction", "fpe",    "bus-error"};

// A line's row beside the row of the core of its pid, from one scan.
struct LineBesideCore {
  std::string path, status, error, syndrome, signature, comm, arch;
  std::optional<std::string> core_path, core_syndrome, core_signature;
  bool linked = false;  // same_crash_as names the core
};

// `coroner scan` of `cores` and the lines of `log` into `db` (`flags`
// added), and each line's row beside its core's; empty, with a failure,
// when the scan or the query fails.
std::vector<LineBesideCore> ScanLinesBesideCores(const std::vector<std::string>& cores, const std::string& log,
                                                 const std::string& flags, const std::string& db) {
  std::string inputs;
  for (const auto& c : cores) inputs += " " + c;
  auto scan = Coroner("scan" + inputs + " --log " + log + flags + " --db " + db);
  EXPECT_EQ(scan.status, 0) << scan.err;
  auto ds = Dataset::OpenReadOnly(db);
  EXPECT_TRUE(ds.ok());
  if (scan.status != 0 || !ds.ok()) return {};
  auto rows = ds->Query(
      "SELECT l.path, l.status, l.error, l.syndrome, l.signature, l.comm, "
      "(SELECT value FROM attributes WHERE core = l.id AND key = 'arch'), c.path, c.syndrome, c.signature, "
      "(SELECT value FROM attributes WHERE core = l.id AND key = 'same_crash_as') = c.path "
      "FROM cores l LEFT JOIN cores c ON c.source = 'core' AND c.pid = l.pid WHERE l.source = 'log'");
  EXPECT_TRUE(rows.ok()) << rows.error().message;
  if (!rows.ok()) return {};
  std::vector<LineBesideCore> out;
  for (const auto& row : rows->rows) {
    LineBesideCore r{row[0].text, row[1].text, row[2].text, row[3].text, row[4].text, row[5].text, row[6].text};
    if (row[7].type == QueryValue::Type::kText) r.core_path = row[7].text;
    if (row[8].type == QueryValue::Type::kText) r.core_syndrome = row[8].text;
    if (row[9].type == QueryValue::Type::kText) r.core_signature = row[9].text;
    r.linked = row[10].integer == 1;
    out.push_back(std::move(r));
  }
  return out;
}

// A line and its core agree: linked, and with the core's syndrome where
// registers and the stack words decide it (assert, heap corruption and an
// uncaught exception are told apart by frames in libc, which has no frame
// pointers, and by memory the line does not carry: the line may say
// "abort"). The line's frames are the frame-pointer chain: its signature
// is the core's, or the start of it where the chain ends (code without
// frame pointers, a signal frame). True when the signatures are equal.
bool ExpectLineAgreesWithCore(const LineBesideCore& r) {
  EXPECT_TRUE(r.core_syndrome && r.core_signature) << "no core of the same pid";
  if (!r.core_syndrome || !r.core_signature) return false;
  EXPECT_TRUE(r.linked) << "the line and its core are not linked";
  if (!kRegisterSyndromes.count(*r.core_syndrome)) {
    EXPECT_TRUE(r.syndrome == *r.core_syndrome || r.syndrome == "abort") << r.syndrome;
    return false;
  }
  EXPECT_EQ(r.syndrome, *r.core_syndrome);
  const std::string &line = r.signature, &core = *r.core_signature;
  EXPECT_TRUE(core.rfind(line, 0) == 0 && (core.size() == line.size() || core[line.size()] == ' '))
      << line << " vs " << core;
  return line == core;
}

// The zoo's crashers whose source installs a SIGSEGV handler of its own in
// main (after the preloaded library's constructor) that re-raises without
// chaining to the action it replaced.
const std::set<std::string> kHandlersOfTheirOwn = {"reraise", "reraise_siginfo"};

TEST(Crashlog, EveryZooCrasherPreloadedStillDumpsCoreAndLogsOneLine) {
  std::string so = Env("CORONER_CRASHLOG_SO");
  ASSERT_FALSE(so.empty());
  auto expected = LoadExpectations();
  std::set<std::string> binaries;
  std::string all_logs = Work() + "/preload.log";
  size_t ran = 0, compared = 0, linked_runs = 0;
  std::vector<std::string> cores;
  size_t taken_over = 0;
  for (const auto& z : LoadZoo()) {
    // A static binary loads no preload; the race needs minutes; gdb's cores
    // share their binary with a kernel one.
    if (z.variant.find("static") != std::string::npos || z.crasher == "unwind_race" ||
        z.variant.find("gcore") != std::string::npos || !binaries.insert(z.binary).second)
      continue;
    SCOPED_TRACE(z.variant);
    std::string dir = Work() + "/run/" + z.variant, log = dir + ".log";
    ProcessRun r = Exec({z.binary}, {"LD_PRELOAD=" + so, "CORONER_CRASHLOG_FILE=" + log}, dir);
    ++ran;
    const Expectation& want = expected.at(z.crasher);
    ASSERT_TRUE(WIFSIGNALED(r.status)) << "status " << r.status;
    EXPECT_EQ(SignalName(WTERMSIG(r.status)), want.signal);
    EXPECT_TRUE(WCOREDUMP(r.status)) << "no core dumped";
    auto lines = Lines(log);
    if (kHandlersOfTheirOwn.count(z.crasher)) {
      // Their handler, installed after the library's constructor, takes
      // SIGSEGV over and does not chain: no line, the core as without it.
      EXPECT_EQ(lines.size(), 0u);
      --ran;
      ++taken_over;
      continue;
    }
    ASSERT_EQ(lines.size(), 1u);
    auto line = ParseCrashLine(lines[0]);
    ASSERT_TRUE(line.ok()) << line.error().message;
    EXPECT_TRUE(SignalName(line->signal) == want.signal) << SignalName(line->signal);
    std::ofstream(all_logs, std::ios::app) << lines[0] << "\n";
    std::string core = KernelCore(dir);
    if (!core.empty()) {
      std::string named = Work() + "/cores/" + z.variant + ".core";
      fs::create_directories(Work() + "/cores");
      fs::rename(core, named);
      cores.push_back(named);
      ++linked_runs;
    }
  }
  EXPECT_GE(ran, 30u);
  EXPECT_GE(taken_over, 2u);
  // Where the kernel writes cores elsewhere, the zoo's own cores stand in
  // (same binaries, same deterministic crashes), without the link check.
  std::string db = Work() + "/preload.db";
  auto rows = ScanLinesBesideCores(cores, all_logs, "", db);
  EXPECT_EQ(rows.size(), ran);
  for (const auto& row : rows) {
    SCOPED_TRACE(row.path + " " + row.comm);
    ASSERT_EQ(row.status, "ok") << row.error;
    EXPECT_EQ(row.arch, "x86_64");
    if (!cores.empty()) compared += ExpectLineAgreesWithCore(row);
  }
  auto ds = Dataset::OpenReadOnly(db);
  ASSERT_TRUE(ds.ok());
  // `analyze` reads the same log: one report per line, FILE:LINE, with the
  // scan's diagnosis of that line (one processor for both).
  auto analyzed = Coroner("analyze --json " + all_logs);
  ASSERT_EQ(analyzed.status, 0) << analyzed.err;
  std::istringstream reports(analyzed.out);
  size_t reported = 0;
  for (std::string text; std::getline(reports, text);) {
    if (text.empty()) continue;
    auto j = nlohmann::json::parse(text);
    std::string name = j["core"]["path"];
    SCOPED_TRACE(name);
    ASSERT_EQ(name.rfind(all_logs + ":", 0), 0u);
    auto row = ds->Query("SELECT syndrome, context, pid FROM cores WHERE path = 'log:" + name + "'");
    ASSERT_TRUE(row.ok() && row->rows.size() == 1u);
    EXPECT_EQ(j["diagnosis"]["syndrome"], row->rows[0][0].text);
    EXPECT_EQ(j["diagnosis"]["context"], row->rows[0][1].text);
    EXPECT_EQ(j["process"]["pid"], row->rows[0][2].integer);
    ++reported;
  }
  EXPECT_EQ(reported, ran);
  if (!cores.empty()) {
    EXPECT_EQ(linked_runs, ran);
    EXPECT_GE(compared, 20u);  // signatures equal, frame for frame
    // One event each: epi counts the cores, not the cores and their lines.
    auto epi = Coroner("epi --db " + db + " --json");
    ASSERT_EQ(epi.status, 0) << epi.err;
    EXPECT_NE(epi.out.find("\"cores\": " + std::to_string(cores.size()) + ","), std::string::npos) << epi.out.substr(0, 200);
  }
}

// An executable on PATH, or "" (qemu-user is a dependency, but a machine
// without it skips the aarch64 runs with a message).
std::string Which(const std::string& name) {
  std::stringstream path(Env("PATH"));
  for (std::string dir; std::getline(path, dir, ':');)
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

struct QemuRun {
  int status = 0;
  std::vector<std::string> lines;
  std::string core;  // the guest's core qemu wrote, "" when none
};

// An aarch64 zoo crasher run under qemu-user with the library built for
// aarch64 preloaded, in its own directory under Work().
QemuRun RunUnderQemu(const ZooCore& z, const std::string& so, const std::string& qemu) {
  std::string dir = Work() + "/a64/" + z.variant, log = dir + ".log";
  fs::remove_all(dir);
  fs::remove(log);  // the handler appends
  ProcessRun r = Exec({qemu, "-L", kA64Sysroot, "-E", "LD_PRELOAD=" + so, "-E", "CORONER_CRASHLOG_FILE=" + log, z.binary},
                      {}, dir);
  QemuRun out;
  out.status = r.status;
  out.lines = Lines(log);
  fs::remove(dir + "/core");  // qemu's own core, from the kernel
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("qemu_", 0) == 0) out.core = e.path().string();
  return out;
}

#define SKIP_WITHOUT_QEMU(so, qemu)                             \
  std::string so = Env("CORONER_CRASHLOG_A64_SO"), qemu = Which("qemu-aarch64"); \
  if (so.empty() || qemu.empty())                                \
  GTEST_SKIP() << "no aarch64 cross compiler or qemu-user here (scripts/deps.sh installs them)"

// The library built for aarch64, preloaded into every crasher of the
// aarch64 zoo run under qemu-user (which writes the guest's core, and has
// no process_vm_readv: the library reads its memory through a pipe).
// Each crasher still dies of its signal and leaves its core, and exactly
// one line (none where its own handler takes the signal over): the fault
// the crasher's source makes, with the registers of
// the core where the fault is raised again by the same instruction. The
// lines scanned beside the cores are aarch64 rows with the core's syndrome,
// the core's signature or a shorter one, linked to their cores.
TEST(CrashlogA64, EveryA64CrasherPreloadedUnderQemuLogsItsFault) {
  SKIP_WITHOUT_QEMU(so, qemu);
  auto expected = LoadExpectations();
  const std::set<std::string> handlers = {"reraise", "reraise_siginfo", "handler_crash"};
  std::string all_logs = Work() + "/a64.log";
  std::vector<std::string> cores;
  size_t ran = 0, same_registers = 0;
  for (const auto& z : LoadA64Zoo()) {
    SCOPED_TRACE(z.variant);
    QemuRun r = RunUnderQemu(z, so, qemu);
    const Expectation& want = expected.at(z.crasher);
    ASSERT_TRUE(WIFSIGNALED(r.status)) << "status " << r.status;
    EXPECT_EQ(SignalName(WTERMSIG(r.status)), want.signal);
    if (kHandlersOfTheirOwn.count(z.crasher)) {
      EXPECT_EQ(r.lines.size(), 0u);  // their handler took the signal over
      EXPECT_FALSE(r.core.empty()) << "qemu wrote no core";
      continue;
    }
    ++ran;
    ASSERT_EQ(r.lines.size(), 1u);
    auto line = ParseCrashLine(r.lines[0]);
    ASSERT_TRUE(line.ok()) << line.error().message;
    EXPECT_EQ(line->arch, Arch::kAarch64);
    EXPECT_EQ(SignalName(line->signal), want.signal);
    EXPECT_FALSE(line->stack.empty());
    std::ofstream(all_logs, std::ios::app) << r.lines[0] << "\n";
    ASSERT_FALSE(r.core.empty()) << "qemu wrote no core";
    std::string named = Work() + "/a64-cores/" + z.variant + ".core";
    fs::create_directories(Work() + "/a64-cores");
    fs::rename(r.core, named);
    cores.push_back(named);
    auto source = OpenFileSource(named);
    ASSERT_TRUE(source.ok());
    auto read = Core::Open(std::move(*source));
    ASSERT_TRUE(read.ok()) << read.error().message;
    const Thread& crashed = (*read)->threads()[0];
    EXPECT_EQ(crashed.tid, line->tid);
    // A fault the crasher's own code raises (no handler of its own): the
    // default action runs the instruction again, which faults with the
    // registers the handler saw.
    bool refault = line->code > 0 && !handlers.count(z.crasher) && want.signal != "SIGABRT";
    if (refault) {
      for (size_t i = 0; i < kA64RegCount; ++i)
        EXPECT_EQ(line->registers[i], crashed.registers[A64X(i)]) << RegName(A64X(i));
      ++same_registers;
    }
  }
  EXPECT_GE(ran, 45u);
  EXPECT_GE(same_registers, 20u);

  // The machine's tree holds the library too: a qemu core's modules are
  // the dynamic linker's list, found in the tree by path.
  std::string root = MakeA64Root(Work() + "/a64-root", {so});
  auto rows = ScanLinesBesideCores(cores, all_logs, " --sysroot aarch64=" + root, Work() + "/a64.db");
  EXPECT_EQ(rows.size(), ran);
  size_t equal = 0, compared = 0;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.path + " " + row.core_path.value_or("(no core)"));
    ASSERT_EQ(row.status, "ok") << row.error;
    EXPECT_EQ(row.arch, "aarch64");
    if (row.core_path && row.core_path->find("/bad_pointer-") != std::string::npos) {
      // qemu's siginfo for an address beyond the 48-bit space says 0 (a
      // kernel gives the address): the line, which trusts it, reads a
      // null-deref; the core, which has no siginfo, the operand's address.
      continue;
    }
    equal += ExpectLineAgreesWithCore(row);
    compared += row.core_syndrome && kRegisterSyndromes.count(*row.core_syndrome);
  }
  std::cout << "aarch64 lines: " << ran << " crashes, registers equal to the core's in " << same_registers
            << " refaults, signatures equal in " << equal << " of " << compared << " compared\n";
  EXPECT_GE(equal, 30u);  // the rest shorter: a chain that ends at a signal frame or in code without frame pointers
}

struct Linked {
  ProcessRun run;
  std::vector<std::string> lines;
  std::string err;
};

Linked RunLinked(const std::string& mode) {
  Linked l;
  std::string dir = Work() + "/linked/" + mode, log = dir + ".log";
  fs::remove(log);  // the crasher appends
  l.run = Exec({Env("CORONER_LINKED_CRASHER"), mode, log}, {}, dir);
  l.lines = Lines(log);
  return l;
}

TEST(Crashlog, APriorHandlerStaysTheProgramsAndLeavesNoLine) {
  Linked l = RunLinked("prior");
  ASSERT_TRUE(WIFSIGNALED(l.run.status));
  EXPECT_EQ(WTERMSIG(l.run.status), SIGSEGV);
  EXPECT_TRUE(WCOREDUMP(l.run.status));
  // The library takes only a default disposition: the program's handler
  // runs, resets the action and returns, and the fault ends the process.
  EXPECT_EQ(l.lines, std::vector<std::string>{"prior handler ran"});
}

// A handler installed after the library that passes the fault on to the
// action it replaced (Go's, .NET's, crash reporters' way) gets the line of
// the fault itself, after its own output.
TEST(Crashlog, AHandlerThatChainsLeavesTheLineOfTheFault) {
  Linked l = RunLinked("chained");
  ASSERT_TRUE(WIFSIGNALED(l.run.status));
  EXPECT_EQ(WTERMSIG(l.run.status), SIGSEGV);
  EXPECT_TRUE(WCOREDUMP(l.run.status));
  ASSERT_EQ(l.lines.size(), 2u);
  EXPECT_EQ(l.lines[0], "chained handler ran");
  auto line = ParseCrashLine(l.lines[1]);
  ASSERT_TRUE(line.ok()) << line.error().message;
  EXPECT_EQ(line->signal, SIGSEGV);
  EXPECT_EQ(line->code, 1);  // SEGV_MAPERR: the fault, not a re-raise
  EXPECT_EQ(line->fault_address, 0u);
}

// Two threads fault at once. A thread already inside the handler when the
// first line ends writes its own before the process ends; one that is not
// yet inside is stopped with every other thread by the first's default
// action, as without the library (no fixed wait keeps the process alive).
// Whatever is written is whole lines, one per thread.
TEST(Crashlog, TwoThreadsAtOnceWriteWholeLines) {
  size_t two = 0;
  for (int round = 0; round < 10; ++round) {
    Linked l = RunLinked("threads");
    ASSERT_TRUE(WIFSIGNALED(l.run.status));
    EXPECT_EQ(WTERMSIG(l.run.status), SIGSEGV);
    ASSERT_GE(l.lines.size(), 1u);
    ASSERT_LE(l.lines.size(), 2u);
    std::set<int> tids;
    for (const auto& text : l.lines) {
      auto line = ParseCrashLine(text);
      ASSERT_TRUE(line.ok()) << line.error().message;
      EXPECT_EQ(line->signal, SIGSEGV);
      EXPECT_EQ(line->fault_address, 0u);
      tids.insert(line->tid);
    }
    EXPECT_EQ(tids.size(), l.lines.size());
    two += l.lines.size() == 2;
  }
  std::cout << "rounds in which both threads' lines were written: " << two << " of 10\n";
}

TEST(Crashlog, TheHandlerNeverAllocates) {
  // malloc would abort (SIGABRT): the process must die of the SIGSEGV.
  Linked l = RunLinked("nomalloc");
  ASSERT_TRUE(WIFSIGNALED(l.run.status));
  EXPECT_EQ(WTERMSIG(l.run.status), SIGSEGV);
  ASSERT_EQ(l.lines.size(), 1u);
  EXPECT_TRUE(ParseCrashLine(l.lines[0]).ok());
}

// A thread created after install, with an alternate stack of its own.
TEST(Crashlog, AThreadStackOverflowIsLoggedAndDiagnosed) {
  Linked l = RunLinked("overflow");
  ASSERT_TRUE(WIFSIGNALED(l.run.status));
  EXPECT_EQ(WTERMSIG(l.run.status), SIGSEGV);
  ASSERT_EQ(l.lines.size(), 1u);
  auto line = ParseCrashLine(l.lines[0]);
  ASSERT_TRUE(line.ok()) << line.error().message;
  ASSERT_TRUE(line->stack_mapping);
  EXPECT_NE(line->tid, line->pid);  // not the main thread
  std::string log = Work() + "/overflow.log", db = Work() + "/overflow.db";
  std::ofstream(log) << l.lines[0] << "\n";
  ASSERT_EQ(Coroner("scan --log " + log + " --db " + db).status, 0);
  auto q = Coroner("query --db " + db + " \"SELECT syndrome, signature FROM cores\"");
  EXPECT_NE(q.out.find("stack-overflow | recurse"), std::string::npos) << q.out;
  // A thread without an alternate stack has nowhere to run a handler once
  // its stack is gone: the kernel ends the process, with its core, and no
  // line (the library gives threads none: that would mean interposing
  // pthread_create).
  Linked bare = RunLinked("overflow_bare");
  ASSERT_TRUE(WIFSIGNALED(bare.run.status));
  EXPECT_EQ(WTERMSIG(bare.run.status), SIGSEGV);
  EXPECT_TRUE(WCOREDUMP(bare.run.status));
  EXPECT_TRUE(bare.lines.empty());
}

TEST(Crashlog, TheDeepStackIsLaidOutAgain) {
  Linked l = RunLinked("deep");
  ASSERT_EQ(l.lines.size(), 1u);
  auto line = ParseCrashLine(l.lines[0]);
  ASSERT_TRUE(line.ok());
  EXPECT_GE(line->backtrace.size(), 64u);
  EXPECT_GE(line->frame_pointers.size(), 63u);
  std::string log = Work() + "/deep.log", db = Work() + "/deep.db";
  std::ofstream(log) << l.lines[0] << "\n";
  ASSERT_EQ(Coroner("scan --log " + log + " --db " + db).status, 0);
  auto q = Coroner("query --db " + db +
                   " \"SELECT count(*) FROM frames WHERE function = 'deep'\"");
  EXPECT_NE(q.out.find("63"), std::string::npos) << q.out;  // deep(62) .. deep(0)
}

// --- Do no harm: benign programs behave the same with the library ----------
struct BenignRun {
  int status = 0;
  std::string out, err, dir;
  std::vector<std::string> lines;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Where the library's lines go in a benign run: a file the test names, or
// the program's own stderr (for the rows about a stderr that is a pipe).
enum class LinesTo { kFile, kStderr };

// The machine a benign program runs on: this one, or aarch64 under
// qemu-user (the program built by the cross compiler, the library
// preloaded into the guest).
struct BenignMachine {
  std::string program, library, qemu;  // qemu empty: run natively
};

BenignMachine NativeMachine() { return {Env("CORONER_BENIGN"), Env("CORONER_CRASHLOG_SO"), ""}; }

BenignRun RunBenign(const std::string& mode, bool preload, LinesTo to = LinesTo::kFile,
                    const std::vector<std::string>& extra_env = {}, const BenignMachine& m = NativeMachine()) {
  BenignRun r;
  r.dir = Work() + "/benign" + (m.qemu.empty() ? "" : "-a64") + "/" + mode + (preload ? "-with" : "-without");
  fs::remove_all(r.dir);
  fs::create_directories(r.dir);
  std::string log = r.dir + "/crash.log";
  std::vector<std::string> env = extra_env;
  if (preload) {
    env.push_back("LD_PRELOAD=" + m.library);
    env.push_back(to == LinesTo::kFile ? "CORONER_CRASHLOG_FILE=" + log : "CORONER_CRASHLOG_FD=2");
  }
  std::vector<std::string> argv;
  if (!m.qemu.empty()) {
    argv = {m.qemu, "-L", kA64Sysroot};
    for (const auto& e : env) argv.insert(argv.end(), {"-E", e});
    env.clear();  // the guest's, not qemu's own
  }
  argv.insert(argv.end(), {m.program, mode});
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(r.dir.c_str()) != 0) _exit(120);
    struct rlimit unlimited {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &unlimited);
    int null = open("/dev/null", O_RDONLY);
    int out = open("out", O_WRONLY | O_CREAT | O_TRUNC, 0644), err = open("err", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(null, 0);
    dup2(out, 1);
    dup2(err, 2);
    for (const auto& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    alarm(300);  // a hang, not a result
    execv(args[0], args.data());
    _exit(121);
  }
  waitpid(pid, &r.status, 0);
  r.out = Slurp(r.dir + "/out");
  r.err = Slurp(r.dir + "/err");
  if (to == LinesTo::kFile) {
    r.lines = Lines(log);
  } else {
    std::istringstream err(r.err);
    for (std::string l; std::getline(err, l);)
      if (l.rfind("coroner-crash: ", 0) == 0) r.lines.push_back(l);
  }
  return r;
}

// abort_writer's records written after its abort mark; -1 when no mark.
long RecordsAfterMark(const BenignRun& r) {
  std::istringstream in(Slurp(r.dir + "/records"));
  long n = -1;
  for (std::string l; std::getline(in, l);) {
    if (l == "mark") n = 0;
    else if (n >= 0) ++n;
  }
  return n;
}

struct BenignCase {
  const char* mode;
  int signal;  // the signal that ends it, or 0 for an exit
  int exit_code;
  const char* out;  // from benign.c's source
  size_t lines;     // with the library: 1 for a fatal crash whose signal is still the library's, else 0
  LinesTo to = LinesTo::kFile;
};

const char* const kProbes =
    "probe 0x1000: unreadable\nprobe 0x1000: unreadable\nprobe 0x1000: unreadable\nprobe stack: readable\n";

const std::vector<BenignCase> kBenign = {
    // The program's SA_RESETHAND handler took SIGSEGV over: no line.
    {"resethand", SIGSEGV, 0, "handler 1\n", 0},
    {"masks", 0, 0, "in handler: segv 0 usr1 1 usr2 0\nunreadable\nin handler: segv 1 usr1 0 usr2 1\nunreadable\n", 0},
    {"ignored", 0, 0, "still running\n", 0},
    {"blocked", 0, 0, "pending: segv 1 bus 1\n", 0},
    {"probe", SIGSEGV, 0, kProbes, 1},
    {"probe_abort", SIGABRT, 0, kProbes, 1},
    {"sender", SIGSEGV, 0, "waiting for a signal\n", 1},
    {"altstack", 0, 3, "overflow caught on the alternate stack\n", 0},
    {"bigframe", 0, 0, "recovered with a big handler frame\n", 0},
    {"exits", 0, 5, "fatal 11, exiting\n", 0},
    // Its crashing child sets SIGSEGV to the default itself: no line.
    {"forkexec", 0, 0, "exec child exited 7\ncrashing child: signal 11\n", 0},
    {"threads", 0, 0, "20000 threads joined\n", 0},
    {"readback", 0, 0, "same handler 1, flags 0x50000004, usr1 in mask 1\nsignal: first SIG_DFL, then ours back 1\n", 0},
    // docs/crashlog.md's table, by row. 1: the line has no reader either.
    {"sigpipe_stderr", SIGSEGV, 0, "stderr has no reader\n", 0, LinesTo::kStderr},
    // 2: the line cannot go into the full pipe; it is dropped, not waited on.
    {"full_pipe", 0, 0, "child: signal 11; its stderr held 65436 bytes, 100 short of full\n", 0, LinesTo::kStderr},
    // 3: the child's line goes to the log, not into its database.
    {"closefrom_db", 0, 0, "child: signal 11; its database holds 8 bytes\n", 1},
    {"reused_socket", 0, 0, "child: signal 11; its peer received 0 bytes\n", 0, LinesTo::kStderr},
    {"siginterrupt", 0, 0, "read returned -1, interrupted\n", 0},
    {"flagprobe", 0, 0, "unsupported flag read back 0, tag bits 1, restorer 1, kill in mask 0, stop in mask 0\n", 0},
    {"race", 0, 0, "rounds where the action read back is not the one that ran: 0\n", 0},
    {"vfork", 0, 0, "probe after the vfork child: unreadable\n", 0},
    {"runpath", 0, 0, "plugin found through RUNPATH: 42\n", 0},
    {"keys", 0, 0, "keys the program can create: 1024\n", 0},
    {"async_mte", SIGSEGV, 0, "queued\n", 1},
    {"async_mce", SIGBUS, 0, "queued\n", 1},
    // 15: the line proves the handler fit in 2 KiB above the kernel's frame.
    {"small_altstack", SIGSEGV, 0, "a small alternate stack\n", 1},
};

TEST(CrashlogDoesNoHarm, BenignProgramsBehaveAsWithoutTheLibrary) {
  for (const auto& c : kBenign) {
    SCOPED_TRACE(c.mode);
    std::optional<bool> dumped;
    for (bool preload : {false, true}) {
      SCOPED_TRACE(preload ? "with the library" : "without it");
      BenignRun r = RunBenign(c.mode, preload, c.to);
      if (c.signal) {
        ASSERT_TRUE(WIFSIGNALED(r.status)) << "status " << r.status << " out " << r.out;
        EXPECT_EQ(WTERMSIG(r.status), c.signal);
        if (dumped) {
          EXPECT_EQ(bool(WCOREDUMP(r.status)), *dumped);
        }
        dumped = bool(WCOREDUMP(r.status));
      } else {
        ASSERT_TRUE(WIFEXITED(r.status)) << "status " << r.status << " out " << r.out;
        EXPECT_EQ(WEXITSTATUS(r.status), c.exit_code);
      }
      EXPECT_EQ(r.out, c.out);
      ASSERT_EQ(r.lines.size(), preload ? c.lines : 0u);
      for (const auto& text : r.lines) EXPECT_TRUE(ParseCrashLine(text).ok()) << text;
    }
  }
}

// The same programs on aarch64 under qemu-user, with and without the
// library built for aarch64: the rows that are not about qemu's own signal
// handling (which would be what they measured: qemu answers the flag probe,
// pending signals and a queued fault its own way), and not about exec (a
// child's exec runs a host program). With and without must agree; the
// lines are the x86_64 table's.
TEST(CrashlogA64DoesNoHarm, BenignProgramsUnderQemuBehaveAsWithoutTheLibrary) {
  std::string so = Env("CORONER_CRASHLOG_A64_SO"), qemu = Which("qemu-aarch64"), program = Env("CORONER_BENIGN_A64");
  if (so.empty() || qemu.empty() || program.empty())
    GTEST_SKIP() << "no aarch64 cross compiler or qemu-user here (scripts/deps.sh installs them)";
  const BenignMachine a64{program, so, qemu};
  const std::set<std::string> rows = {"resethand", "masks",          "ignored",   "probe",        "probe_abort",
                                      "sender",    "altstack",       "bigframe",  "exits",        "readback",
                                      "siginterrupt", "sigpipe_stderr", "full_pipe", "closefrom_db", "runpath",
                                      "keys",      "small_altstack"};
  size_t ran = 0;
  for (const auto& c : kBenign) {
    if (!rows.count(c.mode)) continue;
    SCOPED_TRACE(c.mode);
    BenignRun without = RunBenign(c.mode, false, c.to, {}, a64), with = RunBenign(c.mode, true, c.to, {}, a64);
    EXPECT_EQ(with.status, without.status);
    EXPECT_EQ(with.out, without.out);
    EXPECT_EQ(without.out, c.out);
    EXPECT_TRUE(without.lines.empty());
    EXPECT_EQ(with.lines.size(), c.lines);
    for (const auto& text : with.lines) {
      auto line = ParseCrashLine(text);
      ASSERT_TRUE(line.ok()) << line.error().message;
      EXPECT_EQ(line->arch, Arch::kAarch64);
    }
    ++ran;
  }
  EXPECT_EQ(ran, rows.size());
  // Row 11: the plugin's own copy of the library, dlclose'd.
  BenignRun r = RunBenign("plugin_dlclose", false, LinesTo::kFile, {"BENIGN_PLUGIN_LOG=" + Work() + "/a64-plugin.log"}, a64);
  EXPECT_EQ(r.out, "after dlclose SIGSEGV is SIG_DFL\n");
  EXPECT_EQ(r.err, "the plugin's library took SIGSEGV: 1\n");
  // Row 13: the writer's records after the abort mark stay few.
  BenignRun aborted = RunBenign("abort_writer", true, LinesTo::kFile, {}, a64);
  EXPECT_EQ(aborted.lines.size(), 1u);
  long after = RecordsAfterMark(aborted);
  EXPECT_GE(after, 0);
  EXPECT_LE(after, 100);
}

TEST(CrashlogDoesNoHarm, TheLineOfARealCrashAfterRecoveredProbesIsTheCrash) {
  BenignRun r = RunBenign("probe", true);
  ASSERT_EQ(r.lines.size(), 1u);
  auto line = ParseCrashLine(r.lines[0]);
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(line->signal, SIGSEGV);
  EXPECT_EQ(line->fault_address, 0x20u);  // not a probe's 0x1000
  r = RunBenign("probe_abort", true);
  ASSERT_EQ(r.lines.size(), 1u);
  line = ParseCrashLine(r.lines[0]);
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(line->signal, SIGABRT);
}

// Row 14: an asynchronous fault does not happen again when its instruction
// runs again; the library sends it again, with its own code, and the
// process ends of it as without the library.
TEST(CrashlogDoesNoHarm, AnAsynchronousFaultStillEndsTheProcess) {
  for (auto [mode, code] : {std::pair{"async_mte", 8}, std::pair{"async_mce", 5}}) {
    SCOPED_TRACE(mode);
    BenignRun r = RunBenign(mode, true);
    ASSERT_TRUE(WIFSIGNALED(r.status));
    ASSERT_EQ(r.lines.size(), 1u);
    auto line = ParseCrashLine(r.lines[0]);
    ASSERT_TRUE(line.ok());
    EXPECT_EQ(line->code, code);
    std::string core = KernelCore(r.dir);
    if (core.empty()) continue;  // the kernel writes cores elsewhere here
    auto a = Coroner("analyze --json " + core);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(nlohmann::json::parse(a.out)["signal"]["code"], code);
  }
}

// Row 13: with the library, the other threads of a process that aborts go
// on only while the line is written (no fixed wait). A thread appending a
// record every ~100 us wrote 600 after the abort mark with a 100 ms wait;
// the bound here is 10 ms of its records, far from that and far above the
// line's own fraction of a millisecond on a loaded machine.
TEST(CrashlogDoesNoHarm, OtherThreadsAreNotKeptRunningAfterAnAbort) {
  BenignRun without = RunBenign("abort_writer", false), with = RunBenign("abort_writer", true);
  for (const BenignRun* r : {&without, &with}) {
    ASSERT_TRUE(WIFSIGNALED(r->status));
    EXPECT_EQ(WTERMSIG(r->status), SIGABRT);
  }
  EXPECT_EQ(with.lines.size(), 1u);
  long a = RecordsAfterMark(without), b = RecordsAfterMark(with);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  std::cout << "records after the abort mark: " << a << " without the library, " << b << " with it\n";
  EXPECT_LE(b, 100);
}

// Row 11: a plugin that carries the library (the static archive) and
// installs it is dlclose'd: SIGSEGV goes back to the default before the
// library's code is unmapped, as if the plugin had never had it.
TEST(CrashlogDoesNoHarm, APluginCarryingTheLibraryGivesItsSignalsBackWhenUnloaded) {
  for (bool installs : {false, true}) {
    SCOPED_TRACE(installs ? "the plugin installs the library" : "it does not");
    // Not preloaded: a preloaded copy's coroner_crashlog_install would be
    // the one the plugin's call binds to.
    std::vector<std::string> env;
    if (installs) env.push_back("BENIGN_PLUGIN_LOG=" + Work() + "/plugin.log");
    BenignRun r = RunBenign("plugin_dlclose", false, LinesTo::kFile, env);
    ASSERT_TRUE(WIFSIGNALED(r.status)) << r.out << r.err;
    EXPECT_EQ(WTERMSIG(r.status), SIGSEGV);
    EXPECT_TRUE(WCOREDUMP(r.status));
    EXPECT_EQ(r.out, "after dlclose SIGSEGV is SIG_DFL\n");
    if (installs) {
      EXPECT_EQ(r.err, "the plugin's library took SIGSEGV: 1\n");  // so the test tests something
    }
  }
}

// Row 12: a set-user-ID root program that loads the library, run by
// nobody with CORONER_CRASHLOG_FILE naming a file only root may create:
// nothing is created. The same program without the bit, run by root,
// creates it (the environment is honoured where it is the user's own).
TEST(CrashlogDoesNoHarm, APrivilegedProgramTakesNothingFromTheEnvironment) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a set-user-ID program";
  char tmpl[] = "/tmp/coroner-secure-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl, prog = dir + "/benign", so = dir + "/libcoroner_crashlog.so", target = dir + "/owned";
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  fs::copy_file(Env("CORONER_BENIGN"), prog);
  fs::copy_file(Env("CORONER_CRASHLOG_SO"), so);
  ASSERT_EQ(chmod(so.c_str(), 0755), 0);
  auto run = [&](bool setuid_bit) {
    ASSERT_EQ(chmod(prog.c_str(), setuid_bit ? 04755 : 0755), 0);
    fs::remove(target);
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    pid_t pid = fork();
    if (pid == 0) {
      dup2(out[1], 1);
      if (setuid_bit && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(120);
      setenv("CORONER_CRASHLOG_FILE", target.c_str(), 1);
      alarm(60);
      execl(prog.c_str(), prog.c_str(), "secure", so.c_str(), (char*)nullptr);
      _exit(121);
    }
    close(out[1]);
    std::string text;
    char buf[256];
    for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
    close(out[0]);
    int status;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_EQ(text, std::string("secure ") + (setuid_bit ? "1" : "0") + "\nloaded 1\n");
    EXPECT_EQ(fs::exists(target), !setuid_bit);
  };
  run(false);
  run(true);
  fs::remove_all(dir);
}

// Python's faulthandler, a runtime that installs its handler after the
// library and, once it has written its traceback, puts the replaced action
// back and raises the signal again: the line is that re-raise's (SI_TKILL
// from the process itself), and the process dies of it as without us.
TEST(CrashlogDoesNoHarm, PythonsFaulthandlerPassesTheSignalOnToTheLine) {
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  for (bool preload : {false, true}) {
    SCOPED_TRACE(preload ? "with the library" : "without it");
    std::string dir = Work() + "/faulthandler-" + std::to_string(preload), log = dir + ".log", err = dir + ".err";
    fs::remove(log);
    std::vector<std::string> env = {"PYTHONFAULTHANDLER=1"};
    if (preload) env.insert(env.end(), {"LD_PRELOAD=" + Env("CORONER_CRASHLOG_SO"), "CORONER_CRASHLOG_FILE=" + log});
    ProcessRun r = Exec({"/bin/sh", "-c", python + " -c 'import ctypes; ctypes.string_at(0)' 2> " + err}, env, dir);
    ASSERT_TRUE(WIFEXITED(r.status));
    EXPECT_EQ(WEXITSTATUS(r.status), 128 + SIGSEGV);  // the shell's word for python's death by SIGSEGV
    EXPECT_NE(Slurp(err).find("Fatal Python error: Segmentation fault"), std::string::npos) << Slurp(err);
    auto lines = Lines(log);
    ASSERT_EQ(lines.size(), preload ? 1u : 0u);
    if (!preload) continue;
    auto line = ParseCrashLine(lines[0]);
    ASSERT_TRUE(line.ok()) << line.error().message;
    EXPECT_EQ(line->signal, SIGSEGV);
    EXPECT_EQ(line->code, SI_TKILL);
  }
}

TEST(CrashlogDoesNoHarm, ThreadChurnCostsNoMemory) {
  BenignRun without = RunBenign("threads", false), with = RunBenign("threads", true);
  auto growth = [](const std::string& err) {
    long kib = -1;
    std::sscanf(err.c_str(), "vm_growth_kib %ld", &kib);
    return kib;
  };
  ASSERT_GE(growth(without.err), 0) << without.err;
  ASSERT_GE(growth(with.err), 0) << with.err;
  // 20,000 leaked 64 KiB stacks would be 1.25 GiB; allow one thread's worth.
  EXPECT_LE(growth(with.err), growth(without.err) + 1024) << with.err << " vs " << without.err;
}

TEST(CrashlogDoesNoHarm, ASignalFromAnotherProcessKeepsItsSender) {
  for (bool preload : {false, true}) {
    SCOPED_TRACE(preload ? "with the library" : "without it");
    BenignRun r = RunBenign("sender", preload);
    ASSERT_TRUE(WIFSIGNALED(r.status));
    if (preload) {
      ASSERT_EQ(r.lines.size(), 1u);
      auto line = ParseCrashLine(r.lines[0]);
      ASSERT_TRUE(line.ok());
      EXPECT_EQ(line->code, 0);  // SI_USER
    }
    std::string core = KernelCore(r.dir);
    if (core.empty()) GTEST_SKIP() << "the kernel writes cores elsewhere here (core_pattern)";
    auto a = Coroner("analyze --json " + core);
    ASSERT_EQ(a.status, 0) << a.err;
    auto j = nlohmann::json::parse(a.out);
    EXPECT_EQ(j["signal"]["code_name"], "SI_USER") << j["signal"].dump();
    EXPECT_NE(j["signal"]["sender_pid"], j["process"]["pid"]);
    EXPECT_EQ(j["diagnosis"]["syndrome"], "external-signal");
  }
}

// A seccomp filter on process_vm_readv, set before the program starts (as
// a container runtime or systemd's SystemCallFilter= sets it): `action` is
// what the call gets.
void FilterProcessVmReadv(uint32_t action) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {static_cast<unsigned short>(std::size(filter)), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0)
    _exit(122);
}
// Refused with EPERM, as older container runtimes' default profiles do.
void RefuseProcessVmReadv() { FilterProcessVmReadv(SECCOMP_RET_ERRNO | EPERM); }
// Fatal, as systemd's @system-service filter makes it: a process that
// makes the call dies of SIGSYS.
void KillOnProcessVmReadv() { FilterProcessVmReadv(SECCOMP_RET_KILL_PROCESS); }

// Where process_vm_readv is refused, or fatal, the line still carries the
// stack words and the frame chain: the library reads its memory through a
// pipe instead (from the start, when a filter is in force at install). The
// same crasher's line with and without each filter has the same frames and
// as many readable words, and the process dies of its fault, not SIGSYS.
TEST(CrashlogDoesNoHarm, AProcessThatMayNotReadItselfStillLogsItsStack) {
  std::string so = Env("CORONER_CRASHLOG_SO");
  std::vector<CrashLine> got;
  void (*filters[])() = {nullptr, RefuseProcessVmReadv, KillOnProcessVmReadv};
  for (size_t f = 0; f < std::size(filters); ++f) {
    for (const auto& z : LoadZoo()) {
      if (z.variant != "null_deref-O0") continue;
      SCOPED_TRACE(f);
      std::string dir = Work() + "/refused-" + std::to_string(f), log = dir + ".log";
      fs::remove(log);
      ProcessRun r = Exec({z.binary}, {"LD_PRELOAD=" + so, "CORONER_CRASHLOG_FILE=" + log}, dir, filters[f]);
      ASSERT_TRUE(WIFSIGNALED(r.status)) << "status " << r.status;
      EXPECT_EQ(WTERMSIG(r.status), SIGSEGV);
      auto lines = Lines(log);
      ASSERT_EQ(lines.size(), 1u);
      auto line = ParseCrashLine(lines[0]);
      ASSERT_TRUE(line.ok()) << line.error().message;
      got.push_back(*line);
    }
  }
  ASSERT_EQ(got.size(), 3u);
  auto readable = [](const CrashLine& l) {
    return std::count_if(l.stack.begin(), l.stack.end(), [](const auto& w) { return w.has_value(); });
  };
  for (size_t f = 1; f < got.size(); ++f) {
    SCOPED_TRACE(f);
    EXPECT_EQ(readable(got[f]), readable(got[0]));
    EXPECT_GE(readable(got[f]), 20);
    EXPECT_EQ(got[f].backtrace, got[0].backtrace);
    EXPECT_GE(got[f].backtrace.size(), 3u);  // walk, main, and libc's caller: the chain was read
    EXPECT_EQ(got[f].frame_pointers.size(), got[0].frame_pointers.size());
  }
}

// The line each of these zoo crashers logs with the handler preloaded.
std::vector<std::string> PreloadedLines(const std::set<std::string>& variants) {
  std::string so = Env("CORONER_CRASHLOG_SO");
  std::vector<std::string> out;
  for (const auto& z : LoadZoo()) {
    if (!variants.count(z.variant)) continue;
    std::string dir = Work() + "/preloaded/" + z.variant, log = dir + ".log";
    fs::remove(log);  // the handler appends
    Exec({z.binary}, {"LD_PRELOAD=" + so, "CORONER_CRASHLOG_FILE=" + log}, dir);
    auto lines = Lines(log);
    EXPECT_EQ(lines.size(), 1u) << z.variant;
    if (!lines.empty()) out.push_back(lines[0]);
  }
  return out;
}

// The snapshot assembled from a line is the one the core reader makes of
// the same line written as an ELF core file.
TEST(CrashLine, TheAssembledCoreIsTheCoreReadersOfTheSynthesizedFile) {
  std::vector<std::string> lines =
      PreloadedLines({"null_deref-O0", "abort_assert-O2", "stack_overflow-O0", "wild_jump-O0", "dlopen_crash-O0"});
  for (const char* mode : {"deep", "overflow"})
    for (const auto& l : RunLinked(mode).lines) lines.push_back(l);
  ASSERT_GE(lines.size(), 7u);
  // aarch64 lines, from the aarch64 zoo under qemu-user where it is here:
  // a PIE, a stack overflow, an abort and a fault inside a handler.
  std::string so = Env("CORONER_CRASHLOG_A64_SO"), qemu = Which("qemu-aarch64");
  if (!so.empty() && !qemu.empty()) {
    const std::set<std::string> a64 = {"null_deref-pie", "stack_overflow-O0", "abort_assert-O2", "handler_crash-pac"};
    size_t before = lines.size();
    for (const auto& z : LoadA64Zoo())
      if (a64.count(z.variant))
        for (const auto& l : RunUnderQemu(z, so, qemu).lines) lines.push_back(l);
    EXPECT_EQ(lines.size() - before, a64.size());
  }
  for (const auto& text : lines) {
    auto line = ParseCrashLine(text);
    ASSERT_TRUE(line.ok()) << line.error().message;
    SCOPED_TRACE(line->comm);
    auto read = Core::Open(MakeMemorySource(SynthesizeCore(*line)), CoreOptions{false, {}});
    ASSERT_TRUE(read.ok()) << read.error().message;
    const Core& want = **read;
    std::unique_ptr<Core> got = AssembleCore(*line);
    EXPECT_EQ(want.arch(), line->arch);
    EXPECT_EQ(got->arch(), line->arch);
    ASSERT_FALSE(got->threads().empty());
    EXPECT_EQ(got->threads()[0].registers.arch, line->arch);
    ASSERT_EQ(got->threads().size(), 1u);
    ASSERT_EQ(want.threads().size(), 1u);
    EXPECT_EQ(got->threads()[0].tid, want.threads()[0].tid);
    EXPECT_EQ(got->threads()[0].cursig, want.threads()[0].cursig);
    for (size_t r = 0; r < kRegCount; ++r)
      EXPECT_EQ(got->threads()[0].registers.value[r], want.threads()[0].registers.value[r]) << "register " << r;
    ASSERT_TRUE(got->signal() && want.signal());
    EXPECT_EQ(got->signal()->signo, want.signal()->signo);
    EXPECT_EQ(got->signal()->code, want.signal()->code);
    EXPECT_EQ(got->signal()->fault_address, want.signal()->fault_address);
    ASSERT_TRUE(got->process() && want.process());
    EXPECT_EQ(got->process()->pid, want.process()->pid);
    EXPECT_EQ(got->process()->comm, want.process()->comm);
    EXPECT_EQ(got->process()->args, want.process()->args);
    EXPECT_EQ(got->auxv().phdr, want.auxv().phdr);
    EXPECT_EQ(got->auxv().pagesz, want.auxv().pagesz);
    ASSERT_EQ(got->files().size(), want.files().size());
    for (size_t i = 0; i < got->files().size(); ++i) {
      EXPECT_EQ(got->files()[i].path, want.files()[i].path);
      EXPECT_EQ(got->files()[i].start, want.files()[i].start);
      EXPECT_EQ(got->files()[i].offset, want.files()[i].offset);
    }
    ASSERT_EQ(got->modules().size(), want.modules().size());
    for (size_t i = 0; i < got->modules().size(); ++i) {
      const Module &a = got->modules()[i], &b = want.modules()[i];
      EXPECT_EQ(a.path, b.path);
      EXPECT_EQ(a.base, b.base);
      EXPECT_EQ(a.end, b.end);
      EXPECT_EQ(a.load_bias, b.load_bias) << a.path;
      EXPECT_EQ(a.build_id, b.build_id) << a.path;
    }
    EXPECT_TRUE(got->executable() && want.executable() && got->executable()->path == want.executable()->path);
    // The same mappings; the same bytes wherever the assembled core has any
    // (the file also holds the header pages, which the assembled core does
    // not need: the build-ids are the line's).
    const auto &gs = got->memory().segments(), &ws = want.memory().segments();
    ASSERT_EQ(gs.size(), ws.size());
    size_t words = 0;
    for (size_t i = 0; i < gs.size(); ++i) {
      EXPECT_EQ(gs[i].vaddr, ws[i].vaddr);
      EXPECT_EQ(gs[i].memsz, ws[i].memsz);
      EXPECT_EQ(gs[i].write, ws[i].write);
      EXPECT_EQ(gs[i].exec, ws[i].exec);
      for (uint64_t a = gs[i].vaddr; a < gs[i].vaddr + gs[i].present; a += 8, ++words)
        EXPECT_EQ(got->memory().Read<uint64_t>(a), want.memory().Read<uint64_t>(a)) << std::hex << a;
    }
    EXPECT_GE(words, line->stack.size() / 2);
  }
}

// 12,000 lines, enough for the scan's bulk load (indexes dropped, then
// built again at the end): every row as the same line scanned alone gives
// it, every index back, and a bulk load killed midway resumes to the same
// dataset.
TEST(Crashlog, ABulkLoadOfLinesGivesTheRowsOfEachLineKilledOrNot) {
  std::vector<std::string> sources = PreloadedLines({"null_deref-O0", "call_null-O0", "bus_error-O0"});
  ASSERT_EQ(sources.size(), 3u);
  // Each source line alone: the reference rows.
  std::string small = Work() + "/bulk-small.log", small_db = Work() + "/bulk-small.db";
  {
    std::ofstream out(small);
    for (const auto& l : sources) out << l << "\n";
  }
  // Named twice, read once.
  ASSERT_EQ(Coroner("scan --log " + small + " --log " + small + " --db " + small_db).status, 0);
  auto reference = LoadRows(small_db);
  ASSERT_EQ(reference.size(), 3u);
  // The big log: each source line under its own pid, behind a log prefix.
  const size_t n = 12000;
  std::string big = Work() + "/bulk.log";
  {
    std::ofstream out(big);
    for (size_t i = 0; i < n; ++i) {
      std::string l = sources[i % 3];
      size_t at = l.find(" pid="), end = l.find(' ', at + 1);
      l.replace(at, end - at, " pid=" + std::to_string(200000 + i));
      out << "2026-12-01T00:00:00Z pod-" << i << " " << l << "\n";
    }
  }
  std::string db = Work() + "/bulk.db";
  auto scan = Coroner("scan --log " + big + " --db " + db);
  ASSERT_EQ(scan.status, 0) << scan.err;
  auto rows = LoadRows(db);
  ASSERT_EQ(rows.size(), n);
  std::string big_abs = fs::absolute(big).lexically_normal().string();
  std::string small_abs = fs::absolute(small).lexically_normal().string();
  for (size_t i = 0; i < n; i += 997) {
    const Row& got = rows.at("log:" + big_abs + ":" + std::to_string(i + 1));
    const Row& want = reference.at("log:" + small_abs + ":" + std::to_string(i % 3 + 1));
    for (const char* column : {"status", "syndrome", "context", "signature", "frame_rows", "module_rows", "thread_rows"})
      EXPECT_EQ(got.at(column), want.at(column)) << column << " of line " << i + 1;
    EXPECT_EQ(got.at("pid"), std::to_string(200000 + i));
  }
  auto indexes = [](const std::string& path) {
    auto ds = Dataset::OpenReadOnly(path);
    std::set<std::string> names;
    if (!ds.ok()) return names;
    auto q = ds->Query("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'");
    if (q.ok())
      for (const auto& r : q->rows) names.insert(r[0].text);
    return names;
  };
  const std::set<std::string> all = {"cores_signature", "cores_time", "attributes_key", "frames_function", "modules_core"};
  EXPECT_EQ(indexes(db), all);

  // Killed once some lines are committed: the dataset answers queries,
  // and the next scan brings the indexes back and finishes the rest.
  std::string killed = Work() + "/bulk-killed.db";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 1);
    dup2(null, 2);
    execl(Env("CORONER_BIN").c_str(), "coroner", "scan", "--log", big.c_str(), "--db", killed.c_str(), nullptr);
    _exit(127);
  }
  int64_t committed = 0;
  // Polled until the first commit, for as long as a busy machine needs (a
  // cap against a hang only).
  for (int i = 0; i < 150000 && committed == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (auto ds = Dataset::OpenReadOnly(killed); ds.ok())
      if (auto q = ds->Query("SELECT count(*) FROM cores"); q.ok()) committed = q->rows[0][0].integer;
  }
  kill(pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  ASSERT_GT(committed, 0);
  ASSERT_LT(committed, static_cast<int64_t>(n)) << "the scan finished before it was killed";
  EXPECT_LT(indexes(killed).size(), all.size());  // dropped for the load
  {
    auto ds = Dataset::OpenReadOnly(killed);
    ASSERT_TRUE(ds.ok());
    auto q = ds->Query("SELECT count(*) FROM cores c JOIN frames f ON f.core = c.id WHERE f.function = 'walk'");
    ASSERT_TRUE(q.ok()) << q.error().message;
  }
  // Opened for writing, it has them again.
  ASSERT_TRUE(Dataset::Open(killed, false).ok());
  EXPECT_EQ(indexes(killed), all);
  auto resumed = Coroner("scan --log " + big + " --db " + killed);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_EQ(indexes(killed), all);
  ExpectSameRows(LoadRows(killed), rows);

  // Where SQLite can write no temporary file (its candidates /var/tmp and
  // /tmp read-only, the working directory /proc), the indexes are still
  // built, sorted in memory: the same rows, every index. In a private
  // mount namespace, so nothing outside the child sees the read-only view.
  std::string no_temp = "/dev/shm/coroner-crashlog-test-" + std::to_string(getpid()) + ".db";
  pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!MakeReadOnlyInPrivateNamespace({"/tmp", "/var/tmp"})) _exit(3);
    unsetenv("TMPDIR");
    unsetenv("SQLITE_TMPDIR");
    if (chdir("/proc") != 0) _exit(3);
    for (const char* dir : {"/tmp", "/var/tmp", "/proc"}) {  // no temporary file can be made there
      std::string probe = std::string(dir) + "/coroner-probe";
      int fd = open(probe.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0600);
      if (fd >= 0) {
        unlink(probe.c_str());
        _exit(4);
      }
    }
    int null = open("/dev/null", O_RDWR);
    dup2(null, 1);
    execl(Env("CORONER_BIN").c_str(), "coroner", "scan", "--log", big.c_str(), "--db", no_temp.c_str(), nullptr);
    _exit(127);
  }
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) GTEST_SKIP() << "no private mount namespace here";
  ASSERT_NE(WEXITSTATUS(status), 4) << "a temporary directory was still writable";
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "scan without a temporary directory failed";
  EXPECT_EQ(indexes(no_temp), all);
  ExpectSameRows(LoadRows(no_temp), rows);
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(no_temp + suffix);
}

// A real line, for the hostile variants below.
std::string RealLine() {
  static std::string line = [] {
    Linked l = RunLinked("chained");  // the program's own line, then the crash line
    return l.lines.size() < 2 ? std::string() : l.lines[1];
  }();
  return line;
}

TEST(CrashLine, PrefixesAreFineCutsAndJunkAreRejectedWithAReason) {
  std::string real = RealLine();
  ASSERT_FALSE(real.empty());
  ASSERT_TRUE(ParseCrashLine("2026-10-14T03:12:00Z pod-7 stderr F " + real).ok());
  size_t bt_end = real.find(' ', real.find(" bt="));
  size_t rejected = 0;
  for (size_t cut = 0; cut < real.size(); cut += 7) {
    auto l = ParseCrashLine(real.substr(0, cut));
    if (cut < bt_end) {
      ASSERT_FALSE(l.ok()) << cut;
      EXPECT_EQ(l.error().message.rfind("crash line: ", 0), 0u);
      ++rejected;
    }
    if (l.ok()) {
      EXPECT_FALSE(SynthesizeCore(*l).empty());
    }
  }
  EXPECT_GT(rejected, 50u);
  auto reason = [](const std::string& text) {
    auto l = ParseCrashLine(text);
    return l.ok() ? std::string("accepted") : l.error().message;
  };
  auto replace = [&](const std::string& key, const std::string& value) {
    size_t at = real.find(" " + key + "=");
    size_t end = real.find(' ', at + 1);
    return real.substr(0, at) + " " + key + "=" + value + (end == std::string::npos ? "" : real.substr(end));
  };
  EXPECT_NE(reason(replace("pid", "99999999999999999999")).find("pid"), std::string::npos);
  EXPECT_NE(reason(replace("addr", "0x1234567890abcdef0")).find("addr"), std::string::npos);
  EXPECT_NE(reason(replace("regs", "rax:0x1")).find("not 23"), std::string::npos);
  // The machine decides the register list, wherever `arch` stands.
  EXPECT_NE(reason(real + " arch=aarch64").find("is not x0:"), std::string::npos);
  EXPECT_NE(reason(real + " arch=riscv64").find("neither x86_64 nor aarch64"), std::string::npos);
  EXPECT_EQ(reason(real + " arch=x86_64"), "accepted");
  std::string a64_regs;
  for (int i = 0; i < 31; ++i) a64_regs += "x" + std::to_string(i) + ":0x" + std::to_string(i + 1) + ",";
  a64_regs += "sp:0x7ff0,pc:0x400614,pstate:0x80000000";
  EXPECT_NE(reason(replace("regs", a64_regs)).find("is not rax:"), std::string::npos);
  auto a64 = ParseCrashLine(replace("regs", a64_regs) + " arch=aarch64");
  ASSERT_TRUE(a64.ok()) << a64.error().message;
  EXPECT_EQ(a64->registers[29], 0x30u);  // x29
  EXPECT_EQ(a64->registers[33], 0x80000000u);  // pstate
  EXPECT_NE(reason(replace("regs", a64_regs.substr(0, a64_regs.rfind(','))) + " arch=aarch64").find("not 34"),
            std::string::npos);
  std::unique_ptr<Core> assembled = AssembleCore(*a64);
  EXPECT_EQ(assembled->arch(), Arch::kAarch64);
  EXPECT_EQ(assembled->threads()[0].registers.pc(), 0x400614u);
  EXPECT_EQ(assembled->threads()[0].registers.sp(), 0x7ff0u);
  EXPECT_NE(reason(replace("sig", "-3")).find("sig"), std::string::npos);
  EXPECT_NE(reason(replace("v", "2")).find("version"), std::string::npos);
  EXPECT_NE(reason(replace("segs", "7:0x1000-0x2000:0x0:rx")).find("module 7"), std::string::npos);
  EXPECT_NE(reason(real + " pid=1").find("twice"), std::string::npos);
  EXPECT_NE(reason(real + " extra=1").find("unknown field"), std::string::npos);
  EXPECT_NE(reason("coroner-crash: " + std::string(300 * 1024, 'x')).find("256 KiB"), std::string::npos);
  EXPECT_NE(reason("no marker here").find("no \"coroner-crash"), std::string::npos);
  std::string junk = "coroner-crash: ";
  for (int i = 0; i < 5000; ++i) junk += static_cast<char>((i * 7919 + 13) & 0xff);
  EXPECT_NE(reason(junk), "accepted");
  // Overlapping and wrapping segments still make a core that opens.
  auto hostile = ParseCrashLine(replace("segs", "0:0x1000-0x9000:0x0:rx;0:0x2000-0x3000:0x0:r;0:0xfffffffffffff000-0xffffffffffffffff:0x0:r"));
  ASSERT_TRUE(hostile.ok()) << hostile.error().message;
  auto core = Core::Open(MakeMemorySource(SynthesizeCore(*hostile)));
  EXPECT_TRUE(core.ok());
}

class Cleanup : public ::testing::Environment {
 public:
  void TearDown() override { fs::remove_all(Work()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

}  // namespace
}  // namespace coroner::testing
