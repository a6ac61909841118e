// `coroner scan` over HTTP: the zoo fleet served by a real nginx on
// 127.0.0.1 gives the same dataset as the local scan, reading only ranges;
// behind a proxy that answers 503 or cuts the body mid-transfer it retries
// and still gives the same dataset; a server that keeps failing yields
// error rows, never a wrong row.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "dataset/timestamps.h"
#include "unit/run_coroner.h"
#include "zoo/fleet.h"
#include "zoo/scan_rows.h"

namespace coroner::testing {
namespace {

namespace fs = std::filesystem;

int Listen(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 64) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A real nginx serving `root` on 127.0.0.1, with /down/ answering 503.
class Nginx {
 public:
  Nginx(const std::string& dir, const std::string& root) {
    fs::create_directories(dir + "/tmp");
    int probe = Listen(&port_);  // a free port; nginx binds it right after
    close(probe);
    std::ofstream conf(dir + "/nginx.conf");
    if (geteuid() == 0) conf << "user root root;\n";  // the zoo's cores are readable by their owner only
    conf << "worker_processes 1;\nerror_log " << dir << "/error.log;\npid " << dir << "/nginx.pid;\n"
         << "events { worker_connections 256; }\nhttp {\n  access_log " << dir << "/access.log;\n"
         << "  client_body_temp_path " << dir << "/tmp; proxy_temp_path " << dir << "/tmp;\n"
         << "  fastcgi_temp_path " << dir << "/tmp; uwsgi_temp_path " << dir << "/tmp; scgi_temp_path " << dir
         << "/tmp;\n  default_type application/octet-stream;\n"
         << "  server {\n    listen 127.0.0.1:" << port_ << ";\n    root " << root << ";\n"
         << "    location /down/ { return 503; }\n  }\n}\n";
    conf.close();
    pid_ = fork();
    if (pid_ == 0) {
      execl("/usr/sbin/nginx", "nginx", "-p", dir.c_str(), "-c", (dir + "/nginx.conf").c_str(), "-g", "daemon off;",
            nullptr);
      _exit(127);
    }
    for (int i = 0; i < 200; ++i) {  // up to 10 s for it to listen
      int fd = Connect(port_);
      if (fd >= 0) {
        close(fd);
        up_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~Nginx() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int st;
      waitpid(pid_, &st, 0);
    }
  }
  bool up() const { return up_; }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  bool up_ = false;
};

// Between the scanner and nginx: the first time it sees a request (method,
// path and range), it answers 503 for a third of them and cuts the body
// half-way for another third; a repeated request passes.
class FaultyProxy {
 public:
  // kFlaky: as above. kRangeOnce: the first request for a path passes as
  // it is, later ones lose their Range header (the server then answers 200
  // with the whole file). kTrickle: every answer is a 206 whose body comes
  // one byte every 0.6 s, never stalling outright.
  enum class Mode { kFlaky, kRangeOnce, kTrickle };
  explicit FaultyProxy(int upstream, Mode mode = Mode::kFlaky) : upstream_(upstream), mode_(mode) {
    listen_ = Listen(&port_);
    thread_ = std::thread([this] { Accept(); });
  }
  ~FaultyProxy() {
    stop_ = true;
    thread_.join();
    for (auto& t : connections_) t.join();
    close(listen_);
  }
  int port() const { return port_; }
  int refused() const { return refused_; }
  int cut() const { return cut_; }

 private:
  void Accept() {
    while (!stop_) {
      pollfd p{listen_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      int c = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) connections_.emplace_back([this, c] { Serve(c); });
    }
  }

