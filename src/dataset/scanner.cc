#include "dataset/scanner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <deque>
#include <fstream>
#include <span>
#include <sstream>
#include <thread>

#include "base/fd_io.h"
#include "core/signals.h"
#include "dataset/core_record.h"
#include "dataset/dataset.h"
#include "dataset/inputs.h"
#include "dataset/journal_metadata.h"
#include "dataset/log_scan.h"
#include "dataset/timestamps.h"
#include "source/byte_source.h"
#include "text/text.h"

#if defined(__SANITIZE_ADDRESS__)
#define CORONER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORONER_ASAN 1
#endif
#endif

namespace coroner {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBatch = 64;                        // records per transaction
constexpr size_t kBulkRows = 10000;                  // log lines worth dropping and rebuilding the indexes for
constexpr auto kCommitEvery = std::chrono::milliseconds(500);
constexpr uint32_t kMaxMessage = 64u << 20;          // a worker's record, as JSON

// Parent -> worker: the input's index (u64), with kNotesOnly set for a
// second try that reads the notes alone (the first did not finish).
constexpr uint64_t kNotesOnly = uint64_t{1} << 63;

// Worker -> parent message: index (u64), unchanged flag (u8), length (u32), JSON.
struct MessageHeader {
  uint64_t index;
  uint8_t unchanged;
  uint32_t length;
} __attribute__((packed));

struct WorkerContext {
  const std::vector<std::string>* inputs;
  const std::map<std::string, KnownInput>* known;
  const Inventory* inventory;
  const ScanOptions* options;
  const std::map<std::string, Metadata>* journal;  // by input
};

// The largest core taken out of a journal entry (systemd-coredump stores
// at most 767 MiB there).
constexpr uint64_t kMaxStoredCore = uint64_t{1} << 30;

// A journal entry's name in the dataset when it has no core file of its
// own: "journal:HOST:PID:TIME", TIME its crash's in ISO 8601 UTC to the
// microsecond, as unique as the crash.
std::string JournalLabel(const CoredumpEntry& e, const Metadata& md) {
  const std::string* host = md.Get("host");
  const std::string* pid = md.Get("pid");
  const uint64_t usec = CrashTimeUs(e);
  std::string iso = FormatIso8601(static_cast<int64_t>(usec / 1000000));
  if (!iso.empty() && iso.back() == 'Z') {
    char micros[16];
    std::snprintf(micros, sizeof micros, ".%06u", static_cast<unsigned>(usec % 1000000));
    iso = iso.substr(0, iso.size() - 1) + micros + "Z";
  }
  // The host and pid are the journal's, untrusted: the label is valid UTF-8 as every path the dataset keeps.
  return ValidUtf8("journal:" + (host ? *host : std::string("unknown")) + ":" + (pid ? *pid : std::string("0")) + ":" + iso);
}

// A directory of the scan's own for the cores taken out of the journal,
// removed with what it holds when the scan ends.
class ScratchDirectory {
 public:
  ~ScratchDirectory() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  Expected<std::string> Path() {
    if (!path_.empty()) return path_;
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/coroner-journal-XXXXXX";
    if (!::mkdtemp(pattern.data())) return MakeError(ErrorKind::kIo, pattern + ": " + std::strerror(errno));
    path_ = pattern;
    return path_;
  }

