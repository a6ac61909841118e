// Symbols through a real debuginfod server (Debian's), started on 127.0.0.1
// over the zoo's debug files: a stripped binary's frames get their names and
// lines without --debug-dir.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "unit/run_coroner.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

bool HttpOk(const std::string& url) {
  CURL* c = curl_easy_init();
  if (!c) return false;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  // debuginfod answers GET only; the body is not needed.
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, +[](char*, size_t size, size_t n, void*) { return size * n; });
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
  long code = 0;
  bool ok = curl_easy_perform(c) == CURLE_OK && curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
            code == 200;
  curl_easy_cleanup(c);
  return ok;
}

class DebuginfodServer {
 public:
  DebuginfodServer(const std::string& scan_dir, const fs::path& work) {
    port_ = 20000 + static_cast<int>(getpid() % 20000);
    std::string db = (work / "debuginfod.sqlite").string();
    std::string log = (work / "debuginfod.log").string();
    pid_ = fork();
    if (pid_ == 0) {
      freopen(log.c_str(), "w", stdout);
      freopen(log.c_str(), "a", stderr);
      std::string port = std::to_string(port_);
      execlp("debuginfod", "debuginfod", "-p", port.c_str(), "-d", db.c_str(), "-F", scan_dir.c_str(), nullptr);
      _exit(127);
    }
  }
  ~DebuginfodServer() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 50; ++i) {  // 5 s to stop, then it is killed
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST(Debuginfod, StrippedBinaryIsSymbolizedThroughTheServer) {
  if (system("command -v debuginfod >/dev/null 2>&1") != 0) GTEST_SKIP() << "debuginfod is not installed";
  fs::path work = fs::path(::testing::TempDir()) / ("debuginfod-" + std::to_string(getpid()));
  fs::remove_all(work);
  fs::create_directories(work / "cache");
  DebuginfodServer server(testing::ZooDir() + "/debug", work);

  // The build-id of the stripped executable, from the core (no server needed).
  std::string core = testing::ZooDir() + "/cores/null_deref-stripped.core";
  auto plain = testing::Coroner("analyze --json --registers-only " + core);
  ASSERT_EQ(plain.status, 0);
  std::string build_id;
  Json registers = Json::parse(plain.out);
  for (const auto& m : registers["modules"]) {
    if (m["path"].get<std::string>().ends_with("/null_deref-stripped")) build_id = m["build_id"];
  }
  ASSERT_EQ(build_id.size(), 40u);

  // Wait (bounded) until the server has scanned the directory.
  std::string probe = server.url() + "/buildid/" + build_id + "/debuginfo";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool up = false;
  while (!(up = HttpOk(probe)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(up) << "debuginfod did not serve " << probe;

  setenv("DEBUGINFOD_URLS", server.url().c_str(), 1);
  setenv("DEBUGINFOD_CACHE_PATH", (work / "cache").c_str(), 1);
  auto r = testing::Coroner("analyze --json " + core);
  unsetenv("DEBUGINFOD_URLS");
  ASSERT_EQ(r.status, 0) << r.err;
  Json j = Json::parse(r.out);
  const Json& frames = j["threads"][0]["frames"];
  EXPECT_EQ(frames[0]["function"], "walk");
  EXPECT_EQ(frames[0]["line"], 13);
  EXPECT_EQ(frames[1]["function"], "main");
  bool found = false;
  for (const auto& m : j["modules"]) {
    if (m["build_id"] != build_id) continue;
    found = true;
    EXPECT_EQ(m["symbols"]["binary_found_by"], "path");
    EXPECT_EQ(m["symbols"]["debug_found_by"], "debuginfod");
    std::string debug = m["symbols"]["debug_file"];
    EXPECT_EQ(debug.rfind((work / "cache").string(), 0), 0u) << debug;
  }
  EXPECT_TRUE(found);
  fs::remove_all(work);
}

}  // namespace
}  // namespace coroner
