// `analyze --pid` on real running processes: a program whose two threads
// deadlock on two mutexes while its main thread beats on (deadlock.c).
// Oracles: gdb attached to the same process after coroner let it go, gdb
// on the core coroner wrote, the program's own source (which thread holds
// which mutex) and its heartbeat (it runs on). Every bound here is for a
// hang only; none decides a result.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "unit/run_coroner.h"
#include "zoo/zoo.h"

namespace coroner::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Work() {
  static const std::string dir = ::testing::TempDir() + "/live-" + std::to_string(getpid());
  fs::create_directories(dir);
  return dir;
}

std::string Program() {
  const char* p = std::getenv("CORONER_LIVE_DEADLOCK");
  return p ? p : "";
}
std::string Busy() {
  const char* p = std::getenv("CORONER_LIVE_BUSY");
  return p ? p : "";
}

void Nap(long us) {
  timespec ts{us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, nullptr);
}

// /proc/PID/status's field.
std::string StatusField(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      size_t v = line.find_first_not_of(" \t", key.size() + 1);
      return v == std::string::npos ? "" : line.substr(v);
    }
  }
  return "";
}

// A target program, its stdout on a pipe: "ready", then a line now and
// then (the deadlock program's beats). By default the deadlock program.
class Target {
 public:
  explicit Target(const std::string& dir = Work(), std::vector<std::string> args = {Program(), "deadlock"}) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
      setrlimit(RLIMIT_CORE, &unlimited);
      if (chdir(dir.c_str()) != 0) _exit(127);
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      // args: the program's path, then its argv from argv[0].
      std::vector<char*> argv;
      for (size_t i = 1; i < args.size(); ++i) argv.push_back(args[i].data());
      argv.push_back(nullptr);
      execv(args[0].c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
    ready_ = NextLine() == "ready";
  }
  ~Target() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }
  pid_t pid() const { return pid_; }
  bool ready() const { return ready_; }

  // The next line it writes; empty when it writes none for 60 s (a hang).
  std::string NextLine() {
    for (;;) {
      size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 60000) <= 0) return "";
      char buf[4096];
      ssize_t n = read(out_, buf, sizeof buf);
      if (n <= 0) return "";
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }
  // The number of the next beat written after this call, skipping those
  // already in the pipe; -1 when none comes.
  long FreshBeat() {
    std::string line;
    // Drain what is there, then wait for one more.
    pollfd p{out_, POLLIN, 0};
    while (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
      char buf[65536];
      ssize_t n = read(out_, buf, sizeof buf);
      if (n <= 0) break;
    }
    buffer_.clear();
    NextLine();  // possibly cut by the drain
    line = NextLine();
    long beat = -1, gap = 0;
    return std::sscanf(line.c_str(), "beat %ld %ld", &beat, &gap) == 2 ? beat : -1;
  }
  // Kills it with `signo` and waits: the status.
  int KillWith(int signo) {
    kill(pid_, signo);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool ready_ = false;
  std::string buffer_;
};

// What the program's source says: checkpoint_writer holds ckpt_lock and
// waits for metrics_lock; metrics_flush the other way round.
struct Expected {
  int writer = 0, flusher = 0;  // their TIDs, by name
};

Expected ThreadsByName(const json& j) {
  Expected e;
  for (const auto& t : j["threads"]) {
    if (t["name"] == "checkpoint_writ") e.writer = t["tid"];
    if (t["name"] == "metrics_flush") e.flusher = t["tid"];
  }
  return e;
}

// gdb's values of an expression, one per line, of a process or a core.
std::vector<std::string> GdbPrint(const std::string& target, const std::vector<std::string>& exprs,
                                  const std::string& program = Program()) {
  std::string cmd = "timeout 300 gdb -nx -batch -q";
  for (const auto& e : exprs) cmd += " -ex 'printf \"@@%ld\\n\", (long)(" + e + ")'";
  cmd += " " + program + " " + target + " 2>/dev/null";
  auto r = Run(cmd);
  std::vector<std::string> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("@@", 0) == 0) out.push_back(line.substr(2));
  }
  return out;
}