 private:
  std::string path_;
};

// The worker's life: read an index, answer with a record, until EOF.
[[noreturn]] void WorkerMain(int cmd_fd, int result_fd, const WorkerContext& ctx) {
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGINT, SIG_DFL);
  struct rlimit no_core {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // a worker that crashes must not drop a core among the inputs
#ifndef CORONER_ASAN
  if (ctx.options->memory_limit) {
    struct rlimit as {ctx.options->memory_limit, ctx.options->memory_limit};
    ::setrlimit(RLIMIT_AS, &as);
  }
#endif
  SymbolOptions symbol_options;
  symbol_options.sysroot = ctx.options->sysroot;
  symbol_options.extra_files = ctx.options->exe_files;
  FileSymbolProvider symbols(symbol_options);
  RecordOptions record_options;
  record_options.max_bytes = ctx.options->max_bytes;
  record_options.sysroot = ctx.options->sysroot;
  record_options.exe_files = ctx.options->exe_files;
  record_options.inventory = ctx.inventory;
  record_options.environment.allow = ctx.options->environment_allow;
  record_options.environment.host = ctx.options->environment_host;
  record_options.journal = ctx.journal;
  RecordOptions notes_options = record_options;
  notes_options.notes_only = true;
  uint64_t command;
  while (ReadAll(cmd_fd, &command, sizeof command)) {
    const bool notes_only = command & kNotesOnly;
    const uint64_t index = command & ~kNotesOnly;
    if (index >= ctx.inputs->size()) break;
    const std::string& input = (*ctx.inputs)[index];
    MessageHeader h{index, 0, 0};
    std::string payload;
    if (!ctx.options->force && !notes_only) {
      auto it = ctx.known->find(input);
      if (it != ctx.known->end()) {
        InputStamp st = StampInput(input);
        if (st.error.empty() && st.size == it->second.size && st.mtime_ns == it->second.mtime_ns) h.unchanged = 1;
      }
    }
    if (!h.unchanged) {
      CoreRecord r = AnalyzeInput(input, notes_only ? notes_options : record_options, symbols);
      payload = JsonText(RecordToJson(r));
    }
    h.length = static_cast<uint32_t>(std::min<size_t>(payload.size(), kMaxMessage));
    if (!WriteAll(result_fd, &h, sizeof h) || !WriteAll(result_fd, payload.data(), h.length)) break;
  }
  ::_exit(0);
}

// A process's CPU time so far (user and system), from /proc; 0 when it
// cannot be read.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  size_t close = stat.rfind(')');  // the name may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state ... cmajflt: fields 3 to 13
  unsigned long long utime = 0, stime = 0;
  fields >> utime >> stime;
  static const double kTicks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return static_cast<double>(utime + stime) / kTicks;
}

struct Worker {
  pid_t pid = -1;
  int cmd = -1, result = -1;
  std::optional<uint64_t> busy;  // the input it is analyzing
  // Set when that is a second try, of the notes alone: why the first failed.
  std::optional<std::string> first_failure;
  Clock::time_point started;
  Budget budget;
  double cpu_at_start = 0;  // the worker's CPU time when it took the input
  std::string buffer;
};

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) {
    int s = WTERMSIG(status);
    return "analysis crashed with " + SignalName(s);
  }
  if (WIFEXITED(status)) return "analysis exited with status " + std::to_string(WEXITSTATUS(status));
  return "analysis ended";
}

class Scan {
 public:
  Scan(const ScanOptions& options, Dataset& dataset, const Inventory* inventory)
      : options_(options), dataset_(dataset), inventory_(inventory) {}

  Expected<ScanSummary> Run() {
    auto start = Clock::now();
    InputList list = ExpandInputs(options_.inputs, {options_.db});
    inputs_ = std::move(list.inputs);
    summary_.warnings = std::move(list.warnings);
    known_ = dataset_.KnownInputs();
    if (options_.journal)
      if (auto r = AddJournalInputs(); !r.ok()) return r.error();
    if (options_.shard) inputs_ = SelectShard(inputs_, options_.shard->first, options_.shard->second);
    if (options_.journal)
      if (auto r = ExtractStoredCores(); !r.ok()) return r.error();
    std::vector<LogLine> lines = FindLogLines(options_.logs, options_.shard);
    total_ = inputs_.size() + lines.size() + options_.pids.size() + journal_only_.size() + stored_unchanged_;
    summary_.inputs = total_;
    int jobs = options_.jobs > 0 ? options_.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ::signal(SIGPIPE, SIG_IGN);
    // The cores first, by worker processes; then the log lines, on threads
    // (after the last fork, so that no worker inherits a thread's locks).
    workers_.resize(static_cast<size_t>(std::min<int>(jobs, static_cast<int>(std::max<size_t>(1, inputs_.size())))));
    last_commit_ = Clock::now();
    while (done_ < inputs_.size()) {
      for (auto& w : workers_) {
        if (w.pid < 0 && HasWork()) {
          if (auto r = Spawn(w); !r.ok()) return r.error();
        }
        if (w.pid >= 0 && !w.busy && HasWork()) Dispatch(w);
      }
      if (auto r = Wait(); !r.ok()) return r.error();
      if (pending_.size() >= kBatch || Clock::now() - last_commit_ >= kCommitEvery) {
        if (auto r = Commit(); !r.ok()) return r.error();
      }
      Progress(false);
    }
    // The journal's crashes whose cores are gone, and its stored cores
    // unchanged since the last scan, counted once the cores are done.
    summary_.unchanged += stored_unchanged_;
    done_ += stored_unchanged_;
    for (auto& r : journal_only_) Record(std::move(r));
    journal_only_.clear();
    if (auto r = Commit(); !r.ok()) return r.error();
    for (auto& w : workers_) Stop(w);
    if (auto r = ScanProcesses(); !r.ok()) return r.error();
    if (auto r = ScanLogLines(std::move(lines), jobs); !r.ok()) return r.error();
    if (!options_.logs.empty())
      if (auto r = LinkLogsToCores(); !r.ok()) return r.error();
    summary_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    Progress(true);
    return summary_;
  }