  void Serve(int client) {
    std::string req;
    char buf[65536];
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < sizeof buf) {
      ssize_t n = recv(client, buf, sizeof buf, 0);
      if (n <= 0) break;
      req.append(buf, static_cast<size_t>(n));
    }
    size_t end = req.find("\r\n\r\n");
    if (end == std::string::npos) {
      close(client);
      return;
    }
    std::string head = req.substr(0, end), key = head.substr(0, head.find("\r\n"));
    std::string out_head = key + "\r\n";
    size_t at = head.find("\r\n");
    while (at != std::string::npos && at < head.size()) {
      size_t next = head.find("\r\n", at + 2);
      std::string line = head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
      std::string lower = line;
      for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (lower.rfind("range:", 0) == 0) key += " " + line;
      if (lower.rfind("connection:", 0) != 0 && !line.empty()) out_head += line + "\r\n";
      at = next;
    }
    if (mode_ == Mode::kTrickle) {
      SendAll(client, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-65535/1048576\r\n"
                      "Content-Length: 65536\r\nConnection: close\r\n\r\n");
      for (int i = 0; i < 65536 && !stop_; ++i) {
        if (!SendAll(client, "\x7f")) break;
        for (int k = 0; k < 6 && !stop_; ++k) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      close(client);
      return;
    }
    if (mode_ == Mode::kRangeOnce) {
      std::string path = key.substr(0, key.find(' ', key.find(' ') + 1));
      bool first;
      {
        std::lock_guard<std::mutex> lock(mu_);
        first = seen_[path]++ == 0;
      }
      if (!first) {  // the same head without its Range line
        std::string stripped;
        for (size_t from = 0; from < out_head.size();) {
          size_t eol = out_head.find("\r\n", from);
          std::string line = out_head.substr(from, eol - from);
          std::string lower = line;
          for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          if (lower.rfind("range:", 0) != 0) stripped += line + "\r\n";
          from = eol + 2;
        }
        out_head = stripped;
      }
    }
    out_head += "Connection: close\r\n\r\n";
    int action = 2;  // pass
    if (mode_ == Mode::kFlaky) {
      std::lock_guard<std::mutex> lock(mu_);
      action = seen_[key]++ == 0 ? static_cast<int>(std::hash<std::string>()(key) % 3) : 2;
    }
    if (action == 0) {
      ++refused_;
      SendAll(client, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      close(client);
      return;
    }
    int up = Connect(upstream_);
    std::string resp;
    if (up >= 0 && SendAll(up, out_head)) {
      for (;;) {
        ssize_t n = recv(up, buf, sizeof buf, 0);
        if (n <= 0) break;
        resp.append(buf, static_cast<size_t>(n));
      }
    }
    if (up >= 0) close(up);
    size_t body = resp.find("\r\n\r\n");
    if (action == 1 && body != std::string::npos && resp.size() - body - 4 >= 2) {
      ++cut_;
      resp.resize(body + 4 + (resp.size() - body - 4) / 2);
    }
    SendAll(client, resp);
    close(client);
  }

  int upstream_;
  Mode mode_;
  int listen_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> refused_{0}, cut_{0};
  std::thread thread_;
  std::vector<std::thread> connections_;
  std::mutex mu_;
  std::map<std::string, int> seen_;
};

class HttpScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = fs::path(::testing::TempDir() + "/http-scan-" + std::to_string(getpid())).lexically_normal().string();
    fleet_ = MakeFleet(work_ + "/fleet", 4, 77);
    nginx_ = std::make_unique<Nginx>(work_ + "/nginx", fleet_.dir);
    ASSERT_TRUE(nginx_->up()) << "nginx did not start; see " << work_ << "/nginx/error.log";
    auto local = Coroner("scan " + fleet_.dir + " --db " + work_ + "/local.db --jobs 2");
    ASSERT_EQ(local.status, 0) << local.err;
  }
  void TearDown() override {
    nginx_.reset();
    RemoveAll(work_);
  }

  // An @list of the fleet's inputs under `base`: all of them, or only the
  // first copy of each zoo core (and the bad inputs).
  std::string UrlList(const std::string& name, const std::string& base, const std::vector<std::string>& extra = {},
                      bool first_copy_only = false) {
    std::string list = work_ + "/" + name + ".txt";
    std::ofstream out(list);
    auto add = [&](const std::string& path) { out << base << path.substr(fleet_.dir.size()) << "\n"; };
    for (const auto& c : fleet_.cores) {
      if (!first_copy_only || c.path.find("/c0-") != std::string::npos) add(c.path);
    }
    for (const auto& b : fleet_.bad) add(b.path);
    for (const auto& h : fleet_.halves) add(h);
    for (const auto& e : extra) out << base << e << "\n";
    return list;
  }

