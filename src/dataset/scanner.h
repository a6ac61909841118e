// Scanner: `coroner scan` — every input analyzed into the dataset, in
// parallel, resumable, one row per input whatever happens to it.
//
// The cores are analyzed by worker processes (one per job), each with its
// own symbol cache, so that an input that crashes the analysis, hangs, or
// makes it allocate without end costs one error row and a restarted
// worker, not the scan. Crashlog lines, small and bounded, are analyzed on
// threads instead (dataset/log_scan.h). The parent alone writes the
// dataset, committing whole records in batches: a scan killed at any
// moment and started again finds every committed input unchanged and
// analyzes the rest.
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/module_files.h"
#include "dataset/metadata.h"
#include "journal/coredump_journal.h"
#include "base/expected.h"

namespace coroner {

struct ScanOptions {
  std::vector<std::string> inputs;  // as given: files, directories, globs, @lists, URLs
  std::vector<std::string> logs;    // files with crashlog lines (`coroner-crash: ...`)
  std::vector<int> pids;            // running processes, each snapshotted into a row (--pid)
  // systemd-coredump's journal (--journal): each crash entry's core (its
  // file, matched among the inputs by name or found where the entry says,
  // or stored in the entry) with the entry's fields as attributes; a crash
  // whose core is gone still gets a row.
  std::optional<JournalSelection> journal;
  std::string db;
  int jobs = 0;  // 0: the machine's CPUs
  std::optional<std::string> inventory;
  std::optional<uint64_t> max_bytes;
  double timeout_seconds = 60;  // per input
  uint64_t memory_limit = 4ull << 30;  // address space per worker (not under sanitizers)
  bool force = false;                  // re-analyze unchanged inputs too
  std::optional<std::pair<int, int>> shard;  // (index, count): scan only this shard of the inputs
  Sysroot sysroot;
  // Programs' and libraries' files (`--exe`) for cores that do not say
  // where theirs are (qemu-user's), matched by file name, and by build-id
  // for symbols.
  std::vector<std::string> exe_files;
  std::vector<std::string> environment_allow;  // identity variables kept besides the built-in ones
  std::vector<std::string> environment_host;   // variables naming the host (rules' [environment] host)
  FILE* progress = nullptr;  // a live progress line goes here (a terminal), or nowhere
};

struct ScanSummary {
  size_t inputs = 0;     // after expansion
  size_t analyzed = 0;   // rows written by this run
  size_t unchanged = 0;  // skipped: same path, size and mtime as in the dataset
  size_t ok = 0, partial = 0, errors = 0;
  uint64_t bytes_read = 0;
  std::vector<uint64_t> bytes_per_core;  // of the rows written, for the median
  double seconds = 0;
  std::vector<std::string> warnings;  // from expanding the inputs, from reading the journal
  size_t journal_entries = 0;          // crash entries the journal gave
  std::map<std::string, size_t> error_kinds;  // "not-elf" -> n
};

// How long an input may take. A plain core: --timeout of wall-clock time.
// A stream-compressed one must be decoded up to each byte it needs, which
// takes CPU time the machine's load does not change the amount of: its
// budget is the worker's CPU time, --timeout and one more second per
// kCompressedBytesPerCpuSecond of the stream, and the wall clock bounds it
// only at four times that (a hang still ends).
inline constexpr double kCompressedBytesPerCpuSecond = 4.0 * (1 << 20);
struct Budget {
  double cpu_seconds = 0;   // 0: none, the wall clock alone
  double wall_seconds = 0;
};
Budget BudgetFor(const std::string& input, double timeout);

// Fails only when the dataset or the inventory cannot be opened or written;
// bad inputs become error rows.
Expected<ScanSummary> RunScan(const ScanOptions& options);

}  // namespace coroner