 private:
  Status Spawn(Worker& w) {
    int cmd[2], res[2];
    if (::pipe2(cmd, O_CLOEXEC) != 0) return MakeError(ErrorKind::kIo, std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(res, O_CLOEXEC) != 0) {
      ::close(cmd[0]);
      ::close(cmd[1]);
      return MakeError(ErrorKind::kIo, std::string("pipe: ") + std::strerror(errno));
    }
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) return MakeError(ErrorKind::kIo, std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      // Only this worker's ends stay open, so that every worker sees EOF
      // when the parent closes its command pipe.
      for (auto& other : workers_) {
        if (other.cmd >= 0) ::close(other.cmd);
        if (other.result >= 0) ::close(other.result);
      }
      ::close(cmd[1]);
      ::close(res[0]);
      WorkerContext ctx{&inputs_, &known_, inventory_, &options_, &journal_metadata_};
      WorkerMain(cmd[0], res[1], ctx);
    }
    ::close(cmd[0]);
    ::close(res[1]);
    w.pid = pid;
    w.cmd = cmd[1];
    w.result = res[0];
    w.busy.reset();
    w.buffer.clear();
    return Ok{};
  }

  bool HasWork() const { return next_ < inputs_.size() || !second_tries_.empty(); }

  // The second tries first: their inputs' rows are the ones still missing.
  void Dispatch(Worker& w) {
    uint64_t command;
    if (!second_tries_.empty()) {
      auto [index, why] = std::move(second_tries_.front());
      second_tries_.pop_front();
      w.busy = index;
      w.first_failure = std::move(why);
      command = index | kNotesOnly;
    } else {
      command = next_++;
      w.busy = command;
      w.first_failure.reset();
    }
    w.started = Clock::now();
    w.budget = BudgetFor(inputs_[*w.busy], options_.timeout_seconds);
    w.cpu_at_start = w.budget.cpu_seconds > 0 ? ProcessCpuSeconds(w.pid) : 0;
    // When the worker is gone this write fails; Wait sees its EOF and records the input.
    (void)WriteAll(w.cmd, &command, sizeof command);
  }

  // A worker that ended (crashed, killed, timed out): its input is tried
  // again for the notes alone (a `partial` row), or, when that was the
  // second try, gets an error row.
  void Reap(Worker& w, const std::string& reason) {
    int status = 0;
    if (w.pid > 0) {
      if (reason.empty()) {
        ::waitpid(w.pid, &status, 0);
      } else {
        ::kill(w.pid, SIGKILL);
        ::waitpid(w.pid, &status, 0);
      }
    }
    if (w.busy) {
      std::string why = reason.empty() ? DescribeExit(status) : reason;
      if (w.first_failure) {
        Record(ErrorRecord(inputs_[*w.busy], std::nullopt, *w.first_failure + "; reading the notes alone failed too: " + why));
      } else {
        second_tries_.emplace_back(*w.busy, std::move(why));
      }
    }
    ::close(w.cmd);
    ::close(w.result);
    w = Worker{};
  }

  void Stop(Worker& w) {
    if (w.pid < 0) return;
    ::close(w.cmd);
    w.cmd = -1;
    int status;
    ::waitpid(w.pid, &status, 0);
    ::close(w.result);
    w = Worker{};
  }

  Status Wait() {
    std::vector<pollfd> fds;
    std::vector<Worker*> owners;
    for (auto& w : workers_) {
      if (w.pid < 0) continue;
      fds.push_back({w.result, POLLIN, 0});
      owners.push_back(&w);
    }
    if (fds.empty()) return Ok{};
    int rc = ::poll(fds.data(), fds.size(), 100);
    if (rc < 0 && errno != EINTR) return MakeError(ErrorKind::kIo, std::string("poll: ") + std::strerror(errno));
    for (size_t i = 0; rc > 0 && i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Worker& w = *owners[i];
      char buf[65536];
      ssize_t n = ::read(w.result, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        Reap(w, "");
        continue;
      }
      w.buffer.append(buf, static_cast<size_t>(n));
      Parse(w);
    }
    auto now = Clock::now();
    for (auto& w : workers_) {
      if (w.pid < 0 || !w.busy) continue;
      char reason[128] = "";
      double wall = std::chrono::duration<double>(now - w.started).count();
      if (wall > w.budget.wall_seconds) {
        std::snprintf(reason, sizeof reason, "analysis timed out after %g s", w.budget.wall_seconds);
      } else if (w.budget.cpu_seconds > 0 && ProcessCpuSeconds(w.pid) - w.cpu_at_start > w.budget.cpu_seconds) {
        std::snprintf(reason, sizeof reason, "analysis of the compressed stream took more than %.0f CPU-s",
                      w.budget.cpu_seconds);
      }
      if (reason[0]) Reap(w, reason);
    }
    return Ok{};
  }

  void Parse(Worker& w) {
    while (w.buffer.size() >= sizeof(MessageHeader)) {
      MessageHeader h;
      std::memcpy(&h, w.buffer.data(), sizeof h);
      if (h.length > kMaxMessage || !w.busy || h.index != *w.busy) {
        Reap(w, "analysis sent a malformed record");
        return;
      }
      if (w.buffer.size() < sizeof h + h.length) return;
      std::string payload = w.buffer.substr(sizeof h, h.length);
      w.buffer.erase(0, sizeof h + h.length);
      const std::string& input = inputs_[h.index];
      std::optional<std::string> first_failure = std::move(w.first_failure);
      w.busy.reset();
      w.first_failure.reset();
      if (h.unchanged) {
        ++summary_.unchanged;
        ++done_;
        continue;
      }
      auto j = nlohmann::json::parse(payload, nullptr, false);
      auto r = j.is_discarded() ? Expected<CoreRecord>(MakeError(ErrorKind::kMalformed, "not JSON")) : RecordFromJson(j);
      CoreRecord record = r.ok() ? std::move(*r) : ErrorRecord(input, std::nullopt, "analysis sent a malformed record: " + r.error().message);
      if (first_failure && record.status == RowStatus::kOk) {
        record.status = RowStatus::kPartial;
        record.error = *first_failure + "; the row holds the notes alone (registers, signal, modules)";
      } else if (first_failure) {
        record.error = *first_failure + "; then " + record.error;
      }
      Record(std::move(record));
    }
  }

  void Record(CoreRecord r) {
    if (auto it = labels_.find(r.path); it != labels_.end()) r.path = it->second;
    ++done_;
    ++summary_.analyzed;
    if (r.status == RowStatus::kOk) {
      ++summary_.ok;
    } else if (r.status == RowStatus::kPartial) {
      ++summary_.partial;
    } else {
      ++summary_.errors;
      summary_.error_kinds[r.error_kind ? ErrorKindName(*r.error_kind) : "analysis"]++;
    }
    summary_.bytes_read += r.bytes_read;
    summary_.bytes_per_core.push_back(r.bytes_read);
    pending_.push_back(std::move(r));
  }

  // The journal's crash entries as inputs: each entry's core file, found
  // among the inputs by its name (a fleet's gathered cores) or where the
  // entry says it is; a core stored in the entry, by its label until it is
  // taken out; a crash whose core is gone, a row of its own.
  Status AddJournalInputs() {
    auto read = ReadCoredumpEntries(*options_.journal);
    if (!read.ok()) return MakeError(read.error().kind, "journal: " + read.error().message);
    for (const auto& p : read->problems) summary_.warnings.push_back("journal: " + p);
    summary_.journal_entries = read->entries.size();
    std::map<std::string, std::string> by_name;
    for (const auto& in : inputs_)
      if (!IsUrl(in)) by_name.emplace(Basename(in), in);
    RecordOptions record_options;
    record_options.inventory = inventory_;
    const bool first_shard = !options_.shard || options_.shard->first == 0;
    for (const auto& e : read->entries) {
      Metadata md = JournalMetadata(e);
      const std::string* file = e.Get("COREDUMP_FILENAME");
      if (file && !file->empty()) {
        auto named = by_name.find(Basename(*file));
        struct stat st {};
        if (named != by_name.end()) {
          journal_metadata_[named->second] = std::move(md);
          continue;
        }
        if ((*file)[0] == '/' && ::stat(file->c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
          journal_metadata_[*file] = std::move(md);
          inputs_.push_back(*file);
          continue;
        }
      }
      std::string label = JournalLabel(e, md);
      if (e.core_stored && !e.cursor.empty()) {
        stored_[label] = {e.cursor, e.realtime_us};
        journal_metadata_[label] = std::move(md);
        inputs_.push_back(label);
        continue;
      }
      if (!first_shard) continue;  // the rows of cores that are gone: the first shard's
      // Dated as its entry: the next scan finds it unchanged.
      const std::string path = file && !file->empty() ? *file : label;
      const int64_t mtime_ns = static_cast<int64_t>(e.realtime_us) * 1000;
      if (auto k = known_.find(path); !options_.force && k != known_.end() && k->second.mtime_ns == mtime_ns) {
        ++stored_unchanged_;
        continue;
      }
      std::string why = file && !file->empty() ? "core file missing: " + *file + " (rotated or removed)"
                                               : std::string("the journal entry names no core (systemd-coredump kept none)");
      journal_only_.push_back(JournalOnlyRecord(path, md, why, record_options));
      journal_only_.back().mtime_ns = mtime_ns;
    }
    std::sort(inputs_.begin(), inputs_.end());
    inputs_.erase(std::unique(inputs_.begin(), inputs_.end()), inputs_.end());
    return Ok{};
  }

  // Each stored core of the scan's inputs into a file of the scratch
  // directory, dated as its entry, so that its row's size and mtime say
  // which crash it was; one unchanged since the last scan is not taken out.
  Status ExtractStoredCores() {
    std::vector<std::string> kept;
    for (auto& input : inputs_) {
      auto stored = stored_.find(input);
      if (stored == stored_.end()) {
        kept.push_back(std::move(input));
        continue;
      }
      const std::string& label = input;
      const int64_t mtime_ns = static_cast<int64_t>(stored->second.realtime_us) * 1000;
      if (auto k = known_.find(label); !options_.force && k != known_.end() && k->second.mtime_ns == mtime_ns) {
        ++stored_unchanged_;
        continue;
      }
      Metadata md = journal_metadata_[label];
      auto dir = scratch_.Path();
      if (!dir.ok()) return dir.error();
      std::string path = *dir + "/" + std::to_string(kept.size()) + ".core";
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) return MakeError(ErrorKind::kIo, path + ": " + std::strerror(errno));
      Status s = ExtractStoredCore(*options_.journal, stored->second.cursor, fd,
                                   std::min(options_.max_bytes.value_or(kMaxStoredCore), kMaxStoredCore));
      struct timespec times[2] = {{static_cast<time_t>(mtime_ns / 1000000000), static_cast<long>(mtime_ns % 1000000000)},
                                  {static_cast<time_t>(mtime_ns / 1000000000), static_cast<long>(mtime_ns % 1000000000)}};
      ::futimens(fd, times);
      ::close(fd);
      if (!s.ok()) {
        RecordOptions record_options;
        record_options.inventory = inventory_;
        journal_only_.push_back(JournalOnlyRecord(label, md, "the core stored in the journal: " + s.error().message,
                                                  record_options));
        journal_only_.back().mtime_ns = mtime_ns;
        continue;
      }
      labels_[path] = label;
      journal_metadata_[path] = std::move(md);
      kept.push_back(path);
    }
    inputs_ = std::move(kept);
    return Ok{};
  }

  // Writes the pending records; `spent`, when given, receives them instead
  // of their being destroyed here.
  Status Commit(std::vector<CoreRecord>* spent = nullptr) {
    last_commit_ = Clock::now();
    if (pending_.empty()) return Ok{};
    auto r = dataset_.Write(pending_, all_new_);
    if (spent) spent->swap(pending_);
    pending_.clear();
    return r;
  }

  // Each running process a snapshot, in this process (the workers have
  // ended: no worker inherits a stopped process's tracer); every process
  // gives a row, an error row when it cannot be read.
  Status ScanProcesses() {
    if (options_.pids.empty()) return Ok{};
    RecordOptions record_options;
    record_options.sysroot = options_.sysroot;
    record_options.exe_files = options_.exe_files;
    record_options.inventory = inventory_;
    record_options.environment.allow = options_.environment_allow;
    record_options.environment.host = options_.environment_host;
    SymbolOptions symbol_options;
    symbol_options.sysroot = options_.sysroot;
    symbol_options.extra_files = options_.exe_files;
    FileSymbolProvider symbols(symbol_options);
    for (int pid : options_.pids) {
      Record(AnalyzeProcess(pid, record_options, symbols));
      Progress(false);
    }
    return Commit();
  }

  // Each crash line is an input "log:FILE:LINE", unchanged while its log is.
  Status ScanLogLines(std::vector<LogLine> lines, int jobs) {
    std::vector<LogLine> todo;
    for (auto& line : lines) {
      if (!options_.force && line.stamp.error.empty()) {
        auto it = known_.find(line.label);
        if (it != known_.end() && it->second.size == line.stamp.size && it->second.mtime_ns == line.stamp.mtime_ns) {
          ++summary_.unchanged;
          ++done_;
          continue;
        }
      }
      todo.push_back(std::move(line));
    }
    // A bulk load of new rows, as many as the dataset holds or more: the
    // indexes are built once at the end instead of row by row (a third of
    // a row's cost). Not when rows are replaced: finding their old rows
    // needs the indexes.
    bool replaces = std::any_of(todo.begin(), todo.end(), [&](const LogLine& l) { return known_.count(l.label); });
    bool bulk = todo.size() >= kBulkRows && todo.size() >= known_.size() && !replaces;
    if (bulk)
      if (auto r = dataset_.SuspendIndexes(); !r.ok()) return r.error();
    all_new_ = bulk;
    RecordOptions record_options;
    record_options.sysroot = options_.sysroot;
    record_options.exe_files = options_.exe_files;
    record_options.inventory = inventory_;
    record_options.environment.allow = options_.environment_allow;
    record_options.environment.host = options_.environment_host;
    std::optional<Error> failed;
    AnalyzeLogLines(todo, record_options, jobs, [&](std::vector<CoreRecord>& records) {
      for (auto& r : records) Record(std::move(r));
      records.clear();
      if (auto w = Commit(&records); !w.ok()) {
        failed = w.error();
        return false;
      }
      Progress(false);
      return true;
    });
    all_new_ = false;
    if (bulk)
      if (auto r = dataset_.RestoreIndexes(); !r.ok()) return r.error();
    if (failed) return *failed;
    return Ok{};
  }

  Status LinkLogsToCores() {
    const char* pairs =
        "SELECT l.id AS log, l.path AS log_path, c.id AS core, c.path AS core_path, "
        "abs(CAST(strftime('%s', c.time) AS INTEGER) - CAST(strftime('%s', l.time) AS INTEGER)) AS dt "
        "FROM cores l JOIN cores c ON c.source = 'core' AND c.status = 'ok' AND c.pid = l.pid "
        "WHERE l.source = 'log' AND l.status = 'ok' AND c.time IS NOT NULL AND l.time IS NOT NULL "
        // The same host, when both say which.
        "AND ifnull((SELECT value FROM attributes WHERE core = c.id AND key = 'host') = "
        "(SELECT value FROM attributes WHERE core = l.id AND key = 'host'), 1)";
    std::string best = std::string("SELECT log, log_path, core, core_path FROM (SELECT *, min(dt) FROM (") + pairs +
                       ") WHERE dt <= 300 GROUP BY log)";
    for (const std::string& sql :
         {"INSERT OR REPLACE INTO attributes(core, key, value) SELECT log, 'same_crash_as', core_path FROM (" + best + ")",
          "INSERT OR REPLACE INTO attributes(core, key, value) SELECT core, 'crash_log', log_path FROM (" + best + ")"}) {
      auto r = dataset_.Query(sql);
      if (!r.ok()) return MakeError(r.error().kind, "linking log lines to cores: " + r.error().message);
    }
    return Ok{};
  }

  void Progress(bool final) {
    if (!options_.progress) return;
    auto now = Clock::now();
    if (!final && now - last_progress_ < std::chrono::milliseconds(200)) return;
    last_progress_ = now;
    double elapsed = std::chrono::duration<double>(now - started_).count();
    double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
    double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : 0;
    std::fprintf(options_.progress, "\r%zu/%zu cores  %.0f cores/s  %.1f MiB read  %zu errors  ETA %d:%02d\033[K",
                 done_, total_, rate, static_cast<double>(summary_.bytes_read) / (1 << 20), summary_.errors,
                 static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
    if (final) std::fputc('\n', options_.progress);
    std::fflush(options_.progress);
  }

  const ScanOptions& options_;
  Dataset& dataset_;
  const Inventory* inventory_;
  std::vector<std::string> inputs_;
  std::map<std::string, KnownInput> known_;
  // The journal's: each input's entry's metadata; the stored cores by label
  // (their cursor and entry time) and their files' labels; the rows of
  // crashes whose cores are gone.
  struct StoredCore {
    std::string cursor;
    uint64_t realtime_us = 0;
  };
  std::map<std::string, Metadata> journal_metadata_;
  std::map<std::string, StoredCore> stored_;
  std::map<std::string, std::string> labels_;
  std::vector<CoreRecord> journal_only_;
  size_t stored_unchanged_ = 0;  // stored cores and gone cores' rows the dataset has
  ScratchDirectory scratch_;
  std::vector<Worker> workers_;
  std::vector<CoreRecord> pending_;
  size_t next_ = 0, done_ = 0;
  std::deque<std::pair<uint64_t, std::string>> second_tries_;  // inputs, and why their first try failed
  size_t total_ = 0;       // inputs_ and log lines
  bool all_new_ = false;  // a bulk load of paths the dataset lacks
  ScanSummary summary_;
  Clock::time_point started_ = Clock::now(), last_commit_, last_progress_;
};

}  // namespace

Budget BudgetFor(const std::string& input, double timeout) {
  Budget b{0, timeout};
  if (IsUrl(input)) return b;
  // Opened without blocking and read only when it is a regular file: a
  // FIFO's open would wait for a writer, here in the parent.
  int fd = ::open(input.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return b;
  struct stat st;
  std::byte head[8] = {};
  ssize_t n = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::pread(fd, head, sizeof head, 0) : -1;
  ::close(fd);
  if (n <= 0 || DetectCompression(std::span(head, static_cast<size_t>(n))) == Compression::kNone) return b;
  b.cpu_seconds = timeout + static_cast<double>(st.st_size) / kCompressedBytesPerCpuSecond;
  b.wall_seconds = 4 * b.cpu_seconds;
  return b;
}

Expected<ScanSummary> RunScan(const ScanOptions& options) {
  std::optional<Inventory> inventory;
  if (options.inventory) {
    auto inv = Inventory::Load(*options.inventory);
    if (!inv.ok()) return inv.error();
    inventory = std::move(*inv);
  }
  auto dataset = Dataset::Open(options.db, true);
  if (!dataset.ok()) return dataset.error();
  Scan scan(options, *dataset, inventory ? &*inventory : nullptr);
  return scan.Run();
}

}  // namespace coroner
