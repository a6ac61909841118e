// `coroner scan` on a generated fleet of real zoo cores with sidecars and
// bad inputs: one row per input, labels as the crashers' sources say,
// metadata as the sidecars say, the same dataset whatever --jobs, resumable
// after kill -9, unchanged inputs skipped, readable after a killed merge.
#include <arpa/inet.h>
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/core.h"
#include "dataset/dataset.h"
#include "dataset/scanner.h"
#include "dataset/timestamps.h"
#include "unit/run_coroner.h"
#include "zoo/fleet.h"
#include "zoo/scan_rows.h"

namespace coroner::testing {
namespace {

namespace fs = std::filesystem;

// A socket listening on 127.0.0.1 at a port the kernel chose; `url` is set
// to PATH on it.
int ListenOnLoopback(std::string& url, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    throw std::runtime_error("cannot listen on 127.0.0.1");
  }
  url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + path;
  return fd;
}

// A URL whose server never answers: the port listens on 127.0.0.1, so the
// connection completes in the kernel's backlog, and nothing ever accepts
// it. An input that hangs until a timeout, whatever the machine's speed.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ListenOnLoopback(url_, "/hangs.core");
  }
  ~SilentServer() { close(fd_); }
  const std::string& url() const { return url_; }

 private:
  int fd_ = -1;
  std::string url_;
};

// A range server over one file that never answers a request for a range
// starting inside [stall_from, stall_to) (a bucket whose transfer stalls),
// and serves every other whole: given a core's stack, the notes arrive, the
// stack the unwinding starts from does not.
class StallingServer {
 public:
  StallingServer(const std::string& file, uint64_t stall_from, uint64_t stall_to)
      : stall_from_(stall_from), stall_to_(stall_to) {
    std::ifstream in(file, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), {});
    fd_ = ListenOnLoopback(url_, "/stalls.core");
    thread_ = std::thread([this] { Serve(); });
  }
  ~StallingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    for (int c : stalled_) close(c);
  }
  const std::string& url() const { return url_; }

 private:
  void Serve() {
    for (;;) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      unsigned long long first = 0, last = bytes_.size() - 1;
      if (size_t r = request.find("Range: bytes="); r != std::string::npos)
        std::sscanf(request.c_str() + r + 13, "%llu-%llu", &first, &last);
      if ((first >= stall_from_ && first < stall_to_) || first >= bytes_.size()) {
        stalled_.push_back(c);  // never answered; closed when the test ends
        continue;
      }
      last = std::min<unsigned long long>(last, bytes_.size() - 1);
      std::string reply = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(first) + "-" +
                          std::to_string(last) + "/" + std::to_string(bytes_.size()) +
                          "\r\nContent-Length: " + std::to_string(last - first + 1) + "\r\nConnection: close\r\n\r\n" +
                          bytes_.substr(first, last - first + 1);
      for (size_t at = 0; at < reply.size();) {
        ssize_t n = write(c, reply.data() + at, reply.size() - at);
        if (n <= 0) break;
        at += static_cast<size_t>(n);
      }
      close(c);
    }
  }

  std::string bytes_, url_;
  uint64_t stall_from_, stall_to_;
  int fd_ = -1;
  std::vector<int> stalled_;
  std::thread thread_;
};

class ScanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Normalized as the scan stores paths (TempDir ends with a slash).
    work_ = new std::string(
        fs::path(::testing::TempDir() + "/scan-test-" + std::to_string(getpid())).lexically_normal().string());
    fleet_ = new Fleet(MakeFleet(*work_ + "/fleet", 4, 1234));
    // The reference: one scan with two jobs.
    auto r = Coroner("scan " + fleet_->dir + " --db " + Db("ref") + " --jobs 2");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  static void TearDownTestSuite() {
    RemoveAll(*work_);
    delete fleet_;
    delete work_;
  }
  static std::string Db(const std::string& name) { return *work_ + "/" + name + ".db"; }

  static std::string* work_;
  static Fleet* fleet_;
};
std::string* ScanTest::work_ = nullptr;
Fleet* ScanTest::fleet_ = nullptr;