// gdb's frames of every thread (tests/fixtures/gdb_frames.py), by TID.
std::map<int, std::vector<GdbFrame>> GdbFrames(const std::string& target, const std::string& name,
                                               const std::string& program = Program()) {
  std::string out = Work() + "/" + name + ".gdb";
  std::string cmd = std::string(std::getenv("CORONER_SOURCE_DIR")) + "/tests/fixtures/gdb_oracle.sh " + program +
                    " " + target + " " + out;
  if (Run(cmd + " 2>/dev/null").status != 0) return {};
  return ParseGdbOracle(out).frames;
}

// The pcs of a thread's frames as gdb gives them (its synthesized
// tail-call frames left out) and as coroner's JSON does, up to `limit`.
std::vector<uint64_t> GdbPcs(const std::vector<GdbFrame>& frames, size_t limit) {
  std::vector<uint64_t> out;
  for (const auto& f : frames) {
    if (f.type == "tailcall") continue;
    if (out.size() == limit) break;
    out.push_back(f.pc);
  }
  return out;
}
std::vector<uint64_t> OurPcs(const json& thread, size_t limit) {
  std::vector<uint64_t> out;
  for (const auto& f : thread["frames"]) {
    if (out.size() == limit) break;
    if (f["trust"] == "python" || f["trust"] == "tailcall") continue;  // GdbPcs leaves gdb's tail calls out too
    out.push_back(std::stoull(f["pc"].get<std::string>(), nullptr, 16));
  }
  return out;
}
const json* ThreadOf(const json& j, int tid) {
  for (const auto& t : j["threads"])
    if (t["tid"] == tid) return &t;
  return nullptr;
}

void ExpectDeadlockOf(const json& j, const Expected& e, const std::string& ckpt, const std::string& metrics) {
  const auto& d = j["diagnosis"];
  EXPECT_EQ(d["syndrome"], "deadlock") << d.dump();
  const json* w = ThreadOf(j, e.writer);
  const json* f = ThreadOf(j, e.flusher);
  ASSERT_TRUE(w && f);
  ASSERT_FALSE((*w)["lock_wait"].is_null()) << w->dump();
  ASSERT_FALSE((*f)["lock_wait"].is_null()) << f->dump();
  EXPECT_EQ((*w)["lock_wait"]["mutex"], metrics);
  EXPECT_EQ((*w)["lock_wait"]["owner"], e.flusher);
  EXPECT_EQ((*f)["lock_wait"]["mutex"], ckpt);
  EXPECT_EQ((*f)["lock_wait"]["owner"], e.writer);
  EXPECT_EQ((*w)["lock_wait"]["mutex_name"], "metrics_lock");
  EXPECT_EQ((*f)["lock_wait"]["mutex_name"], "ckpt_lock");
  bool named = false;
  for (const auto& ev : d["evidence"]) {
    std::string s = ev;
    named |= s.find("thread " + std::to_string(e.writer)) != std::string::npos &&
             s.find("thread " + std::to_string(e.flusher)) != std::string::npos &&
             s.find("write_checkpoint") != std::string::npos && s.find("flush_metrics") != std::string::npos;
  }
  EXPECT_TRUE(named) << d["evidence"].dump();
}

std::string HexOf(const std::string& decimal) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", std::stoull(decimal));
  return buf;
}

