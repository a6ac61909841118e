// `coroner scan INPUT... --db FILE` and `coroner query --db FILE "SQL"`.
#pragma once

#include <string>

#include "dataset/scanner.h"

namespace coroner {

// Runs the scan and prints its summary to stdout. Exit status: 0 when the
// scan finished (error rows included), 1 when the dataset could not be
// written, 2 for unusable arguments (an inventory that does not parse).
int RunScanCommand(ScanOptions options);

// Runs one read-only query and prints a table, or JSON rows.
int RunQueryCommand(const std::string& db, const std::string& sql, bool json);

}  // namespace coroner
