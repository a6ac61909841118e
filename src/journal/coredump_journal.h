// The journal's crash entries: what systemd-coredump logged about each core
// it took (MESSAGE_ID fc2e22bc6ee647b6b90729ab34a250b1), read through
// libsystemd's sd-journal as coredumpctl reads them.
//
// A journal is untrusted like a core: an entry's fields are capped, only
// the fields in the allowlist below are kept (never the environment, the
// command line, /proc's files or the message with its stack trace, which
// hold secrets), and a file that is corrupt, truncated or being written
// gives the entries that can be read and problems that say what could not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace coroner {

// Which journal, and which of its crash entries.
struct JournalSelection {
  // Directories (read recursively as journalctl -D) and .journal files;
  // none: the system journal, this machine's, as coredumpctl reads it.
  std::vector<std::string> paths;
  std::optional<int64_t> since_us, until_us;  // realtime bounds, microseconds since the epoch
  std::optional<std::string> boot_id;         // 32 hex digits: only this boot's entries
};

// The message id systemd-coredump logs each core under.
inline constexpr std::string_view kCoredumpMessageId = "fc2e22bc6ee647b6b90729ab34a250b1";

struct CoredumpEntry {
  std::string cursor;     // sd-journal's, to find the entry again
  uint64_t realtime_us = 0;  // when the entry was written
  // The allowlisted fields the entry has, by their journal names, each at
  // most kMaxJournalValue bytes, in allowlist order.
  std::vector<std::pair<std::string, std::string>> fields;
  // The core is stored in the entry itself (Storage=journal), in its
  // COREDUMP field: ExtractStoredCore writes it out.
  bool core_stored = false;

  const std::string* Get(std::string_view name) const;
};

// Journal fields kept, and the longest value kept of each.
std::vector<std::string_view> KeptJournalFields();
inline constexpr size_t kMaxJournalValue = 4096;

struct JournalRead {
  std::vector<CoredumpEntry> entries;  // oldest first
  std::vector<std::string> problems;   // one line each: what could not be read
};

// Fails only when no journal can be opened at all.
Expected<JournalRead> ReadCoredumpEntries(const JournalSelection& selection);

// Writes the core stored in the entry at `cursor` to `fd`; an error when
// the entry or its COREDUMP field is gone or unreadable, or the core is
// larger than `max_bytes`.
Status ExtractStoredCore(const JournalSelection& selection, const std::string& cursor, int fd, uint64_t max_bytes);

}  // namespace coroner