TEST_F(ScanTest, OneRowPerInputWithTheCrashersLabels) {
  ASSERT_GE(fleet_->cores.size(), 200u);
  auto rows = LoadRows(Db("ref"));
  ASSERT_EQ(rows.size(), fleet_->size());
  auto expect = LoadExpectations();
  for (const auto& c : fleet_->cores) {
    ASSERT_TRUE(rows.count(c.path)) << c.path;
    const Row& r = rows.at(c.path);
    EXPECT_EQ(r.at("status"), "ok") << c.path << ": " << r.at("error");
    EXPECT_EQ(r.at("syndrome"), expect.at(c.zoo.crasher).syndrome) << c.path;
    EXPECT_EQ(r.at("context"), expect.at(c.zoo.crasher).context) << c.path;
    EXPECT_EQ(std::stoi(r.at("threads")), expect.at(c.zoo.crasher).threads) << c.path;
    EXPECT_EQ(r.at("signal_name"), expect.at(c.zoo.crasher).signal) << c.path;
    EXPECT_EQ(r.at("signature").rfind(expect.at(c.zoo.crasher).syndrome, 0), 0u) << r.at("signature");
    // The program's own functions, as the crashers' sources name them; the
    // abort and assert machinery skipped.
    static const std::map<std::string, std::string> kSignatures = {
        {"null_deref-O0", "null-deref | walk | main"},
        {"abort_assert-O0", "abort-assert | check_balance | main"},
        {"abort_assert-static", "abort-assert | check_balance | main"},
        {"dlopen_crash-O0", "null-deref | plugin_step | plugin_run | main"},
        {"many_threads-O0", "null-deref | bump_counter | worker"},
        {"return_to_null-O0", "return-to-null"},  // the stack holds no frame of the program any more
    };
    if (auto it = kSignatures.find(c.zoo.variant); it != kSignatures.end()) {
      EXPECT_EQ(r.at("signature"), it->second);
    }
    EXPECT_GT(std::stoll(r.at("frames")), 0) << c.path;
  }
  for (const auto& b : fleet_->bad) {
    ASSERT_TRUE(rows.count(b.path)) << b.path;
    EXPECT_EQ(rows.at(b.path).at("status"), "error") << b.path;
    EXPECT_EQ(rows.at(b.path).at("error").rfind(b.error_kind + ":", 0), 0u) << rows.at(b.path).at("error");
  }
  for (const auto& h : fleet_->halves) {  // a partial result that says what is missing
    ASSERT_TRUE(rows.count(h)) << h;
    EXPECT_EQ(rows.at(h).at("status"), "ok") << rows.at(h).at("error");
    EXPECT_EQ(rows.at(h).at("truncated"), "1");
    EXPECT_NE(rows.at(h).at("warnings"), "NULL");
  }
}

// analyze and scan are one processor at two depths: on every zoo core they
// agree on the syndrome, the context, the signature and the crashing
// thread's frames (as far as the scan's 256 frames go).
TEST_F(ScanTest, AnalyzeAndScanAgreeOnEveryZooCore) {
  auto ds = Dataset::OpenReadOnly(Db("ref"));
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  std::set<std::string> seen;
  size_t frames_compared = 0;
  for (const auto& c : fleet_->cores) {
    if (!seen.insert(c.zoo.variant).second) continue;
    SCOPED_TRACE(c.path);
    auto r = Coroner("analyze --json " + c.path);
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    std::string quoted;
    for (char ch : c.path) quoted += ch == '\'' ? std::string("''") : std::string(1, ch);
    auto row = ds->Query("SELECT id, syndrome, context, signature FROM cores WHERE path = '" + quoted + "'");
    ASSERT_TRUE(row.ok() && row->rows.size() == 1u);
    EXPECT_EQ(row->rows[0][1].text, j["diagnosis"]["syndrome"]);
    EXPECT_EQ(row->rows[0][2].text, j["diagnosis"]["context"]);
    EXPECT_EQ(row->rows[0][3].text, j["diagnosis"]["signature"]);
    // The signature begins with the syndrome, and names frames of the
    // crashing thread that analyze shows.
    std::string signature = j["diagnosis"]["signature"];
    EXPECT_EQ(signature.rfind(j["diagnosis"]["syndrome"].get<std::string>(), 0), 0u) << signature;
    auto frames = ds->Query("SELECT \"index\", pc, function, trust, inlined FROM frames WHERE core = " +
                            std::to_string(row->rows[0][0].integer) + " ORDER BY \"index\"");
    ASSERT_TRUE(frames.ok());
    const auto& want = j["threads"][j["crashing_thread"].get<size_t>()]["frames"];
    ASSERT_FALSE(frames->rows.empty());
    ASSERT_LE(frames->rows.size(), want.size());
    if (frames->rows.size() < want.size()) {
      EXPECT_EQ(frames->rows.size(), 256u);  // the scan's limit, and nothing else, cut it
    }
    for (size_t i = 0; i < frames->rows.size(); ++i) {
      const auto& f = frames->rows[i];
      const auto& w = want[i];
      EXPECT_EQ(f[0].integer, w["index"].get<int64_t>());
      EXPECT_EQ(f[1].text, w["pc"]) << i;
      EXPECT_EQ(f[2].type == QueryValue::Type::kNull ? nlohmann::json(nullptr) : nlohmann::json(f[2].text),
                w["function"])
          << i;
      EXPECT_EQ(f[3].text, w["trust"]) << i;
      EXPECT_EQ(f[4].integer != 0, w["inlined"].get<bool>()) << i;
      ++frames_compared;
    }
  }
  EXPECT_GE(seen.size(), 30u);
  EXPECT_GT(frames_compared, 300u);
}