TEST(LiveSnapshot, NamesTheDeadlockAsGdbSeesItAndTheProcessRunsOn) {
  Target t;
  ASSERT_TRUE(t.ready()) << "the deadlock program did not start";
  std::string core = Work() + "/snapshot.core";
  auto r = Coroner("analyze --json --pid " + std::to_string(t.pid()) + " --write-core " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);

  // Let go: traced by no one, not stopped, and beating.
  EXPECT_EQ(StatusField(t.pid(), "TracerPid"), "0");
  std::string state = StatusField(t.pid(), "State");
  EXPECT_TRUE(state[0] == 'S' || state[0] == 'R') << state;
  EXPECT_GE(t.FreshBeat(), 0) << "the process did not run on after the snapshot";

  EXPECT_EQ(j["snapshot"]["pid"], t.pid());
  EXPECT_EQ(j["snapshot"]["threads"], 3);
  EXPECT_TRUE(j["snapshot"]["stopped_ms"].is_number());
  EXPECT_TRUE(j["signal"].is_null());
  EXPECT_TRUE(j["crashing_thread"].is_null());
  EXPECT_EQ(j["threads"][0]["tid"], t.pid());
  Expected e = ThreadsByName(j);
  ASSERT_TRUE(e.writer && e.flusher) << "thread names missing";

  // gdb, attached to the same process now: the mutexes' addresses and
  // owners, and the deadlocked threads' frames (which cannot have moved).
  auto live = GdbPrint(std::to_string(t.pid()), {"(long)&ckpt_lock", "(long)&metrics_lock",
                                                  "ckpt_lock.__data.__owner", "metrics_lock.__data.__owner"});
  ASSERT_EQ(live.size(), 4u);
  EXPECT_EQ(std::stoi(live[2]), e.writer);
  EXPECT_EQ(std::stoi(live[3]), e.flusher);
  ExpectDeadlockOf(j, e, HexOf(live[0]), HexOf(live[1]));
  auto gdb_live = GdbFrames(std::to_string(t.pid()), "live");
  for (int tid : {e.writer, e.flusher}) {
    ASSERT_TRUE(gdb_live.count(tid)) << tid;
    auto ours = OurPcs(*ThreadOf(j, tid), 8);
    EXPECT_GE(ours.size(), 6u);
    EXPECT_EQ(ours, GdbPcs(gdb_live[tid], ours.size())) << "thread " << tid;
  }
  EXPECT_EQ(StatusField(t.pid(), "TracerPid"), "0");

  // The core written: gdb reads it as coroner read the process, every
  // thread (the main one too: the core holds it where it was held).
  ASSERT_TRUE(fs::exists(core));
  auto gdb_core = GdbFrames(core, "core");
  ASSERT_EQ(gdb_core.size(), 3u);
  for (const auto& [tid, frames] : gdb_core) {
    const json* ours = ThreadOf(j, tid);
    ASSERT_TRUE(ours) << tid;
    // gdb stops at main; coroner goes on to _start.
    auto theirs = GdbPcs(frames, 8);
    EXPECT_GE(theirs.size(), 5u) << tid;
    EXPECT_EQ(OurPcs(*ours, theirs.size()), theirs) << "thread " << tid;
  }
  auto from_core = GdbPrint(core, {"ckpt_lock.__data.__owner", "metrics_lock.__data.__owner"});
  ASSERT_EQ(from_core.size(), 2u);
  EXPECT_EQ(std::stoi(from_core[0]), e.writer);
  // And coroner reads its own core as it read the process.
  auto again = Coroner("analyze --json " + core);
  ASSERT_EQ(again.status, 0) << again.err;
  json k = json::parse(again.out);
  EXPECT_TRUE(k["snapshot"].is_null());
  EXPECT_TRUE(k["signal"].is_null());
  ExpectDeadlockOf(k, e, HexOf(live[0]), HexOf(live[1]));
  for (const auto& th : j["threads"]) {
    EXPECT_EQ(OurPcs(th, 64), OurPcs(*ThreadOf(k, th["tid"]), 64)) << th["tid"];
  }
}