  std::string work_;
  Fleet fleet_;
  std::unique_ptr<Nginx> nginx_;
};

// The local scan's rows as a server would give them: a server tells a
// file's modification time (Last-Modified), not its creation, so a core the
// local scan timed by its creation is timed by its mtime over HTTP.
std::map<std::string, Row> AsServed(std::map<std::string, Row> rows, const std::string& dir) {
  for (auto& [path, row] : rows) {
    if (row["time_source"] != "btime") continue;
    struct stat st {};
    if (::stat((dir + path).c_str(), &st) != 0) continue;
    auto born = ParseIso8601(row["time"]);
    if (row["uptime"] != "NULL" && born) row["uptime"] = std::to_string(std::stoll(row["uptime"]) + st.st_mtim.tv_sec - *born);
    row["time"] = FormatIso8601(st.st_mtim.tv_sec);
    row["time_source"] = "mtime";
  }
  return rows;
}

TEST_F(HttpScanTest, SameDatasetAsTheLocalScanFromRangesOnly) {
  std::string base = "http://127.0.0.1:" + std::to_string(nginx_->port());
  auto r = Coroner("scan @" + UrlList("urls", base) + " --db " + work_ + "/http.db --jobs 2");
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectSameRows(LoadRows(work_ + "/http.db", base), AsServed(LoadRows(work_ + "/local.db", fleet_.dir), fleet_.dir));
  // Only the ranges each core needs: the 1 GiB heap costs no more than a small core.
  auto q = Coroner("query --db " + work_ + "/http.db --json \"SELECT path, bytes_read, size FROM cores WHERE "
                   "path LIKE '%big_heap-O0.core' OR path LIKE '%c0-null_deref-O0.core'\"");
  ASSERT_EQ(q.status, 0) << q.err;
  auto rows = nlohmann::json::parse(q.out);
  ASSERT_EQ(rows.size(), 5u);  // four copies of big_heap-O0, one null_deref-O0
  for (const auto& row : rows) {
    EXPECT_LE(row["bytes_read"].get<int64_t>(), 256 * 1024) << row.dump();
    if (row["path"].get<std::string>().find("big_heap") != std::string::npos) {
      EXPECT_GE(row["size"].get<int64_t>(), int64_t{1} << 30);
    }
  }
}

TEST_F(HttpScanTest, RetriesThroughFailuresAndRecordsWhatKeepsFailing) {
  FaultyProxy proxy(nginx_->port());
  std::string base = "http://127.0.0.1:" + std::to_string(proxy.port());
  // Two URLs nginx always answers 503, one that does not exist.
  // The first copy of each core only: every failure costs a backoff.
  auto list = UrlList("faulty", base, {"/down/a.core", "/down/b.core", "/no-such.core"}, true);
  auto r = Coroner("scan @" + list + " --db " + work_ + "/faulty.db --jobs 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(proxy.refused(), 10);
  EXPECT_GT(proxy.cut(), 10);
  auto rows = LoadRows(work_ + "/faulty.db", base);
  for (const char* down : {"/down/a.core", "/down/b.core"}) {
    ASSERT_TRUE(rows.count(down));
    EXPECT_EQ(rows.at(down).at("status"), "error");
    EXPECT_NE(rows.at(down).at("error").find("HTTP 503"), std::string::npos) << rows.at(down).at("error");
    EXPECT_NE(rows.at(down).at("error").find("after 5 attempts"), std::string::npos) << rows.at(down).at("error");
    rows.erase(down);
  }
  ASSERT_TRUE(rows.count("/no-such.core"));
  EXPECT_EQ(rows.at("/no-such.core").at("error").rfind("io: HTTP 404", 0), 0u) << rows.at("/no-such.core").at("error");
  rows.erase("/no-such.core");
  auto local = AsServed(LoadRows(work_ + "/local.db", fleet_.dir), fleet_.dir);
  std::erase_if(local, [](const auto& kv) {
    return kv.first.find("/c1-") != std::string::npos || kv.first.find("/c2-") != std::string::npos ||
           kv.first.find("/c3-") != std::string::npos;
  });
  ASSERT_GT(local.size(), 60u);
  ExpectSameRows(rows, local);
}

// A server that honours Range once and then answers every read with the
// whole file: the later reads fail, and neither `analyze` nor `scan` passes
// the partial analysis off as complete. The failed row is retried.
TEST_F(HttpScanTest, AServerThatStopsServingRangesLeavesNoCompleteAnswer) {
  FaultyProxy proxy(nginx_->port(), FaultyProxy::Mode::kRangeOnce);
  std::string rel;
  for (const auto& c : fleet_.cores)
    if (c.path.find("/c0-null_deref-O0.core") != std::string::npos) rel = c.path.substr(fleet_.dir.size());
  ASSERT_FALSE(rel.empty());
  std::string url = "http://127.0.0.1:" + std::to_string(proxy.port()) + rel;
  auto a = Coroner("analyze --json " + url);
  ASSERT_EQ(a.status, 0) << a.err;
  auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["core"]["truncated"], true);
  EXPECT_NE(j["core"]["missing"].dump().find("HTTP read failed: the server ignored the Range request (HTTP 200)"), std::string::npos) << j["core"].dump();
  std::string db = work_ + "/range-once.db";
  auto first = Coroner("scan " + url + " --db " + db);
  ASSERT_EQ(first.status, 0) << first.err;
  auto rows = LoadRows(db, "http://127.0.0.1:" + std::to_string(proxy.port()));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows.begin()->second.at("status"), "error");
  EXPECT_EQ(rows.begin()->second.at("error").rfind("io: HTTP read failed", 0), 0u) << rows.begin()->second.at("error");
  auto again = Coroner("scan " + url + " --db " + db);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("1 analyzed"), std::string::npos) << again.out;  // not "unchanged"
}

// A server that trickles a byte every 0.6 s never trips the stall limit;
// the time for one core's reads ends it (CORONER_HTTP_SECONDS, 2 s here:
// the trickle could not finish in hours).
TEST_F(HttpScanTest, ATricklingServerIsBoundedByTheTimeForOneCore) {
  FaultyProxy proxy(nginx_->port(), FaultyProxy::Mode::kTrickle);
  setenv("CORONER_HTTP_SECONDS", "2", 1);
  auto a = Coroner("analyze --json http://127.0.0.1:" + std::to_string(proxy.port()) + "/slow.core");
  unsetenv("CORONER_HTTP_SECONDS");
  EXPECT_EQ(a.status, 1) << a.out;
  auto j = nlohmann::json::parse(a.out);
  EXPECT_NE(j["error"]["message"].get<std::string>().find("the time for this core's HTTP reads (2 s) is spent"),
            std::string::npos)
      << a.out;
}

}  // namespace
}  // namespace coroner::testing
