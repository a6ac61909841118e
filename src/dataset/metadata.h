// Metadata: what is known about a core besides its bytes — where and when
// it crashed. Gathered, in order of precedence, from
//   1. the sidecar `<core>.json` (a flat object; every key an attribute;
//      `time` and `boot_time` in ISO-8601),
//   2. systemd-coredump's journal entry for the core (dataset/journal_metadata.h),
//   3. systemd-coredump's extended attributes (`user.coredump.*`; their
//      host yields to the one the core's environment names, core_record.cc),
//   4. systemd-coredump's file name, core.COMM.UID.BOOTID.PID.USEC[.zst],
//   5. the file's modification time (for the time only),
// and then joined with an inventory (hosts.csv) on `host`, by crash time
// when its rows carry valid_from/valid_to.
//
// Metadata is untrusted like the core: sizes are capped, and what cannot be
// used is reported in `warnings`, never fatal.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace coroner {

struct Metadata {
  std::vector<std::pair<std::string, std::string>> attributes;  // key order as found
  std::optional<int64_t> time;       // crash time, seconds since the epoch
  std::string time_source;           // sidecar, xattr, filename, btime, mtime
  std::optional<int64_t> boot_time;  // the node's boot time
  std::vector<std::string> warnings;

  const std::string* Get(const std::string& key) const;
  // Adds key=value unless key is already set (earlier sources win).
  void Add(const std::string& key, const std::string& value);
  // Crash time minus boot time, when both are known and consistent.
  std::optional<int64_t> Uptime() const;
};

// `mtime_ns` is the input's modification time when known (local files, or
// Last-Modified of a URL); `journal` the core's journal entry's metadata.
Metadata ReadMetadata(const std::string& input, std::optional<int64_t> mtime_ns,
                      std::optional<int64_t> btime_ns = std::nullopt, const Metadata* journal = nullptr);

// The attributes a systemd-coredump file name carries (comm, uid, boot_id,
// pid) and its time; false when the name does not follow the convention.
bool ParseCoredumpFileName(const std::string& basename, Metadata& out);

// hosts.csv: a header row naming the columns, one of them `host`; optional
// `valid_from` and `valid_to` (ISO-8601) bound when a row applies, so that a
// VM that moved between machines joins to the one it was on at the crash.
class Inventory {
 public:
  static Expected<Inventory> Load(const std::string& path);
  static Expected<Inventory> Parse(const std::string& text);

  // Adds the columns of the row for the core's host at its time (rows
  // without bounds always apply; the first matching row wins). Does nothing
  // without a host attribute.
  void Join(Metadata& metadata) const;

  struct Row {
    std::string host;
    std::optional<int64_t> valid_from, valid_to;
    // The row's non-empty cells but host and the bounds: the column's name
    // (held once by the inventory, not per row) and the value.
    std::vector<std::pair<std::string_view, std::string>> columns;
  };
  // In file order; epi reads the placements as the population at risk.
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::shared_ptr<const std::vector<std::string>> names_;  // the header, which rows' column names view
  std::vector<Row> rows_;
};

// One CSV record per line (RFC 4180 quoting; a quoted field may not span
// lines). Exposed for the tests.
std::vector<std::string> SplitCsvLine(const std::string& line);

}  // namespace coroner