// coroner killed at any moment of a snapshot leaves the process neither
// stopped nor traced: the kernel lets a dead tracer's tracees go.
TEST(LiveSnapshot, KilledMidwayLeavesTheProcessRunning) {
  Target t;
  ASSERT_TRUE(t.ready());
  const char* bin = std::getenv("CORONER_BIN");
  std::string pid = std::to_string(t.pid());
  for (int i = 0; i < 48; ++i) {
    pid_t c = fork();
    if (c == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1), dup2(null, 2);
      execl(bin, "coroner", "analyze", "--pid", pid.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    Nap(i * 250);  // from before the attach to well into the analysis
    kill(c, SIGKILL);
    waitpid(c, nullptr, 0);
    EXPECT_EQ(StatusField(t.pid(), "TracerPid"), "0") << "after a kill at round " << i;
    std::string state = StatusField(t.pid(), "State");
    EXPECT_TRUE(state[0] == 'S' || state[0] == 'R') << state << " at round " << i;
    EXPECT_GE(t.FreshBeat(), 0) << "no beat after round " << i;
  }
}

// A process coroner may not read is refused in one line, exit status 1.
TEST(LiveSnapshot, RefusesWhatItMayNotRead) {
  // A pid that names no process: a child's, reaped.
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  auto r = Coroner("analyze --pid " + std::to_string(gone));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("no process " + std::to_string(gone)), std::string::npos) << r.err;

  // A zombie: a child that exited, not yet reaped.
  pid_t zombie = fork();
  if (zombie == 0) _exit(0);
  for (int i = 0; i < 6000 && StatusField(zombie, "State")[0] != 'Z'; ++i) Nap(10000);
  r = Coroner("analyze --json --pid " + std::to_string(zombie));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("zombie"), std::string::npos) << r.err;
  EXPECT_EQ(json::parse(r.out)["error"]["kind"], "io") << r.out;
  waitpid(zombie, nullptr, 0);

  // A process this test traces already.
  Target t;
  ASSERT_TRUE(t.ready());
  ASSERT_EQ(ptrace(PTRACE_SEIZE, t.pid(), nullptr, nullptr), 0);
  r = Coroner("analyze --json --pid " + std::to_string(t.pid()));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("already traced by process " + std::to_string(getpid())), std::string::npos) << r.err;
  EXPECT_EQ(json::parse(r.out)["error"]["kind"], "denied") << r.out;
  // A seized process is let go from a stop.
  ptrace(PTRACE_INTERRUPT, t.pid(), nullptr, nullptr);
  waitpid(t.pid(), nullptr, __WALL);
  ptrace(PTRACE_DETACH, t.pid(), nullptr, nullptr);
  EXPECT_GE(t.FreshBeat(), 0);

  // Another user's process: coroner run as nobody against this test's.
  if (getuid() == 0 && coroner::testing::Run("command -v setpriv >/dev/null").status == 0) {
    std::string copy = Work() + "/nobody";
    fs::create_directories(copy);
    fs::copy_file(std::getenv("CORONER_BIN"), copy + "/coroner", fs::copy_options::overwrite_existing);
    fs::permissions(Work(), fs::perms::all);
    fs::permissions(copy, fs::perms::all);
    auto n = coroner::testing::Run("setpriv --reuid=65534 --regid=65534 --clear-groups " + copy + "/coroner analyze --pid " +
                 std::to_string(t.pid()) + " 2>&1");
    EXPECT_EQ(n.status, 1) << n.out;
    EXPECT_NE(n.out.find("belongs to uid 0"), std::string::npos) << "[" << n.out << "]";
    EXPECT_EQ(n.out.find('\n'), n.out.size() - 1) << "one line: " << n.out;
  }
  EXPECT_EQ(StatusField(t.pid(), "TracerPid"), "0");
}