// epi re-signs the cores from their stored frames when a rules file adds to
// the skip-list; with an addition that names no frame, it makes each core's
// signature again exactly as the scan stored it: re-raised faults (the
// handler's frames left out), tail calls and Python frames included.
TEST_F(ScanTest, EpiResignsFromTheRowsAsTheProcessorSigned) {
  std::string rules = *work_ + "/noop-skip.toml";
  std::ofstream(rules) << "[signature]\nskip = [\"no_function_is_called_this\"]\n";
  auto counts = [](const std::string& out) {
    std::map<std::string, int> by_signature;
    const auto report = nlohmann::json::parse(out);
    for (const auto& c : report["clusters"]) by_signature[c["signature"].get<std::string>()] += c["count"].get<int>();
    return by_signature;
  };
  auto stored = Coroner("epi --db " + Db("ref") + " --json");
  ASSERT_EQ(stored.status, 0) << stored.err;
  auto resigned = Coroner("epi --db " + Db("ref") + " --json --rules " + rules);
  ASSERT_EQ(resigned.status, 0) << resigned.err;
  auto want = counts(stored.out);
  EXPECT_GT(want.size(), 20u);
  EXPECT_EQ(counts(resigned.out), want);
  // The re-raised faults are among them, named by the code that faulted
  // (reraise.c's parse_header), not by the handler that re-raised.
  EXPECT_TRUE(want.count("null-deref | strlen | parse_header | main")) << stored.out.substr(0, 2000);
}

TEST_F(ScanTest, MetadataFromTheSidecars) {
  auto rows = LoadRows(Db("ref"));
  for (const auto& c : fleet_->cores) {
    const Row& r = rows.at(c.path);
    EXPECT_EQ(r.at("time"), FormatIso8601(c.time));
    EXPECT_EQ(r.at("time_source"), "sidecar");
    EXPECT_EQ(std::stoll(r.at("uptime")), c.time - c.boot_time);
    EXPECT_NE(r.at("attributes").find("host=" + c.host + ";"), std::string::npos) << r.at("attributes");
    EXPECT_NE(r.at("attributes").find("region=" + c.region), std::string::npos);
  }
  // No sidecar: the time is the file's creation, when the file system
  // keeps it and it is at most 10 minutes before the mtime; else the mtime.
  struct statx st {};
  ASSERT_EQ(::statx(AT_FDCWD, fleet_->bad[0].path.c_str(), 0, STATX_MTIME | STATX_BTIME, &st), 0);
  auto ns = [](const struct statx_timestamp& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; };
  int64_t mtime = ns(st.stx_mtime), btime = ns(st.stx_btime);
  bool born = (st.stx_mask & STATX_BTIME) && btime <= mtime && mtime - btime <= int64_t{600} * 1000000000;
  EXPECT_EQ(rows.at(fleet_->bad[0].path).at("time"), FormatIso8601((born ? btime : mtime) / 1000000000));
  EXPECT_EQ(rows.at(fleet_->bad[0].path).at("time_source"), born ? "btime" : "mtime");
}

// The threads table's registers column, against gdb's `info registers` on
// the same cores: every thread, every register both name.
TEST_F(ScanTest, ThreadRegistersAreGdbs) {
  auto ds = Dataset::OpenReadOnly(Db("ref"));
  ASSERT_TRUE(ds.ok());
  std::set<std::string> seen;
  size_t compared = 0;
  for (const auto& c : fleet_->cores) {
    if (!seen.insert(c.zoo.variant).second) continue;
    GdbOracle g = ParseGdbOracle(c.zoo.oracle);
    auto q = ds->Query("SELECT t.tid, t.registers FROM threads t JOIN cores c ON c.id = t.core WHERE c.path = '" +
                       c.path + "'");
    ASSERT_TRUE(q.ok());
    ASSERT_EQ(q->rows.size(), g.threads.size()) << c.path;
    for (const auto& row : q->rows) {
      auto gt = std::find_if(g.threads.begin(), g.threads.end(),
                             [&](const GdbThread& t) { return t.tid == row[0].integer; });
      ASSERT_NE(gt, g.threads.end()) << c.path << " thread " << row[0].integer;
      auto j = nlohmann::json::parse(row[1].text, nullptr, false);
      ASSERT_TRUE(j.is_object()) << row[1].text;
      size_t common = 0;
      for (const auto& [name, value] : gt->registers) {
        if (!j.contains(name)) continue;
        EXPECT_EQ(std::stoull(j[name].get<std::string>(), nullptr, 16), value) << c.path << " " << name;
        ++common;
      }
      EXPECT_GE(common, 17u) << row[1].text;
      compared += common;
    }
  }
  EXPECT_GT(compared, 500u);
}

TEST_F(ScanTest, TheDatasetDoesNotDependOnJobs) {
  auto r = Coroner("scan " + fleet_->dir + " --db " + Db("one-job") + " --jobs 1");
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectSameRows(LoadRows(Db("one-job")), LoadRows(Db("ref")));
}

