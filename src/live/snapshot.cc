#include "live/snapshot.h"

#include <dirent.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "core/machine_notes.h"
#include "live/process_memory.h"

namespace coroner {
namespace {

// Bytes below a stack pointer that a leaf function may use without moving
// it (x86_64's red zone, the largest of the machines coroner reads), copied
// with the stack.
constexpr uint64_t kRedZone = 128;
// Files of /proc read whole are small; a bound keeps a hostile one small.
constexpr size_t kMaxProcFile = 16 << 20;
// Threads are listed again until no new one appears; a process that makes
// threads faster than they are stopped is caught on the last round.
constexpr int kListRounds = 64;

std::string ProcPath(int pid, const std::string& rest) { return "/proc/" + std::to_string(pid) + "/" + rest; }

// A /proc file's bytes (read in a loop: /proc files come in pieces);
// nullopt when it cannot be opened.
std::optional<std::string> ReadProcFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string out;
  char buf[8192];
  while (out.size() < kMaxProcFile && in.read(buf, sizeof buf).gcount() > 0) out.append(buf, in.gcount());
  return out;
}

// "Key:\tvalue" of /proc/PID/status.
std::optional<std::string> StatusField(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") == 0) {
      size_t v = line.find_first_not_of(" \t", key.size() + 1);
      return v == std::string::npos ? std::string() : line.substr(v);
    }
  }
  return std::nullopt;
}

struct StatLine {
  std::string comm;
  char state = 0;
  int ppid = 0, pgrp = 0, sid = 0;
  uint64_t flags = 0, utime = 0, stime = 0;
};

// /proc/PID/stat: the name sits between the first '(' and the last ')',
// since it may hold spaces and parentheses of its own.
std::optional<StatLine> ParseStat(const std::string& text) {
  size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  StatLine s;
  s.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  std::string state;
  long long tty = 0, tpgid = 0;
  unsigned long long minflt, cminflt, majflt, cmajflt;
  if (!(rest >> state >> s.ppid >> s.pgrp >> s.sid >> tty >> tpgid >> s.flags >> minflt >> cminflt >> majflt >>
        cmajflt >> s.utime >> s.stime))
    return std::nullopt;
  s.state = state.empty() ? 0 : state[0];
  return s;
}

std::vector<ProcessMapping> ParseMaps(const std::string& text) {
  std::vector<ProcessMapping> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    ProcessMapping m;
    char perms[5] = {};
    unsigned long long start, end, offset, inode;
    int path_at = 0;
    char dev[16] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s %llx %15s %llu %n", &start, &end, perms, &offset, dev, &inode,
                    &path_at) < 6)
      continue;
    if (end <= start) continue;
    m.start = start, m.end = end, m.offset = offset;
    m.read = perms[0] == 'r', m.write = perms[1] == 'w', m.exec = perms[2] == 'x', m.shared = perms[3] == 's';
    if (path_at > 0 && static_cast<size_t>(path_at) < line.size()) m.path = line.substr(path_at);
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const ProcessMapping& a, const ProcessMapping& b) { return a.start < b.start; });
  return out;
}

std::vector<int> ListThreads(int pid) {
  std::vector<int> out;
  DIR* d = ::opendir(ProcPath(pid, "task").c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long tid = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == 0 && tid > 0) out.push_back(static_cast<int>(tid));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Why ptrace refused to attach to `pid`, in words.
std::string WhyDenied(int pid, uint32_t target_uid) {
  if (target_uid != ::geteuid() && ::geteuid() != 0) {
    return "process " + std::to_string(pid) + " belongs to uid " + std::to_string(target_uid) + ", not to this user";
  }
  if (auto scope = ReadProcFile("/proc/sys/kernel/yama/ptrace_scope")) {
    int v = std::atoi(scope->c_str());
    if (v == 3) return "ptrace is disabled on this machine (kernel.yama.ptrace_scope = 3)";
    if (v > 0) {
      return "kernel.yama.ptrace_scope = " + std::to_string(v) +
             " allows tracing only a process's own children (run as root, or with CAP_SYS_PTRACE)";
    }
  }
  return "not allowed to trace process " + std::to_string(pid) + " (ptrace: permission denied)";
}

uint64_t NowNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The registers' stack pointer, from NT_PRSTATUS's pr_reg as the machine lays it out.
std::optional<uint64_t> StackPointer(Arch arch, const std::vector<std::byte>& regs) {
  const NoteMachine& m = NoteMachineOf(arch);
  Registers r;
  r.arch = arch;
  size_t slot = PrRegSlot(r.sp_reg());
  if (regs.size() < (slot + 1) * 8 || slot >= m.prstatus_regs) return std::nullopt;
  uint64_t sp;
  std::memcpy(&sp, regs.data() + slot * 8, 8);
  return sp;
}

std::vector<std::byte> GetRegset(int tid, int type, size_t capacity) {
  std::vector<std::byte> buf(capacity);
  iovec iov{buf.data(), buf.size()};
  if (::ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(static_cast<uintptr_t>(type)), &iov) != 0) return {};
  buf.resize(iov.iov_len);
  return buf;
}