// A watchdog's SIGABRT on the deadlocked process: its kernel core is a
// deadlock, in the report and in the dataset's row alike.
TEST(LiveSnapshot, WatchdogCoreOfADeadlockIsADeadlock) {
  std::string dir = Work() + "/watchdog";
  fs::create_directories(dir);
  Target t(dir);
  ASSERT_TRUE(t.ready());
  pid_t pid = t.pid();
  // Its TIDs and mutexes as gdb sees them first (gdb lets it go after).
  auto live = GdbPrint(std::to_string(pid), {"(long)&ckpt_lock", "(long)&metrics_lock",
                                             "ckpt_lock.__data.__owner", "metrics_lock.__data.__owner"});
  ASSERT_EQ(live.size(), 4u);
  int status = t.KillWith(SIGABRT);
  std::string core;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().rfind("core", 0) == 0) core = f.path().string();
  if (core.empty() || !WIFSIGNALED(status) || !WCOREDUMP(status)) {
    GTEST_SKIP() << "the kernel wrote no core here (core_pattern): the live test covers the rest";
  }
  auto r = Coroner("analyze --json " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  Expected e{std::stoi(live[2]), std::stoi(live[3])};
  ExpectDeadlockOf(j, e, HexOf(live[0]), HexOf(live[1]));
  bool sent = false;
  for (const auto& ev : j["diagnosis"]["evidence"]) sent |= ev.get<std::string>().find("SIGABRT was sent by pid") == 0;
  EXPECT_TRUE(sent) << j["diagnosis"]["evidence"].dump();
  std::string db = dir + "/rows.db";
  ASSERT_EQ(Coroner("scan " + core + " --db " + db).status, 0);
  auto q = Coroner("query --db " + db + " \"SELECT syndrome FROM cores\" --json");
  ASSERT_EQ(q.status, 0) << q.err;
  auto rows = json::parse(q.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["syndrome"], "deadlock");
}

// The thread whose frames hold `function`.
const json* ThreadIn(const json& j, const std::string& function) {
  for (const auto& t : j["threads"])
    for (const auto& f : t["frames"])
      if (f["function"] == function) return &t;
  return nullptr;
}

// Two threads spin (busy.c): one on `fence` with a spin-wait hint, one on
// `ring.head` through a pointer; the main thread computes in registers.
// Each is named so, with the word it polls and the value the source gives
// it, live and in the kernel's core of the same process; gdb gives the
// words' addresses.
void ExpectSpins(const json& j, const std::string& fence, const std::string& head, const std::string& what,
                 bool main_computes = true) {
  SCOPED_TRACE(what);
  const json* f = ThreadIn(j, "wait_for_fence");
  const json* h = ThreadIn(j, "wait_for_head");
  ASSERT_TRUE(f && h) << j["threads"].dump();
  EXPECT_EQ((*f)["state"], "spinning");
  ASSERT_TRUE((*f)["spin"].is_object()) << f->dump();
  EXPECT_EQ((*f)["spin"]["word"], fence);
  EXPECT_EQ((*f)["spin"]["word_name"], "fence");
  EXPECT_EQ((*f)["spin"]["word_offset"], 0);
  EXPECT_EQ((*f)["spin"]["value"], 0);
  EXPECT_EQ((*f)["spin"]["width"], 4);
  EXPECT_EQ((*f)["spin"]["pauses"], true);
  EXPECT_EQ((*h)["state"], "spinning");
  ASSERT_TRUE((*h)["spin"].is_object()) << h->dump();
  EXPECT_EQ((*h)["spin"]["word"], head);
  EXPECT_EQ((*h)["spin"]["word_name"], "ring");
  EXPECT_EQ((*h)["spin"]["word_offset"], 12);
  EXPECT_EQ((*h)["spin"]["value"], 41);
  EXPECT_EQ((*h)["spin"]["pauses"], false);
  if (!main_computes) return;
  const json* c = ThreadIn(j, "compute");
  ASSERT_TRUE(c) << j["threads"].dump();
  EXPECT_EQ((*c)["state"], "running");
  EXPECT_TRUE((*c)["spin"].is_null());
}