TEST_F(ScanTest, ARescanSkipsUnchangedInputs) {
  std::string db = Db("rescan");
  fs::copy_file(Db("ref"), db);
  auto again = Coroner("scan " + fleet_->dir + " --db " + db);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("0 analyzed (0 ok, 0 error), " + std::to_string(fleet_->size()) + " unchanged"),
            std::string::npos)
      << again.out;
  // A changed input (a core replaced by a text file) is analyzed again.
  std::string changed = *work_ + "/changed.core";
  fs::copy_file(fleet_->cores[0].zoo.core, changed);
  ASSERT_EQ(Coroner("scan " + changed + " --db " + db).status, 0);
  EXPECT_EQ(LoadRows(db).at(changed).at("status"), "ok");
  { std::ofstream(changed, std::ios::trunc) << "now it is text"; }
  auto third = Coroner("scan " + changed + " --db " + db);
  EXPECT_NE(third.out.find("1 analyzed (0 ok, 1 error)"), std::string::npos) << third.out;
  // The summary counts it by its kind: a text file is no ELF file.
  EXPECT_NE(third.out.find("errors: 1 not-elf\n"), std::string::npos) << third.out;
  EXPECT_EQ(LoadRows(db).at(changed).at("status"), "error");
  EXPECT_EQ(LoadRows(db).size(), fleet_->size() + 1);  // replaced, not added
  auto forced = Coroner("scan " + changed + " --db " + db + " --force");
  EXPECT_NE(forced.out.find("1 analyzed"), std::string::npos) << forced.out;
  fs::remove(changed);
}

TEST_F(ScanTest, KillNineThenResumeLeavesEveryCoreOnce) {
  std::string db = Db("killed");
  // The silent input keeps the scan from finishing, however fast it is, so
  // the kill always lands mid-scan.
  SilentServer silent;
  std::string cmd = std::string(std::getenv("CORONER_BIN")) + " scan " + silent.url() + " " + fleet_->dir + " --db " +
                    db + " --jobs 2 --timeout 3600";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >/dev/null 2>&1").c_str(), nullptr);
    _exit(127);
  }
  setpgid(pid, pid);
  // Kill the scan and its workers once some cores are committed, most not.
  size_t committed = 0;
  // Polled until the first commit, for as long as a busy machine needs (a
  // cap against a hang only).
  for (int i = 0; i < 60000 && committed == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (auto ds = Dataset::OpenReadOnly(db); ds.ok()) {
      if (auto q = ds->Query("SELECT count(*) FROM cores"); q.ok()) committed = static_cast<size_t>(q->rows[0][0].integer);
    }
  }
  kill(-pid, SIGKILL);
  int status;
  waitpid(pid, &status, 0);
  ASSERT_GT(committed, 0u);
  auto partial = LoadRows(db);
  EXPECT_FALSE(partial.count(silent.url())) << "the scan finished before it was killed";
  for (const auto& [path, row] : partial) {  // no half-written core: each has its threads and modules
    if (row.at("status") == "ok" && row.at("truncated") == "0") {
      EXPECT_GT(std::stoi(row.at("threads")), 0) << path;
      EXPECT_GT(std::stoi(row.at("modules")), 0) << path;
    }
  }
  auto resumed = Coroner("scan " + fleet_->dir + " --db " + db + " --jobs 2");
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find(std::to_string(partial.size()) + " unchanged"), std::string::npos) << resumed.out;
  ExpectSameRows(LoadRows(db), LoadRows(Db("ref")));
  auto count = Dataset::OpenReadOnly(db)->Query("SELECT count(*), count(DISTINCT path) FROM cores");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->rows[0][0].integer, static_cast<int64_t>(fleet_->size()));
  EXPECT_EQ(count->rows[0][1].integer, static_cast<int64_t>(fleet_->size()));
}

TEST_F(ScanTest, ListsGlobsAndVanishedEntries) {
  std::string list = *work_ + "/inputs.txt";
  std::string vanished = fleet_->dir + "/vanished.core";
  {
    std::ofstream out(list);
    out << "# a comment\n\n" << fleet_->cores[0].path << "\n" << vanished << "\n";
    out << "@" << *work_ << "/inner.txt\n";
    std::ofstream(*work_ + "/inner.txt") << fleet_->cores[1].path << "\n";
  }
  std::string db = Db("list");
  auto r = Coroner("scan @" + list + " '" + fleet_->dir + "/b/c/c0-*.core' --db " + db);
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = LoadRows(db);
  size_t globbed = 0;
  for (const auto& c : fleet_->cores) {
    globbed += c.path.find("/b/c/c0-") != std::string::npos && c.path.size() > 5 &&
               c.path.compare(c.path.size() - 5, 5, ".core") == 0;
  }
  ASSERT_GT(globbed, 0u);
  EXPECT_EQ(rows.size(), 3 + globbed);
  ASSERT_TRUE(rows.count(vanished));  // listed, gone by the time it is read: an error row
  EXPECT_EQ(rows.at(vanished).at("status"), "error");
  EXPECT_NE(rows.at(vanished).at("error").find("No such file"), std::string::npos) << rows.at(vanished).at("error");
  EXPECT_EQ(rows.at(fleet_->cores[1].path).at("status"), "ok");
}

