// `coroner scan INPUT... --db FILE`, `coroner merge --db OUT SHARD...` and
// `coroner query --db FILE "SQL"`: the dataset's commands.
#pragma once

#include <string>
#include <vector>

#include "dataset/scanner.h"

namespace coroner {

// Runs the scan and prints its summary to stdout. Exit status: 0 when the
// scan finished (error rows included), 1 when the dataset could not be
// written, 2 for unusable arguments (an inventory that does not parse).
// `rules_file` (--rules), when given, adds its [environment] allow list.
int RunScanCommand(ScanOptions options, const std::string& rules_file = "");

// Merges shard datasets into `out` and prints what it did.
int RunMergeCommand(const std::string& out, const std::vector<std::string>& shards);

// Runs one read-only query and prints a table, or JSON rows.
int RunQueryCommand(const std::string& db, const std::string& sql, bool json);

}  // namespace coroner