TEST(LiveSnapshot, NamesSpinningThreadsAndTheWordTheyPoll) {
  std::string dir = Work() + "/spin";
  fs::create_directories(dir);
  Target t(dir, {Busy(), "busy", "spin"});
  ASSERT_TRUE(t.ready());
  // The main thread goes from writing "ready" into compute(): snapshots
  // until one finds it there (a synchronization, bounded for a hang only).
  json j;
  for (int attempt = 0; attempt < 3000; ++attempt) {
    auto r = Coroner("analyze --json --pid " + std::to_string(t.pid()));
    ASSERT_EQ(r.status, 0) << r.err;
    j = json::parse(r.out);
    if (ThreadIn(j, "compute")) break;
    Nap(10000);
  }
  auto text = Coroner("analyze --pid " + std::to_string(t.pid()));
  ASSERT_EQ(text.status, 0) << text.err;
  auto words = GdbPrint(std::to_string(t.pid()), {"(long)&fence", "(long)&ring.head"}, Busy());
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(StatusField(t.pid(), "TracerPid"), "0");
  ExpectSpins(j, HexOf(words[0]), HexOf(words[1]), "live");
  EXPECT_NE(text.out.find("spins on fence (" + HexOf(words[0]) + "), which holds 0"), std::string::npos) << text.out;
  EXPECT_EQ(j["diagnosis"]["syndrome"], "snapshot");

  int status = t.KillWith(SIGABRT);
  std::string core;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().rfind("core", 0) == 0) core = f.path().string();
  if (core.empty() || !WIFSIGNALED(status) || !WCOREDUMP(status)) {
    GTEST_SKIP() << "the kernel wrote no core here (core_pattern): the live half passed";
  }
  auto c = Coroner("analyze --json " + core);
  ASSERT_EQ(c.status, 0) << c.err;
  json k = json::parse(c.out);
  EXPECT_EQ(k["diagnosis"]["syndrome"], "external-signal");
  ExpectSpins(k, HexOf(words[0]), HexOf(words[1]), "core");
}

// The same spins on aarch64: busy.c built with Debian's cross compiler
// (not position-independent, so that its symbols' addresses are the
// oracle) and run under qemu-user, whose core of the guest, written when
// the guest is sent SIGABRT, coroner reads. qemu's cores hold no siginfo,
// so no syndrome is asserted.
TEST(LiveSnapshot, NamesSpinningThreadsOnAarch64) {
  if (testing::Run("command -v aarch64-linux-gnu-gcc qemu-aarch64 aarch64-linux-gnu-nm").status != 0)
    GTEST_SKIP() << "no aarch64 cross toolchain or qemu-user (make deps installs them)";
  std::string dir = Work() + "/spin-a64";
  fs::create_directories(dir);
  std::string bin = dir + "/busy";
  auto cc = testing::Run("aarch64-linux-gnu-gcc -g -O1 -pthread -no-pie -o " + bin + " " +
                std::getenv("CORONER_SOURCE_DIR") + "/tests/live/busy.c 2>&1");
  ASSERT_EQ(cc.status, 0) << cc.out;
  auto nm = testing::Run("aarch64-linux-gnu-nm --defined-only " + bin);
  std::map<std::string, uint64_t> symbols;
  std::istringstream lines(nm.out);
  std::string address, kind, name;
  while (lines >> address >> kind >> name) symbols[name] = std::stoull(address, nullptr, 16);
  ASSERT_TRUE(symbols.count("fence") && symbols.count("ring")) << nm.out;
  char fence[32], head[32];
  std::snprintf(fence, sizeof fence, "0x%llx", static_cast<unsigned long long>(symbols["fence"]));
  std::snprintf(head, sizeof head, "0x%llx", static_cast<unsigned long long>(symbols["ring"] + 12));
  std::string qemu = testing::Run("command -v qemu-aarch64").out;
  qemu.erase(qemu.find_last_not_of('\n') + 1);
  Target t(dir, {qemu, "qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", bin, "spin"});
  ASSERT_TRUE(t.ready());
  t.KillWith(SIGABRT);
  std::string core;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().rfind("qemu_", 0) == 0) core = f.path().string();
  ASSERT_FALSE(core.empty()) << "qemu wrote no core of the guest";
  auto r = Coroner("analyze --json --sysroot aarch64=/usr/aarch64-linux-gnu --exe " + bin + " " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  // The thread the signal went to is the crashing one; without siginfo,
  // nothing says it was sent, so it is not read as a spin. The main thread
  // may still be on its way from "ready" into compute().
  const json& crashed = j["threads"][j["crashing_thread"].get<size_t>()];
  if (&crashed == ThreadIn(j, "wait_for_fence") || &crashed == ThreadIn(j, "wait_for_head"))
    GTEST_SKIP() << "the signal went to a spinning thread";
  ExpectSpins(j, fence, head, "aarch64 core", false);
}