TEST_F(ScanTest, AnInputThatHangsTimesOut) {
  SilentServer silent;
  std::string db = Db("timeout");
  // One job: the core after the silent input needs the replaced worker. The
  // short timeout decides only for the input that can never finish; the
  // real core gets a row either way (on a very busy machine, a timed-out one).
  auto r = Coroner("scan " + silent.url() + " " + fleet_->cores[0].path + " --db " + db + " --timeout 1 --jobs 1");
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = LoadRows(db);
  ASSERT_EQ(rows.size(), 2u);
  // Tried twice: the second time for the notes alone, which hang too.
  EXPECT_EQ(rows.at(silent.url()).at("status"), "error");
  EXPECT_EQ(rows.at(silent.url()).at("error"),
            "analysis timed out after 1 s; reading the notes alone failed too: analysis timed out after 1 s");
  const auto& real = rows.at(fleet_->cores[0].path);
  if (real.at("status") != "ok") {
    EXPECT_EQ(real.at("error").rfind("analysis timed out after 1 s", 0), 0u) << real.at("error");
  }
}

// A core whose full analysis cannot finish keeps a row at the depth the
// notes give: the first try hangs on a range of memory its server never
// sends and is stopped by the timeout (a hang, whatever the machine's
// speed); the second reads the notes alone, all of which come. The row says
// `partial` and why, and holds every thread's registers, the signal and the
// modules, as the core's own full scan has them.
TEST_F(ScanTest, ACoreWhoseAnalysisHangsKeepsAPartialRow) {
  const std::string core = ZooDir() + "/cores/null_deref-O0.core";
  // The crashing thread's stack: where its bytes are in the core.
  auto file = OpenFileSource(core);
  ASSERT_TRUE(file.ok());
  auto opened = Core::Open(std::move(*file));
  ASSERT_TRUE(opened.ok());
  const Core& c = **opened;
  const Segment* stack = c.memory().Find(c.threads()[c.crashing_thread()].registers.sp());
  ASSERT_TRUE(stack && stack->filesz > 0);
  StallingServer server(core, stack->offset, stack->offset + stack->filesz);
  std::string db = Db("partial");
  // The timeout decides nothing here but when the hung try is stopped: the
  // notes, served from this machine, take milliseconds of it.
  auto r = Coroner("scan " + server.url() + " " + core + " --db " + db + " --timeout 10 --jobs 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1 partial"), std::string::npos) << r.out;
  auto rows = LoadRows(db);
  ASSERT_EQ(rows.size(), 2u);
  const Row& partial = rows.at(server.url());
  const Row& full = rows.at(core);
  EXPECT_EQ(partial.at("status"), "partial");
  EXPECT_EQ(partial.at("error"),
            "analysis timed out after 10 s; the row holds the notes alone (registers, signal, modules)");
  EXPECT_EQ(full.at("status"), "ok");
  for (const char* column : {"threads", "signal", "signal_name", "si_code", "fault_address", "pid", "comm", "exe"})
    EXPECT_EQ(partial.at(column), full.at(column)) << column;
  EXPECT_EQ(partial.at("syndrome"), "NULL");  // no labels without the stacks
  auto dataset = Dataset::OpenReadOnly(db);
  ASSERT_TRUE(dataset.ok()) << dataset.error().message;
  Dataset& ds = *dataset;
  auto query = [&](const std::string& sql) {
    auto q = ds.Query(sql);
    return q.ok() && !q->rows.empty() ? q->rows[0][0].text + std::to_string(q->rows[0][0].integer) : std::string("?");
  };
  auto registers = [&](const std::string& path) {
    return query("SELECT group_concat(registers, '|') FROM (SELECT t.registers FROM threads t JOIN cores c ON "
                 "c.id = t.core WHERE c.path = '" + path + "' ORDER BY t.thread)");
  };
  auto modules = [&](const std::string& path) {
    return query("SELECT group_concat(path || ' ' || build_id, '|') FROM (SELECT m.path, m.build_id FROM modules m "
                 "JOIN cores c ON c.id = m.core WHERE c.path = '" + path + "' AND m.path <> '[vdso]' ORDER BY m.base)");
  };
  EXPECT_NE(registers(core).find("\"rip\""), std::string::npos);
  EXPECT_EQ(registers(server.url()), registers(core));
  // The modules NT_FILE names (the vDSO is known by its memory alone).
  EXPECT_NE(modules(core).find("libc.so.6"), std::string::npos);
  EXPECT_EQ(modules(server.url()), modules(core));
}

