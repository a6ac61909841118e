#include "journal/coredump_journal.h"

#include <systemd/sd-journal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "base/fd_io.h"

namespace coroner {
namespace {

// The fields coroner keeps: identity and place, never the environment,
// the command line, /proc's files or the message (secrets).
constexpr std::string_view kKept[] = {
    "_HOSTNAME", "_BOOT_ID", "_MACHINE_ID",
    "COREDUMP_PID", "COREDUMP_TID", "COREDUMP_UID", "COREDUMP_GID", "COREDUMP_SIGNAL", "COREDUMP_TIMESTAMP",
    "COREDUMP_COMM", "COREDUMP_EXE", "COREDUMP_UNIT", "COREDUMP_USER_UNIT", "COREDUMP_SLICE", "COREDUMP_CGROUP",
    "COREDUMP_OWNER_UID", "COREDUMP_FILENAME", "COREDUMP_TRUNCATED", "COREDUMP_PACKAGE_NAME",
    "COREDUMP_PACKAGE_VERSION", "COREDUMP_THREAD_NAME",
};
// More crash entries than any fleet's journal holds: the rest is a problem, not memory.
constexpr size_t kMaxEntries = 1000000;
constexpr size_t kMaxFiles = 100000;
constexpr std::string_view kStoredCore = "COREDUMP=";

struct JournalCloser {
  void operator()(sd_journal* j) const { sd_journal_close(j); }
};
using Journal = std::unique_ptr<sd_journal, JournalCloser>;

std::string Errno(int r) { return std::strerror(r < 0 ? -r : r); }

// The journal files under the paths: a file as it is, a directory's
// *.journal and *.journal~ (rotated after an unclean shutdown) at any
// depth, sorted; unreadable directories are problems.
std::vector<std::string> JournalFiles(const std::vector<std::string>& paths, std::vector<std::string>& problems) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      files.push_back(path);
      continue;
    }
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) {
      problems.push_back(path + ": " + ec.message());
      continue;
    }
    for (; it != end && files.size() < kMaxFiles; it.increment(ec)) {
      if (ec) {
        problems.push_back(path + ": " + ec.message());
        break;
      }
      std::string name = it->path().filename().string();
      bool journal = name.ends_with(".journal") || name.ends_with(".journal~");
      if (journal && it->is_regular_file(ec)) files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

Expected<Journal> OpenFiles(const std::vector<std::string>& files) {
  std::vector<const char*> argv;
  for (const auto& f : files) argv.push_back(f.c_str());
  argv.push_back(nullptr);
  sd_journal* j = nullptr;
  int r = sd_journal_open_files(&j, argv.data(), 0);
  if (r < 0) return MakeError(ErrorKind::kIo, Errno(r));
  return Journal(j);
}

// The selection's journal. One file sd-journal refuses (a corrupt header)
// makes it refuse them all: then each is tried alone, and the readable ones
// are opened together, the others reported.
Expected<Journal> Open(const JournalSelection& selection, std::vector<std::string>& problems) {
  if (selection.paths.empty()) {
    sd_journal* j = nullptr;
    int r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
    if (r < 0) return MakeError(ErrorKind::kIo, "the system journal: " + Errno(r));
    return Journal(j);
  }
  std::vector<std::string> files = JournalFiles(selection.paths, problems);
  if (files.empty()) return MakeError(ErrorKind::kIo, "no journal files in " + selection.paths.front());
  if (auto all = OpenFiles(files); all.ok()) return all;
  std::vector<std::string> readable;
  for (const auto& f : files) {
    if (auto one = OpenFiles({f}); one.ok()) {
      readable.push_back(f);
    } else {
      problems.push_back(f + ": not a readable journal file (" + one.error().message + ")");
    }
  }
  if (readable.empty()) return MakeError(ErrorKind::kIo, "no readable journal file among " + std::to_string(files.size()));
  return OpenFiles(readable);
}

Status Select(sd_journal* j, const JournalSelection& selection) {
  std::string id = "MESSAGE_ID=" + std::string(kCoredumpMessageId);
  int r = sd_journal_add_match(j, id.data(), id.size());
  if (r >= 0 && selection.boot_id) {
    std::string boot = "_BOOT_ID=" + *selection.boot_id;
    r = sd_journal_add_match(j, boot.data(), boot.size());
  }
  if (r < 0) return MakeError(ErrorKind::kIo, "matching the crash entries: " + Errno(r));
  r = selection.since_us ? sd_journal_seek_realtime_usec(j, static_cast<uint64_t>(std::max<int64_t>(0, *selection.since_us)))
                         : sd_journal_seek_head(j);
  if (r < 0) return MakeError(ErrorKind::kIo, "seeking: " + Errno(r));
  return Ok{};
}

}  // namespace

