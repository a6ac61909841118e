#include "dataset/log_scan.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "core/crash_line.h"
#include "source/byte_source.h"

namespace coroner {
namespace {

constexpr size_t kMaxLogLine = (256 + 1) * 1024;  // past the crash-line reader's limit, so a longer line is rejected
constexpr size_t kBatch = 1024;                    // lines per hand-over (and per transaction of the writer)

// Calls `line(number, offset, text)` for each line of the file holding a
// crash line, reading in 1 MiB blocks; a line longer than kMaxLogLine is
// passed cut (the reader then rejects it with a reason). False when the
// file cannot be read.
bool ForEachCrashLine(const std::string& path,
                      const std::function<void(size_t, uint64_t, std::string_view)>& line) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::vector<char> buf(1 << 20);
  std::string partial;
  uint64_t at = 0, start = 0;  // file offset of buf[0], of the current line
  size_t number = 1;           // of the current line, from 1
  bool ok = true;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    size_t pos = 0;
    while (pos < static_cast<size_t>(n)) {
      const char* nl = static_cast<const char*>(std::memchr(buf.data() + pos, '\n', static_cast<size_t>(n) - pos));
      size_t end = nl ? static_cast<size_t>(nl - buf.data()) : static_cast<size_t>(n);
      size_t take = std::min(end - pos, kMaxLogLine - std::min(kMaxLogLine, partial.size()));
      partial.append(buf.data() + pos, take);
      if (!nl) break;
      if (HasCrashLine(partial)) line(number, start, partial);
      partial.clear();
      ++number;
      pos = end + 1;
      start = at + pos;
    }
    at += static_cast<uint64_t>(n);
  }
  if (!partial.empty() && HasCrashLine(partial)) line(number, start, partial);
  ::close(fd);
  return ok;
}