// A plain core's time is the wall clock's; a stream-compressed core's is the
// worker's CPU time, grown with its compressed size, the wall clock four
// times that.
TEST(ScanBudget, ACompressedCoreIsGivenCpuTimeByItsSize) {
  const std::string plain = ZooDir() + "/cores/null_deref-O0.core";
  Budget b = BudgetFor(plain, 60);
  EXPECT_EQ(b.cpu_seconds, 0);
  EXPECT_EQ(b.wall_seconds, 60);
  for (const char* ext : {".zst", ".lz4", ".xz"}) {
    const std::string packed = ZooDir() + "/cores/" + (std::string(ext) == ".xz" ? "many_threads-O0.core" : "null_deref-O0.core") + ext;
    double size = static_cast<double>(fs::file_size(packed));
    b = BudgetFor(packed, 60);
    EXPECT_DOUBLE_EQ(b.cpu_seconds, 60 + size / kCompressedBytesPerCpuSecond) << packed;
    EXPECT_DOUBLE_EQ(b.wall_seconds, 4 * b.cpu_seconds) << packed;
  }
  // Compression is told by the bytes, not the name.
  std::string renamed = ::testing::TempDir() + "/budget-" + std::to_string(getpid()) + ".core";
  fs::copy_file(ZooDir() + "/cores/null_deref-O0.core.zst", renamed, fs::copy_options::overwrite_existing);
  EXPECT_GT(BudgetFor(renamed, 60).cpu_seconds, 60);
  fs::remove(renamed);
  EXPECT_EQ(BudgetFor("http://127.0.0.1:1/x.core.zst", 60).cpu_seconds, 0);  // a URL: its wall clock
}

// A version 1 dataset (its CHECK knows no `partial`) is read as it is, and
// widened to version 2 by the first writable open, its rows untouched.
TEST_F(ScanTest, AVersionOneDatasetIsUpgradedInPlace) {
  std::string db = Db("v1");
  fs::copy_file(Db("ref"), db);
  {
    auto ds = Dataset::Open(db, false);
    ASSERT_TRUE(ds.ok());
    ASSERT_EQ(sqlite3_exec(ds->handle(),
                           "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = replace(sql, "
                           "'''ok'', ''partial'', ''error''', '''ok'', ''error''') WHERE name = 'cores'; "
                           "PRAGMA writable_schema = OFF; UPDATE meta SET value = '1' WHERE key = 'schema_version'",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
  }
  auto schema = [&](Dataset& ds) {
    auto q = ds.Query("SELECT sql FROM sqlite_master WHERE name = 'cores'");
    return q.ok() && !q->rows.empty() ? q->rows[0][0].text : std::string();
  };
  auto before = LoadRows(Db("ref"));
  {
    auto ro = Dataset::OpenReadOnly(db);
    ASSERT_TRUE(ro.ok()) << ro.error().message;
    EXPECT_EQ(schema(*ro).find("partial"), std::string::npos) << schema(*ro);
  }
  {
    auto rw = Dataset::Open(db, false);
    ASSERT_TRUE(rw.ok()) << rw.error().message;
    EXPECT_NE(schema(*rw).find("'ok', 'partial', 'error'"), std::string::npos) << schema(*rw);
    auto v = rw->Query("SELECT value FROM meta WHERE key = 'schema_version'");
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->rows[0][0].text, "2");
    auto integrity = rw->Query("PRAGMA integrity_check");
    ASSERT_TRUE(integrity.ok());
    EXPECT_EQ(integrity->rows[0][0].text, "ok");
  }
  EXPECT_EQ(LoadRows(db), before);
}

// A FIFO given as a core or as a sidecar is refused at once: opening one
// for reading would block until a writer came.
TEST_F(ScanTest, AFifoIsNotReadAsACoreOrASidecar) {
  std::string fifo = *work_ + "/fifo.core";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string core = *work_ + "/with-fifo-sidecar.core";
  fs::copy_file(fleet_->cores[0].path, core, fs::copy_options::overwrite_existing);
  std::string sidecar = core + ".json";
  fs::remove(sidecar);
  ASSERT_EQ(mkfifo(sidecar.c_str(), 0600), 0);
  std::string db = Db("fifo");
  auto r = Coroner("scan " + fifo + " " + core + " --db " + db + " --timeout 3600 --jobs 1");
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = LoadRows(db);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.at(fifo).at("status"), "error");
  EXPECT_EQ(rows.at(fifo).at("error"), "io: not a regular file");
  EXPECT_EQ(rows.at(core).at("status"), "ok");
  EXPECT_NE(rows.at(core).at("warnings").find("sidecar with-fifo-sidecar.core.json: not a regular file; not read"),
            std::string::npos)
      << rows.at(core).at("warnings");
  fs::remove(fifo);
  fs::remove(sidecar);
  fs::remove(core);
}

