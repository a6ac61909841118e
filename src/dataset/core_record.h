// CoreRecord: one input's row of the dataset and everything hanging off it
// (attributes, threads, frames, modules), as `coroner scan` stores it.
//
// Every input gives exactly one record: a core that cannot be analyzed
// still has one, with status "error" and the reason. Records travel from
// the scan's worker processes to the writer as JSON (RecordToJson /
// RecordFromJson). Each field's column is defined once, in
// dataset/record_columns.h: a field added to a struct here is added there.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataset/metadata.h"
#include "processor/process_identity.h"
#include "base/expected.h"
#include "symbolize/symbol_provider.h"

namespace coroner {

// A word the dataset keeps (a pc, an sp, a fault address): stored as hex
// text, or as kHiddenEnvironment when its bytes are a hidden environment
// variable's (a return address a string overflow wrote).
struct StoredWord {
  uint64_t value = 0;
  bool hidden = false;
  StoredWord(uint64_t v = 0) : value(v) {}  // NOLINT: a word is a number, unless hidden
  bool operator==(const StoredWord&) const = default;
};

struct AttributeRow {
  std::string key, value;
};

struct ThreadRow {
  int index = 0;
  int tid = 0;
  bool crashing = false;
  StoredWord pc, sp;
  std::string registers;  // JSON object, gdb's names and order
  double cpu_seconds = 0;
};

struct FrameRow {
  int thread = 0;  // index into the threads
  int index = 0;
  StoredWord pc;
  std::string module, build_id;
  std::optional<uint64_t> offset;
  std::string function, file;
  int line = 0;
  std::string trust;
  bool inlined = false;
};

struct ModuleRow {
  std::string path;
  uint64_t base = 0, size = 0;
  std::string build_id, status;
};

// A row's `status`: the full analysis finished (ok); it did not, and the
// row holds what the notes give (partial); nothing could be read (error).
enum class RowStatus : uint8_t { kOk, kPartial, kError };
// "ok", "partial", "error": the dataset's and the workers' JSON's words.
const char* RowStatusName(RowStatus s);
std::optional<RowStatus> RowStatusFromName(std::string_view name);

struct CoreRecord {
  std::string path;
  std::string source = "core";  // core, or log for crashlog lines
  std::optional<uint64_t> size;
  std::optional<int64_t> mtime_ns;
  uint64_t bytes_read = 0;
  // ok; partial: the full analysis did not finish (it timed out, or the
  // analyzer died), and the row holds what the notes give (registers, the
  // signal, the modules), `error` saying why; error: nothing could be read.
  RowStatus status = RowStatus::kOk;
  std::string error;  // why, when status is partial or error: "KIND: message" when it has a kind
  // The kind of the error that made the row an error (`error`'s first
  // word); none for an analysis that died or timed out. Not a column: the
  // scan's summary counts the kinds.
  std::optional<ErrorKind> error_kind;
  std::vector<std::string> warnings;  // what is missing from a partial result
  std::optional<int64_t> time, uptime;
  std::string time_source;
  std::optional<int> pid;
  std::string comm;
  std::optional<int> signal, si_code;  // as the core holds them
  std::optional<StoredWord> fault_address;
  // The real fault behind a signal a handler re-raised, when recovered.
  std::optional<int> real_signal, real_si_code;
  std::optional<StoredWord> real_fault_address;
  std::string syndrome, context, signature;
  std::optional<int> crashing_tid;
  std::string exe, build_id;
  bool truncated = false;
  std::optional<double> cpu_seconds;  // the process's CPU time (user + system, all threads)
  double analysis_ms = 0;
  std::vector<AttributeRow> attributes;
  std::vector<ThreadRow> threads;
  std::vector<FrameRow> frames;
  std::vector<ModuleRow> modules;
};

struct RecordOptions {
  std::optional<uint64_t> max_bytes;
  Sysroot sysroot;
  std::vector<std::string> exe_files;  // --exe
  int max_frames = 256;  // of the crashing thread
  const Inventory* inventory = nullptr;  // joined on host, when given
  EnvironmentPolicy environment;         // identity variables kept besides the built-in ones
  // The notes alone: every thread's registers, the signal and the modules,
  // no unwinding, no labels. What a row keeps of a core whose full analysis
  // did not finish (a `partial` row).
  bool notes_only = false;
  // systemd-coredump's journal entries' metadata, by input (a core file's
  // path): ranked after a sidecar, before the xattrs (dataset/metadata.h).
  const std::map<std::string, Metadata>* journal = nullptr;
};

// The attributes of a rank of a distributed job, from its core (a sidecar's
// keys of the same names win): launcher, job_id, job_step, job_restart,
// rank, world_size, local_rank, job_node, gpus.
const std::vector<std::string>& JobAttributeKeys();

// Reads one input (file or URL) and analyzes it: every thread's registers;
// the crashing thread unwound, symbolized and diagnosed. Never fails: an
// input that cannot be read gives a record with status "error".
CoreRecord AnalyzeInput(const std::string& input, const RecordOptions& options, SymbolProvider& symbols);

// One crashlog line (core/crash_line.h), analyzed as a core: a record
// with source "log" and `label` as its path ("log:FILE:LINE"). A line that
// does not parse is an error row with the reason.
CoreRecord AnalyzeLogLine(std::string_view text, const std::string& label, const RecordOptions& options,
                          SymbolProvider& symbols);

// A running process's snapshot (live/snapshot.h), analyzed as a core: a
// record with source "snapshot", its path "snapshot:HOST:PID:TIME" (TIME
// in ISO 8601 UTC, to the millisecond), its time the snapshot's and its
// host this machine's. A process that cannot be read is an error row with
// the reason (denied: another user's, a debugger's; io: gone).
CoreRecord AnalyzeProcess(int pid, const RecordOptions& options, SymbolProvider& symbols);

// The row of a crash the journal logged whose core cannot be read (the
// file rotated away or never kept, the stored core unreadable): status
// partial, `why` in its error, and what the journal alone gives — the
// process, its signal, the executable and its package — with `md`'s
// attributes; `path` the core file's name, or the entry's label.
CoreRecord JournalOnlyRecord(const std::string& path, const Metadata& md, const std::string& why,
                             const RecordOptions& options);

// Makes `r` an error row: `error` is "KIND: message" (or the message alone
// without a kind).
void SetError(CoreRecord& r, std::optional<ErrorKind> kind, const std::string& message);
// A record for an input that gave no analysis: unreadable (a kind), or an
// analysis that crashed or timed out (none).
CoreRecord ErrorRecord(const std::string& input, std::optional<ErrorKind> kind, const std::string& message);

nlohmann::json RecordToJson(const CoreRecord& r);
Expected<CoreRecord> RecordFromJson(const nlohmann::json& j);

// Fills time, uptime and attributes from gathered metadata.
void ApplyMetadata(CoreRecord& r, const Metadata& md);

// The size and modification time of an input without reading it (stat for
// files, the server's answer for URLs: that costs the first range request).
struct InputStamp {
  std::optional<uint64_t> size;
  std::optional<int64_t> mtime_ns;
  std::optional<int64_t> btime_ns;  // when the file was created, where the file system keeps it
  std::string error;  // when it cannot be stat'ed
};
InputStamp StampInput(const std::string& input);

}  // namespace coroner
