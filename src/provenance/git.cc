#include "provenance/git.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <vector>

namespace coroner {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;
constexpr int kTimeoutMs = 10000;

struct Run {
  int status = -1;  // the exit status; -1 when git could not run or timed out
  std::string out, err;
};

// Runs `git ARGS...` with stdout and stderr captured (each capped).
Run RunGit(const std::vector<std::string>& args) {
  Run r;
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return r;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return r;
  }
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>("git"));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execvp("git", argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kTimeoutMs);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left.count())) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else if (sinks[i]->size() < kMaxOutput) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!timed_out && WIFEXITED(status)) r.status = WEXITSTATUS(status);
  return r;
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

}  // namespace

std::optional<std::string> GitHead(const std::string& dir) {
  Run r = RunGit({"-C", dir, "rev-parse", "--verify", "HEAD"});
  if (r.status != 0) return std::nullopt;
  return FirstLine(r.out);
}

std::optional<std::string> GitTopLevel(const std::string& path) {
  std::string dir = path;
  if (auto slash = dir.rfind('/'); slash != std::string::npos && slash > 0) dir.resize(slash);
  Run r = RunGit({"-C", dir, "rev-parse", "--show-toplevel"});
  if (r.status != 0) return std::nullopt;
  return FirstLine(r.out);
}

FixCheck CheckFix(const std::string& repo, const std::string& commit) {
  FixCheck c;
  if (auto head = GitHead(repo)) {
    c.head = *head;
  } else {
    c.detail = repo + " is not a git checkout";
    return c;
  }
  // `--end-of-options` keeps a commit that starts with '-' from being read as an option.
  Run verify = RunGit({"-C", repo, "rev-parse", "--verify", "--quiet", "--end-of-options", commit + "^{commit}"});
  if (verify.status != 0) {
    c.detail = "commit " + commit + " is not in " + repo + " (fetch it first)";
    return c;
  }
  Run r = RunGit({"-C", repo, "merge-base", "--is-ancestor", FirstLine(verify.out), "HEAD"});
  if (r.status == 0) c.status = FixStatus::kIncluded;
  else if (r.status == 1) c.status = FixStatus::kNotIncluded;
  else c.detail = FirstLine(r.err);
  return c;
}

}  // namespace coroner