TEST_F(ScanTest, InventoryJoinsOnHostByCrashTime) {
  // node-0 moved from machine pm-1 to pm-2 halfway through the fleet's weeks.
  int64_t mid = fleet_->cores[fleet_->cores.size() / 2].time;
  std::string inv = *work_ + "/hosts.csv";
  std::ofstream(inv) << "host,valid_from,valid_to,physical_host,sku\n"
                     << "node-0,," << FormatIso8601(mid) << ",pm-1,\"E64s, v5\"\n"
                     << "node-0," << FormatIso8601(mid) << ",,pm-2,\"E64s, v5\"\n"
                     << "node-1,,,pm-3,D16\n";
  std::string db = Db("inventory");
  auto r = Coroner("scan " + fleet_->dir + "/a --db " + db + " --inventory " + inv);
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = LoadRows(db);
  size_t checked = 0;
  for (const auto& c : fleet_->cores) {
    if (!rows.count(c.path)) continue;
    const std::string& a = rows.at(c.path).at("attributes");
    if (c.host == "node-0") {
      std::string pm = c.time < mid ? "physical_host=pm-1" : "physical_host=pm-2";
      EXPECT_NE(a.find(pm), std::string::npos) << a;
      EXPECT_NE(a.find("sku=E64s, v5"), std::string::npos) << a;
      ++checked;
    } else if (c.host == "node-1") {
      EXPECT_NE(a.find("physical_host=pm-3"), std::string::npos) << a;
    } else {
      EXPECT_EQ(a.find("physical_host"), std::string::npos) << a;
    }
  }
  EXPECT_GT(checked, 2u);
  auto bad = Coroner("scan " + fleet_->dir + "/a --db " + Db("inventory-bad") + " --inventory " + fleet_->cores[0].path + ".json");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("host"), std::string::npos) << bad.err;
}

TEST_F(ScanTest, QueryIsReadOnlyAndPrintsJson) {
  auto q = Coroner("query --db " + Db("ref") + " --json \"SELECT syndrome, count(*) AS n FROM cores WHERE status = 'ok' "
                                               "AND syndrome = 'fpe' GROUP BY syndrome\"");
  ASSERT_EQ(q.status, 0) << q.err;
  size_t fpe = 0;
  for (const auto& c : fleet_->cores) fpe += c.zoo.crasher == "divide_by_zero";
  EXPECT_EQ(q.out, "[{\"syndrome\":\"fpe\",\"n\":" + std::to_string(fpe) + "}]\n");
  auto write = Coroner("query --db " + Db("ref") + " \"DELETE FROM cores\"");
  EXPECT_EQ(write.status, 1);
  EXPECT_NE(write.err.find("only statements that read are allowed"), std::string::npos) << write.err;
  EXPECT_EQ(LoadRows(Db("ref")).size(), fleet_->size());
}

TEST_F(ScanTest, FourShardsMergeToTheSingleScan) {
  // The shards come from a list in reverse order: the split must not depend on it.
  std::string list = *work_ + "/reversed.txt";
  {
    auto rows = LoadRows(Db("ref"));
    std::ofstream out(list);
    for (auto it = rows.rbegin(); it != rows.rend(); ++it) out << it->first << "\n";
  }
  std::vector<std::string> shards;
  size_t total = 0;
  std::map<std::string, int> owner;
  for (int i = 0; i < 4; ++i) {
    shards.push_back(Db("shard" + std::to_string(i)));
    const std::string input = i % 2 ? "@" + list : fleet_->dir;
    auto r = Coroner("scan " + input + " --db " + shards.back() + " --shard " + std::to_string(i) + "/4 --jobs 1");
    ASSERT_EQ(r.status, 0) << r.err;
    auto rows = LoadRows(shards.back());
    EXPECT_GT(rows.size(), 20u) << "shard " << i;
    for (const auto& [path, row] : rows) EXPECT_TRUE(owner.emplace(path, i).second) << path << " in two shards";
    total += rows.size();
  }
  EXPECT_EQ(total, fleet_->size());
  std::string merged = Db("merged");
  std::string args = "merge --db " + merged;
  for (const auto& s : shards) args += " " + s;
  auto m = Coroner(args);
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.out.find(std::to_string(fleet_->size()) + " cores added, 0 replaced, 0 unchanged"), std::string::npos)
      << m.out;
  ExpectSameRows(LoadRows(merged), LoadRows(Db("ref")));
  auto again = Coroner(args + " " + shards[0]);  // the same shards again, one twice: nothing changes
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("0 cores added, 0 replaced, " + std::to_string(fleet_->size() + LoadRows(shards[0]).size()) + " unchanged"),
            std::string::npos)
      << again.out;
  ExpectSameRows(LoadRows(merged), LoadRows(Db("ref")));
  // The whole reference after one shard: only the cores that shard lacks are
  // picked, ids with gaps between them (the other merges pick one run).
  size_t in_shard0 = LoadRows(shards[0]).size();
  auto gaps = Coroner("merge --db " + Db("merged-gaps") + " " + shards[0] + " " + Db("ref"));
  ASSERT_EQ(gaps.status, 0) << gaps.err;
  EXPECT_NE(gaps.out.find(std::to_string(fleet_->size()) + " cores added, 0 replaced, " + std::to_string(in_shard0) +
                          " unchanged"),
            std::string::npos)
      << gaps.out;
  ExpectSameRows(LoadRows(Db("merged-gaps")), LoadRows(Db("ref")));
  auto n = Dataset::OpenReadOnly(merged)->Query(
      "SELECT (SELECT count(*) FROM cores), (SELECT count(*) FROM frames), (SELECT count(*) FROM modules)");
  auto r = Dataset::OpenReadOnly(Db("ref"))->Query(
      "SELECT (SELECT count(*) FROM cores), (SELECT count(*) FROM frames), (SELECT count(*) FROM modules)");
  ASSERT_TRUE(n.ok() && r.ok());
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(n->rows[0][i].integer, r->rows[0][i].integer) << i;
}