// Debian's own programs, running as users run them: each is snapshotted
// while it waits, goes on untraced and unstopped, and gdb attached after
// coroner let it go finds every thread's frames where coroner did (they
// wait in the kernel, so they cannot have moved).
class DebianProgram {
 public:
  DebianProgram(std::vector<std::string> argv, std::string ready_file = "") : ready_file_(std::move(ready_file)) {
    int in[2];
    if (pipe(in) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      close(in[0]);
      close(in[1]);
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    stdin_ = in[1];  // held open: a program reading its input waits in read()
  }
  ~DebianProgram() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdin_ >= 0) close(stdin_);
  }
  pid_t pid() const { return pid_; }
  // Whether every thread waits in a system call (and the ready file, if
  // any, is there), five checks in a row: a synchronization, bounded for
  // a hang only.
  bool WaitUntilWaiting() {
    int steady = 0;
    for (int i = 0; i < 6000 && steady < 5; ++i) {
      bool waiting = ready_file_.empty() || fs::exists(ready_file_);
      std::error_code ec;
      for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid_) + "/task", ec)) {
        std::ifstream sc(t.path() / "syscall");
        std::string first;
        sc >> first;
        waiting &= !first.empty() && first != "running" && first != "-1";
      }
      steady = waiting && !ec ? steady + 1 : 0;
      Nap(10000);
    }
    return steady == 5;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  std::string ready_file_;
};

TEST(LiveSnapshot, DebianProgramsAsGdbSeesThem) {
  std::string dir = Work() + "/debian";
  fs::create_directories(dir + "/nginx");
  std::ofstream(dir + "/nginx/nginx.conf") << "daemon off;\nmaster_process off;\npid " << dir
                                           << "/nginx/nginx.pid;\nerror_log /dev/null;\nevents {}\nhttp {\n"
                                           << "  access_log off;\n  server { listen unix:" << dir << "/nginx/sock; }\n}\n";
  struct Case {
    std::string name;
    std::vector<std::string> argv;
    std::string ready_file;
  };
  std::vector<Case> cases = {
      {"sleep", {"/bin/sleep", "1000"}, ""},
      {"cat", {"/bin/cat"}, ""},
      {"sqlite3", {"/usr/bin/sqlite3", ":memory:"}, ""},
      {"nginx", {"/usr/sbin/nginx", "-p", dir + "/nginx", "-c", dir + "/nginx/nginx.conf"}, dir + "/nginx/sock"},
      {"python3", {"/usr/bin/python3", "-c", "import threading, sys; threading.Thread(target=sys.stdin.read).start(); "
                                            "threading.Event().wait()"}, ""},
  };
  int tried = 0;
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    if (!fs::exists(c.argv[0])) continue;
    ++tried;
    DebianProgram p(c.argv, c.ready_file);
    ASSERT_TRUE(p.WaitUntilWaiting()) << "it never settled";
    auto r = Coroner("analyze --json --pid " + std::to_string(p.pid()));
    ASSERT_EQ(r.status, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_EQ(StatusField(p.pid(), "TracerPid"), "0");
    std::string state = StatusField(p.pid(), "State");
    EXPECT_TRUE(state[0] == 'S') << state;
    auto gdb = GdbFrames(std::to_string(p.pid()), "debian-" + c.name, c.argv[0]);
    ASSERT_EQ(gdb.size(), j["threads"].size());
    for (const auto& [tid, frames] : gdb) {
      const json* ours = ThreadOf(j, tid);
      ASSERT_TRUE(ours) << tid;
      EXPECT_NE((*ours)["state"], "running") << tid;
      auto theirs = GdbPcs(frames, 6);
      ASSERT_GE(theirs.size(), 2u) << tid;
      EXPECT_EQ(OurPcs(*ours, theirs.size()), theirs) << "thread " << tid;
    }
    EXPECT_EQ(StatusField(p.pid(), "TracerPid"), "0");
  }
  EXPECT_GE(tried, 3);
}