// The stop itself, run on a thread of its own (see snapshot.h). Fills
// `snap.threads`, `snap.stacks`, the not-stopped and exited lists and the
// stop's duration; returns an error only when not one thread could be held.
class Stopper {
 public:
  Stopper(ProcessSnapshot& snap, const SnapshotOptions& options, uint32_t uid)
      : snap_(snap), options_(options), uid_(uid) {}

  Status Run() {
    // The main thread first: whether it may be traced is whether the
    // process may be. Another thread refused is one exiting (ptrace
    // refuses a task that is, with the same EPERM), whatever its number.
    if (::ptrace(PTRACE_SEIZE, snap_.pid, nullptr, nullptr) != 0) {
      if (errno == EPERM) return MakeError(ErrorKind::kDenied, WhyDenied(snap_.pid, uid_));
      return MakeError(ErrorKind::kIo, "process " + std::to_string(snap_.pid) + " exited");
    }
    held_.insert(snap_.pid);
    order_.push_back(snap_.pid);
    // Seize every other thread (which does not stop it), listing the
    // threads again until the list holds no new one.
    for (int round = 0; round < kListRounds; ++round) {
      bool fresh = false;
      for (int tid : ListThreads(snap_.pid)) {
        if (held_.count(tid) || gone_.count(tid)) continue;
        fresh = true;
        if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) == 0) {
          held_.insert(tid);
          order_.push_back(tid);
        } else {
          gone_.insert(tid);  // exited, or exiting, since it was listed
        }
      }
      if (!fresh) break;
    }
    if (held_.empty()) return MakeError(ErrorKind::kIo, "process " + std::to_string(snap_.pid) + " exited");
    uint64_t start = NowNs();
    for (int tid : order_) ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
    WaitForStops();
    // A thread made while the others were being stopped: its maker is
    // stopped now, so one more listing finds them all.
    for (int tid : ListThreads(snap_.pid)) {
      if (held_.count(tid) || gone_.count(tid)) continue;
      if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) continue;
      held_.insert(tid);
      order_.push_back(tid);
      ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
      WaitForStops();
    }
    ReadStopped();
    for (auto& [tid, sig] : stopped_) {
      ::ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<uintptr_t>(sig)));
    }
    snap_.stopped_ms = static_cast<double>(NowNs() - start) / 1e6;
    // A thread still running in the kernel (it never stopped) is let go
    // when this thread ends; PTRACE_DETACH cannot reach it before.
    for (int tid : order_) {
      if (!stopped_.count(tid) && !exited_.count(tid)) snap_.not_stopped.push_back(ThreadSnapshot{.tid = tid});
    }
    snap_.exited.assign(exited_.begin(), exited_.end());
    if (stopped_.empty()) return MakeError(ErrorKind::kIo, "process " + std::to_string(snap_.pid) + " exited, or no thread of it stopped");
    return Ok{};
  }

 private:
  // Collects stops until every held thread has stopped or exited, or the
  // wait's bound passes with no thread stopping (a thread in an
  // uninterruptible wait).
  void WaitForStops() {
    uint64_t deadline = NowNs() + static_cast<uint64_t>(options_.stop_wait_ms) * 1000000ull;
    for (;;) {
      bool pending = false, progress = false;
      for (int tid : order_) {
        if (stopped_.count(tid) || exited_.count(tid)) continue;
        int status = 0;
        pid_t r = ::waitpid(tid, &status, __WALL | WNOHANG);
        if (r == 0) {
          pending = true;
          continue;
        }
        progress = true;
        if (r < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
          exited_.insert(tid);
        } else if (WIFSTOPPED(status)) {
          // PTRACE_EVENT_STOP: our interrupt, or a group stop (SIGSTOP),
          // which the thread resumes into once let go. Anything else is a
          // signal on its way to the thread: it is handed back on release.
          int sig = (status >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(status);
          stopped_[tid] = sig;
        }
      }
      if (!pending) return;
      // The bound runs from the last stop seen, not from the first
      // interrupt: a loaded machine takes long to stop 2,000 threads, but
      // each of them comes; only a thread in an uninterruptible wait keeps
      // the whole bound passing with nothing stopping.
      uint64_t now = NowNs();
      if (progress) deadline = now + static_cast<uint64_t>(options_.stop_wait_ms) * 1000000ull;
      else if (now > deadline) return;
      if (!progress) {
        timespec ts{0, 50000};
        ::nanosleep(&ts, nullptr);
      }
    }
  }

  // Registers and the used part of each stopped thread's stack.
  void ReadStopped() {
    ProcessMemory memory(snap_.pid);
    uint64_t copied = 0;
    for (int tid : order_) {
      auto it = stopped_.find(tid);
      if (it == stopped_.end()) continue;
      ThreadSnapshot t;
      t.tid = tid;
      t.pending_signal = it->second;
      t.regs = GetRegset(tid, NT_PRSTATUS, 1024);
      t.fpregs = GetRegset(tid, NT_PRFPREG, 1024);
      if (t.regs.empty()) continue;  // exited between its stop and now
      if (auto sp = StackPointer(snap_.arch, t.regs)) {
        uint64_t lo = *sp > kRedZone ? (*sp - kRedZone) & ~uint64_t{15} : 0;
        // The mappings are sorted: the one holding `lo` is the last that starts at or below it.
        auto m = std::upper_bound(snap_.mappings.begin(), snap_.mappings.end(), lo,
                                  [](uint64_t a, const ProcessMapping& pm) { return a < pm.start; });
        if (m != snap_.mappings.begin() && lo < std::prev(m)->end && copied < options_.all_stacks_bytes) {
          --m;
          uint64_t n = std::min({m->end - lo, options_.stack_bytes, options_.all_stacks_bytes - copied});
          CapturedRange range{lo, std::vector<std::byte>(n)};
          range.bytes.resize(memory.ReadUpTo(lo, range.bytes));
          copied += range.bytes.size();
          if (!range.bytes.empty()) snap_.stacks.push_back(std::move(range));
        }
      }
      snap_.threads.push_back(std::move(t));
    }
  }

  ProcessSnapshot& snap_;
  const SnapshotOptions& options_;
  uint32_t uid_;
  std::set<int> held_, gone_, exited_;
  std::vector<int> order_;
  std::map<int, int> stopped_;  // tid -> the signal to hand back
};