TEST_F(ScanTest, ReadsADatasetAKilledMergeLeftMidTransaction) {
  // merge writes with a rollback journal. Killed mid-shard, it leaves the
  // dataset in that mode with a hot journal, which a read-only connection
  // cannot read past ("attempt to write a readonly database"). A child
  // leaves the same state: it deletes rows with the journal spilled to
  // disk, then exits without committing.
  std::string db = Db("interrupted");
  fs::copy_file(Db("ref"), db);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sqlite3* h = nullptr;
    if (sqlite3_open(db.c_str(), &h) != SQLITE_OK ||
        sqlite3_exec(h,
                     "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 2; BEGIN IMMEDIATE; DELETE FROM frames; "
                     "UPDATE cores SET syndrome = 'none'",
                     nullptr, nullptr, nullptr) != SQLITE_OK)
      _exit(1);
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_GT(fs::file_size(db + "-journal"), 0u);
  const std::string query = " --json \"SELECT (SELECT count(*) FROM frames) AS frames, (SELECT count(*) FROM cores "
                            "WHERE syndrome = 'none') AS none\"";

  // Where the dataset cannot be written, the rollback cannot happen: a
  // one-line error that says so, and the journal stays for a writer.
  std::string err_file = "/dev/shm/coroner-scan-test-" + std::to_string(getpid()) + ".err";
  pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!MakeReadOnlyInPrivateNamespace({*work_})) _exit(3);
    int err = open(err_file.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    int null = open("/dev/null", O_RDWR);
    if (err < 0 || null < 0) _exit(3);
    dup2(null, 1);
    dup2(err, 2);
    execl("/bin/sh", "sh", "-c", ("exec " + std::string(std::getenv("CORONER_BIN")) + " query --db " + db + query).c_str(),
          nullptr);
    _exit(127);
  }
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) != 3) {
    EXPECT_EQ(WEXITSTATUS(status), 1);
    std::ifstream in(err_file);
    std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(err.find("an interrupted write left " + db + "-journal, which only a writable open can roll back"),
              std::string::npos)
        << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_TRUE(fs::exists(db + "-journal"));
  }
  fs::remove(err_file);

  // Where it can, a read-only command rolls the transaction back and reads
  // the rows as they were before it; the dataset is in WAL mode again.
  auto r = Dataset::OpenReadOnly(Db("ref"))->Query("SELECT count(*) FROM frames");
  ASSERT_TRUE(r.ok());
  auto q = Coroner("query --db " + db + query);
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_EQ(q.out, "[{\"frames\":" + std::to_string(r->rows[0][0].integer) + ",\"none\":0}]\n");
  EXPECT_FALSE(fs::exists(db + "-journal"));
  auto mode = Dataset::OpenReadOnly(db)->Query("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  EXPECT_EQ(mode->rows[0][0].text, "wal");
  ExpectSameRows(LoadRows(db), LoadRows(Db("ref")));
}

TEST_F(ScanTest, RefusesAnotherSchemaVersion) {
  std::string db = Db("future");
  fs::copy_file(Db("ref"), db);
  {
    auto ds = Dataset::Open(db, false);
    ASSERT_TRUE(ds.ok());
    ASSERT_EQ(sqlite3_exec(ds->handle(), "UPDATE meta SET value = '99' WHERE key = 'schema_version'", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
  }
  auto r = Coroner("scan " + fleet_->cores[0].path + " --db " + db);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("schema version 99"), std::string::npos) << r.err;
  // merge refuses such a shard before writing anything
  auto m = Coroner("merge --db " + Db("merge-refused") + " " + Db("ref") + " " + db);
  EXPECT_EQ(m.status, 1);
  EXPECT_NE(m.err.find("schema version 99, this coroner reads version 2"), std::string::npos) << m.err;
  EXPECT_FALSE(fs::exists(Db("merge-refused")));
}

}  // namespace
}  // namespace coroner::testing