// 2,000 threads, each held and read: the snapshot lists every thread
// /proc lists, each where the program's source leaves it.
TEST(LiveSnapshot, HoldsTwoThousandThreads) {
  Target t(Work(), {Busy(), "busy", "many", "2000"});
  ASSERT_TRUE(t.ready());
  auto r = Coroner("analyze --json --pid " + std::to_string(t.pid()));
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  std::set<int> tasks;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(t.pid()) + "/task")) {
    tasks.insert(std::stoi(e.path().filename().string()));
  }
  ASSERT_EQ(tasks.size(), 2001u);
  EXPECT_EQ(j["snapshot"]["threads"], 2001);
  EXPECT_TRUE(j["snapshot"]["not_stopped"].empty());
  std::set<int> ours;
  size_t waiting = 0;
  for (const auto& th : j["threads"]) {
    ours.insert(th["tid"].get<int>());
    bool in_wait = false;
    for (const auto& f : th["frames"]) in_wait |= f["function"] == "wait_forever";
    waiting += in_wait && th["state"] == "futex wait";
  }
  EXPECT_EQ(ours, tasks);
  EXPECT_EQ(waiting, 2000u);
  EXPECT_EQ(StatusField(t.pid(), "TracerPid"), "0");
  EXPECT_EQ(StatusField(t.pid(), "State")[0], 'S');
}

// Threads made and ended, and children forked, while the snapshot is
// taken: each snapshot is whole or says what it lacks, and the process
// runs on, traced by no one.
TEST(LiveSnapshot, LetsAChurningProcessGo) {
  Target t(Work(), {Busy(), "busy", "churn"});
  ASSERT_TRUE(t.ready());
  for (int i = 0; i < 12; ++i) {
    auto r = Coroner("analyze --json --pid " + std::to_string(t.pid()));
    ASSERT_EQ(r.status, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_GE(j["snapshot"]["threads"].get<int>(), 1);
    EXPECT_EQ(j["threads"][0]["tid"], t.pid());
    EXPECT_EQ(StatusField(t.pid(), "TracerPid"), "0");
    EXPECT_NE(t.NextLine(), "") << "the process stopped making threads after snapshot " << i;
  }
}

// A process that dies while coroner reads it: a snapshot or a one-line
// reason, never a crash or a hang.
TEST(LiveSnapshot, AProcessDyingMidwayIsAnAnswer) {
  for (int i = 0; i < 12; ++i) {
    Target t(Work(), {Busy(), "busy", "churn"});
    ASSERT_TRUE(t.ready());
    std::string pid = std::to_string(t.pid());
    std::string out = Work() + "/dying";
    auto r = coroner::testing::Run("(sleep 0.00" + std::to_string(i % 10) + "; kill -9 " + pid + ") & " +
                                   std::getenv("CORONER_BIN") + " analyze --json --pid " + pid + " > " + out +
                                   ".json 2> " + out + ".err; echo $?; wait");
    int status = std::stoi(r.out);
    EXPECT_TRUE(status == 0 || status == 1) << status;
    std::string err = ReadAll(out + ".err");
    if (status == 1) {
      EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
    } else {
      json parsed;
      EXPECT_NO_THROW(parsed = json::parse(ReadAll(out + ".json")));
    }
  }
}

class Cleanup : public ::testing::Environment {
 public:
  void TearDown() override { fs::remove_all(Work()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

}  // namespace
}  // namespace coroner::testing