// Reads and analyzes lines [begin, end), each log opened once for them.
// Lines that follow one another in a log are read together, up to
// kMaxSpan bytes at a time (a read per line was a third of the reads).
std::vector<CoreRecord> AnalyzeBatch(const std::vector<LogLine>& lines, size_t begin, size_t end,
                                     const RecordOptions& options, SymbolProvider& symbols) {
  constexpr uint64_t kMaxSpan = 4 << 20;
  std::vector<CoreRecord> out;
  out.reserve(end - begin);
  std::string open_file;
  std::unique_ptr<ByteSource> file;  // open_file's, null when it cannot be opened
  std::string span;                  // bytes [span_at, span_at + span.size()) of open_file
  uint64_t span_at = 0;
  bool span_ok = false;
  // `length` bytes from `at` into the span; false when the log is shorter now.
  auto read = [&](uint64_t at, size_t length) {
    span.resize(length);
    auto got = file->ReadUpTo(at, std::as_writable_bytes(std::span(span.data(), length)));
    return got.ok() && *got == length;
  };
  for (size_t i = begin; i < end; ++i) {
    const LogLine& log = lines[i];
    if (!log.stamp.error.empty()) {
      out.push_back(ErrorRecord(log.label, ErrorKind::kIo, log.stamp.error));
      continue;
    }
    if (log.file != open_file) {
      auto opened = OpenFileSource(log.file);
      file = opened.ok() ? std::move(*opened) : nullptr;
      open_file = log.file;
      span.clear();
      span_ok = false;
    }
    bool in_span = span_ok && log.offset >= span_at && log.offset - span_at <= span.size() &&
                   log.length <= span.size() - (log.offset - span_at);
    if (!in_span && file) {
      // This line and the ones after it in the same log, while they are close.
      uint64_t last = log.offset + log.length;
      for (size_t j = i + 1; j < end && lines[j].file == log.file && lines[j].offset >= log.offset &&
                             lines[j].offset + lines[j].length - log.offset <= kMaxSpan;
           ++j)
        last = std::max(last, lines[j].offset + lines[j].length);
      span_at = log.offset;
      span_ok = read(span_at, static_cast<size_t>(last - span_at));
      // A log cut shorter since it was listed: this line alone, if it is still there.
      if (!span_ok && last > log.offset + log.length) span_ok = read(span_at, log.length);
      in_span = span_ok;
    }
    if (!in_span) {
      out.push_back(ErrorRecord(log.label, ErrorKind::kIo, "the log changed while it was read"));
      continue;
    }
    std::string_view text(span.data() + (log.offset - span_at), log.length);
    CoreRecord r = AnalyzeLogLine(text, log.label, options, symbols);
    r.size = log.stamp.size;
    r.mtime_ns = log.stamp.mtime_ns;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<LogLine> FindLogLines(const std::vector<std::string>& logs,
                                  const std::optional<std::pair<int, int>>& shard) {
  std::vector<LogLine> out;
  std::set<std::string> seen;
  for (const auto& given : logs) {
    std::string path = std::filesystem::absolute(given).lexically_normal().string();
    if (!seen.insert(path).second) continue;  // a log named twice is read once
    InputStamp stamp = StampInput(path);
    auto add = [&](LogLine line) {
      if (shard) {
        uint64_t h = 1469598103934665603ull;  // FNV-1a: the same split everywhere
        for (unsigned char c : line.label) h = (h ^ c) * 1099511628211ull;
        if (static_cast<int>(h % static_cast<uint64_t>(shard->second)) != shard->first) return;
      }
      out.push_back(std::move(line));
    };
    bool read = stamp.error.empty() && ForEachCrashLine(path, [&](size_t number, uint64_t offset, std::string_view text) {
      add(LogLine{"log:" + path + ":" + std::to_string(number), path, offset, static_cast<uint32_t>(text.size()), stamp});
    });
    if (!read) {
      LogLine bad{"log:" + path, path, 0, 0, stamp};
      if (bad.stamp.error.empty()) bad.stamp.error = std::strerror(errno);
      add(std::move(bad));
    }
  }
  return out;
}

void AnalyzeLogLines(const std::vector<LogLine>& lines, const RecordOptions& options, int threads,
                     const std::function<bool(std::vector<CoreRecord>&)>& sink) {
  size_t batches = (lines.size() + kBatch - 1) / kBatch;
  if (batches == 0) return;
  size_t n = std::clamp<size_t>(static_cast<size_t>(std::max(threads, 1)), 1, batches);
  // Batch b's records wait in slot b until the caller takes them in order;
  // an analyzer runs at most `window` batches ahead of the caller, so the
  // records held stay bounded whatever the log's size.
  const size_t window = 2 * n;
  std::vector<std::optional<std::vector<CoreRecord>>> slots(batches);
  std::vector<std::vector<CoreRecord>> spent;  // the sink's leftovers, for an analyzer to free
  std::mutex mu;
  std::condition_variable ready, taken;
  size_t next = 0, consumed = 0;
  bool stop = false;
  auto analyzer = [&] {
    // The writer is the critical path: the analyzers stay a window ahead of
    // it and then wait. Where there are fewer CPUs than threads they yield
    // to it (5 nice levels lower, this thread only): about 0.3 s less of
    // 4.5 for 100,000 lines on 2 CPUs.
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
    if (errno == 0) setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), std::min(nice + 5, 19));
    SymbolOptions symbol_options;
    symbol_options.sysroot = options.sysroot;
    symbol_options.extra_files = options.exe_files;
    FileSymbolProvider symbols(symbol_options);
    for (;;) {
      size_t b;
      std::vector<std::vector<CoreRecord>> to_free;
      {
        std::unique_lock lock(mu);
        taken.wait(lock, [&] { return stop || next >= batches || next < consumed + window; });
        if (stop || next >= batches) return;
        b = next++;
        to_free.swap(spent);
      }
      to_free.clear();
      auto records = AnalyzeBatch(lines, b * kBatch, std::min(lines.size(), (b + 1) * kBatch), options, symbols);
      std::lock_guard lock(mu);
      slots[b] = std::move(records);
      ready.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (size_t i = 0; i < n; ++i) pool.emplace_back(analyzer);
  for (size_t b = 0; b < batches; ++b) {
    std::vector<CoreRecord> records;
    {
      std::unique_lock lock(mu);
      ready.wait(lock, [&] { return slots[b].has_value(); });
      records = std::move(*slots[b]);
      slots[b].reset();
      consumed = b + 1;
      taken.notify_all();
    }
    bool more = sink(records);
    std::lock_guard lock(mu);
    if (!records.empty()) spent.push_back(std::move(records));
    if (!more) {
      stop = true;
      taken.notify_all();
      break;
    }
  }
  for (auto& t : pool) t.join();
}

}  // namespace coroner