// Two threads' stacks can overlap only in a hostile or racing process
// (a thread's stack pointer in another's stack); the later copy is cut.
void SortStacks(std::vector<CapturedRange>& stacks) {
  std::sort(stacks.begin(), stacks.end(), [](const CapturedRange& a, const CapturedRange& b) { return a.addr < b.addr; });
  std::vector<CapturedRange> kept;
  for (auto& r : stacks) {
    if (!kept.empty()) {
      uint64_t prev_end = kept.back().addr + kept.back().bytes.size();
      if (r.addr + r.bytes.size() <= prev_end) continue;
      if (r.addr < prev_end) {
        r.bytes.erase(r.bytes.begin(), r.bytes.begin() + static_cast<ptrdiff_t>(prev_end - r.addr));
        r.addr = prev_end;
      }
    }
    kept.push_back(std::move(r));
  }
  stacks = std::move(kept);
}

}  // namespace

Arch HostArch() {
#if defined(__aarch64__)
  return Arch::kAarch64;
#else
  return Arch::kX86_64;
#endif
}

Expected<ProcessSnapshot> TakeSnapshot(int pid, const SnapshotOptions& options) {
  std::string name = "process " + std::to_string(pid);
  if (pid <= 0) return MakeError(ErrorKind::kIo, "no process " + std::to_string(pid));
  if (pid == ::getpid()) return MakeError(ErrorKind::kDenied, "coroner does not snapshot itself");
  auto status = ReadProcFile(ProcPath(pid, "status"));
  auto stat_text = ReadProcFile(ProcPath(pid, "stat"));
  if (!status || !stat_text) return MakeError(ErrorKind::kIo, "no process " + std::to_string(pid));
  ProcessSnapshot snap;
  snap.pid = pid;
  snap.arch = HostArch();
  auto stat = ParseStat(*stat_text);
  if (!stat) return MakeError(ErrorKind::kIo, name + ": /proc/" + std::to_string(pid) + "/stat unreadable");
  if (auto tgid = StatusField(*status, "Tgid"); tgid && std::atoi(tgid->c_str()) != pid) {
    return MakeError(ErrorKind::kIo, "thread " + std::to_string(pid) + " is not a process: its process is " + *tgid);
  }
  snap.comm = stat->comm, snap.state = stat->state, snap.ppid = stat->ppid, snap.pgrp = stat->pgrp;
  snap.sid = stat->sid, snap.flags = stat->flags;
  if (stat->state == 'Z' || stat->state == 'X') {
    return MakeError(ErrorKind::kIo, name + " is a zombie: it has exited, and no memory is left to read");
  }
  if (auto uid = StatusField(*status, "Uid")) snap.uid = static_cast<uint32_t>(std::strtoul(uid->c_str(), nullptr, 10));
  if (auto gid = StatusField(*status, "Gid")) snap.gid = static_cast<uint32_t>(std::strtoul(gid->c_str(), nullptr, 10));
  if (auto tracer = StatusField(*status, "TracerPid"); tracer && std::atoi(tracer->c_str()) != 0) {
    return MakeError(ErrorKind::kDenied, name + " is already traced by process " + *tracer + " (a debugger?)");
  }
  auto maps = ReadProcFile(ProcPath(pid, "maps"));
  if (!maps) return MakeError(ErrorKind::kDenied, WhyDenied(pid, snap.uid));
  snap.mappings = ParseMaps(*maps);
  if (auto auxv = ReadProcFile(ProcPath(pid, "auxv"))) {
    snap.auxv.resize(auxv->size());
    std::memcpy(snap.auxv.data(), auxv->data(), auxv->size());
  }
  if (auto cmdline = ReadProcFile(ProcPath(pid, "cmdline"))) {
    std::string args = cmdline->substr(0, 80);
    std::replace(args.begin(), args.end(), '\0', ' ');
    while (!args.empty() && args.back() == ' ') args.pop_back();
    snap.args = args;
  }
  // Each thread's name and state as it runs: once stopped, every one reads 't'.
  std::map<int, ThreadSnapshot> before;
  for (int tid : ListThreads(pid)) {
    auto text = ReadProcFile(ProcPath(pid, "task/" + std::to_string(tid) + "/stat"));
    auto ts = text ? ParseStat(*text) : std::nullopt;
    if (!ts) continue;
    ThreadSnapshot& t = before[tid];
    t.state = ts->state, t.name = ts->comm, t.utime_ticks = ts->utime, t.stime_ticks = ts->stime;
  }

  Status stopped = Ok{};
  std::thread([&] { stopped = Stopper(snap, options, snap.uid).Run(); }).join();
  if (!stopped.ok()) return stopped.error();

  for (auto* list : {&snap.threads, &snap.not_stopped})
  for (auto& t : *list) {
    if (auto it = before.find(t.tid); it != before.end()) {
      t.state = it->second.state, t.name = it->second.name;
      t.utime_ticks = it->second.utime_ticks, t.stime_ticks = it->second.stime_ticks;
    }
  }
  // The main thread first, as a kernel's core holds the thread that took
  // the signal first: gdb and coroner both take thread 1 as the process's.
  std::stable_partition(snap.threads.begin(), snap.threads.end(), [&](const ThreadSnapshot& t) { return t.tid == pid; });
  SortStacks(snap.stacks);
  return snap;
}

LiveCapture CaptureFacts(const ProcessSnapshot& snapshot) {
  LiveCapture c;
  c.pid = snapshot.pid;
  c.stopped_ms = snapshot.stopped_ms;
  for (const auto& t : snapshot.threads) c.threads.push_back({t.tid, t.state, t.name});
  for (const auto& t : snapshot.not_stopped) c.not_stopped.push_back({t.tid, t.state, t.name});
  c.exited = snapshot.exited;
  return c;
}

}  // namespace coroner
