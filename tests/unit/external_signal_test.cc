// A process killed by another one did not crash: real cores of Debian's
// /bin/sleep, blocked in clock_nanosleep and sent SIGSEGV or SIGABRT with
// kill() by this test, are `external-signal`, with the sender's pid and uid
// and the system call the thread was in (the kernel's core where the core
// pattern leaves it in the working directory, else gdb's core of the same
// delivery).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "unit/run_coroner.h"

namespace coroner::testing {
namespace {

namespace fs = std::filesystem;

std::string Work() {
  static const std::string dir = ::testing::TempDir() + "/external-signal-" + std::to_string(getpid());
  return dir;
}

// /bin/sleep 1000 in `dir` with core dumps on; its pid.
pid_t StartSleep(const std::string& dir) {
  fs::create_directories(dir);
  pid_t pid = fork();
  if (pid == 0) {
    rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &unlimited);
    if (chdir(dir.c_str()) != 0) _exit(127);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0), dup2(null, 1), dup2(null, 2);
    execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Until the process sleeps in the kernel (state S): a synchronization, not
// a result. The bound is for a hang only.
bool WaitAsleep(pid_t pid) {
  for (int i = 0; i < 6000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string all((std::istreambuf_iterator<char>(stat)), {});
    auto close = all.rfind(')');
    if (close != std::string::npos && close + 2 < all.size() && all[close + 2] == 'S') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

struct Killed {
  std::string core;
  pid_t sender = 0;  // who sent the signal
};

Killed KillSleep(int signo, const std::string& dir) {
  Killed k;
  pid_t pid = StartSleep(dir);
  if (pid <= 0 || !WaitAsleep(pid)) return k;
  kill(pid, signo);
  int status = 0;
  waitpid(pid, &status, 0);
  k.sender = getpid();
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("core", 0) == 0) k.core = e.path().string();
  if (!k.core.empty() && WIFSIGNALED(status) && WCOREDUMP(status)) return k;
  // The kernel wrote its core elsewhere: gdb attaches, a shell it starts
  // sends the signal, and gdb dumps the process as the signal stops it.
  pid = StartSleep(dir + "/gdb");
  if (pid <= 0 || !WaitAsleep(pid)) return {};
  std::string core = dir + "/gdb.core";
  std::string cmd = "gdb -nx -batch -p " + std::to_string(pid) + " -ex 'shell echo $$ > " + dir +
                    "/sender; kill -" + std::to_string(signo) + " " + std::to_string(pid) +
                    "' -ex continue -ex 'generate-core-file " + core + "' -ex kill > /dev/null 2>&1";
  int rc = std::system(cmd.c_str());
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  std::ifstream sender(dir + "/sender");
  if (rc != 0 || !(sender >> k.sender) || !fs::exists(core)) return {};
  k.core = core;
  return k;
}

class ExternalSignal : public ::testing::TestWithParam<int> {};

TEST_P(ExternalSignal, IsNotACrash) {
  int signo = GetParam();
  Killed k = KillSleep(signo, Work() + "/" + std::to_string(signo));
  ASSERT_FALSE(k.core.empty()) << "no core of the killed sleep, from the kernel or gdb";
  auto r = Coroner("analyze --json " + k.core);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["signal"]["number"], signo);
  EXPECT_EQ(j["signal"]["code_name"], "SI_USER");
  EXPECT_TRUE(j["signal"]["fault_address"].is_null());
  EXPECT_EQ(j["signal"]["sender_pid"], k.sender);
  const auto& d = j["diagnosis"];
  EXPECT_EQ(d["syndrome"], "external-signal") << d.dump();
  EXPECT_EQ(d["context"], "runtime");
  bool sender = false, syscall = false;
  for (const auto& e : d["evidence"]) {
    std::string text = e;
    sender |= text.find("sent by pid " + std::to_string(k.sender) + " (uid " + std::to_string(getuid()) + ")") !=
              std::string::npos;
    syscall |= text.find("blocked in system call 230 (clock_nanosleep)") != std::string::npos;
  }
  EXPECT_TRUE(sender) << d["evidence"].dump();
  EXPECT_TRUE(syscall) << d["evidence"].dump();
  // The scan's row says the same, so epi keeps these out of the crashes.
  std::string db = Work() + "/" + std::to_string(signo) + ".db";
  ASSERT_EQ(Coroner("scan " + k.core + " --db " + db).status, 0);
  auto q = Coroner("query --db " + db + " \"SELECT syndrome, signature FROM cores\" --json");
  ASSERT_EQ(q.status, 0) << q.err;
  auto rows = nlohmann::json::parse(q.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["syndrome"], "external-signal");
  EXPECT_EQ(rows[0]["signature"].get<std::string>().rfind("external-signal", 0), 0u);
}

INSTANTIATE_TEST_SUITE_P(SegvAndAbrt, ExternalSignal, ::testing::Values(SIGSEGV, SIGABRT),
                         [](const auto& p) { return p.param == SIGSEGV ? "SIGSEGV" : "SIGABRT"; });

class Cleanup : public ::testing::Environment {
 public:
  void TearDown() override { fs::remove_all(Work()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

}  // namespace
}  // namespace coroner::testing