const std::string* CoredumpEntry::Get(std::string_view name) const {
  for (const auto& [k, v] : fields)
    if (k == name) return &v;
  return nullptr;
}

std::vector<std::string_view> KeptJournalFields() { return {std::begin(kKept), std::end(kKept)}; }

Expected<JournalRead> ReadCoredumpEntries(const JournalSelection& selection) {
  JournalRead out;
  auto journal = Open(selection, out.problems);
  if (!journal.ok()) return journal.error();
  sd_journal* j = journal->get();
  if (auto s = Select(j, selection); !s.ok()) return s.error();
  // Only the head of each field: a stored core is not decompressed to be listed.
  sd_journal_set_data_threshold(j, kMaxJournalValue + kStoredCore.size());
  for (;;) {
    int r = sd_journal_next(j);
    if (r == 0) break;
    if (r < 0) {
      out.problems.push_back("reading the journal stopped after " + std::to_string(out.entries.size()) +
                             " crash entries: " + Errno(r));
      break;
    }
    if (out.entries.size() >= kMaxEntries) {
      out.problems.push_back("more than " + std::to_string(kMaxEntries) + " crash entries; the rest not read");
      break;
    }
    CoredumpEntry e;
    uint64_t usec = 0;
    if (sd_journal_get_realtime_usec(j, &usec) >= 0) e.realtime_us = usec;
    if (selection.until_us && e.realtime_us > static_cast<uint64_t>(std::max<int64_t>(0, *selection.until_us))) break;
    char* cursor = nullptr;
    if (sd_journal_get_cursor(j, &cursor) >= 0 && cursor) {
      e.cursor = cursor;
      std::free(cursor);
    }
    const void* data = nullptr;
    size_t length = 0;
    std::vector<std::pair<std::string_view, std::string>> found;
    // A field that cannot be read (corrupt, or compressed in a way this
    // libsystemd does not know) is skipped, not the entry.
    SD_JOURNAL_FOREACH_DATA(j, data, length) {
      std::string_view field(static_cast<const char*>(data), length);
      if (field.starts_with(kStoredCore)) {
        e.core_stored = true;
        continue;
      }
      size_t eq = field.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view name = field.substr(0, eq);
      auto kept = std::find(std::begin(kKept), std::end(kKept), name);
      if (kept == std::end(kKept)) continue;
      if (std::any_of(found.begin(), found.end(), [&](const auto& f) { return f.first == *kept; })) continue;
      found.emplace_back(*kept, std::string(field.substr(eq + 1, kMaxJournalValue)));
    }
    for (std::string_view name : kKept)
      for (auto& [k, v] : found)
        if (k == name) e.fields.emplace_back(std::string(name), std::move(v));
    out.entries.push_back(std::move(e));
  }
  return out;
}

Status ExtractStoredCore(const JournalSelection& selection, const std::string& cursor, int fd, uint64_t max_bytes) {
  std::vector<std::string> problems;
  auto journal = Open(selection, problems);
  if (!journal.ok()) return journal.error();
  sd_journal* j = journal->get();
  int r = sd_journal_seek_cursor(j, cursor.c_str());
  if (r >= 0) r = sd_journal_next(j);
  if (r <= 0 || sd_journal_test_cursor(j, cursor.c_str()) <= 0)
    return MakeError(ErrorKind::kIo, "the journal entry is gone" + (r < 0 ? " (" + Errno(r) + ")" : std::string()));
  const uint64_t limit = std::min<uint64_t>(max_bytes, SIZE_MAX - kStoredCore.size() - 1);
  sd_journal_set_data_threshold(j, static_cast<size_t>(limit + kStoredCore.size() + 1));
  const void* data = nullptr;
  size_t length = 0;
  r = sd_journal_get_data(j, "COREDUMP", &data, &length);
  if (r < 0) return MakeError(ErrorKind::kIo, "the entry's stored core cannot be read: " + Errno(r));
  if (length < kStoredCore.size()) return MakeError(ErrorKind::kMalformed, "the entry's COREDUMP field is malformed");
  length -= kStoredCore.size();
  if (length > limit)
    return MakeError(ErrorKind::kUnsupported, "the stored core is larger than " + std::to_string(limit) + " bytes");
  if (!WriteAll(fd, static_cast<const char*>(data) + kStoredCore.size(), length))
    return MakeError(ErrorKind::kIo, std::string("writing the stored core: ") + std::strerror(errno));
  return Ok{};
}

}  // namespace coroner
