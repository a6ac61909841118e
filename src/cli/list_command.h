// `coroner list`: coredumpctl list's view of the crashes, one line each,
// newest first — from a dataset (--db) or straight from systemd-coredump's
// journal (--journal), without one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "journal/coredump_journal.h"

namespace coroner {

// The journal flags as users give them (scan and list take the same):
// paths (none: the system journal), --since/--until (dataset/timestamps.h's
// ParseTimeArgument), --boot (an id, or "" for this machine's boot).
struct JournalFlags {
  std::vector<std::string> paths;
  std::string since, until;
  std::optional<std::string> boot;
};
// The selection they name; false, with a one-line message on stderr, when
// a time or a boot id does not parse.
bool MakeJournalSelection(const JournalFlags& flags, JournalSelection& out);

struct ListCommandOptions {
  std::string db;                          // a dataset, or
  std::optional<JournalSelection> journal; // the journal
  bool json = false;
  size_t limit = 0;  // 0: every crash
};

int RunListCommand(const ListCommandOptions& options);

}  // namespace coroner
