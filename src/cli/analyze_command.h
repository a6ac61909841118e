// `coroner analyze CORE...`: the per-core report for each core.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coroner {

struct AnalyzeOptions {
  std::vector<std::string> cores;
  std::optional<uint64_t> max_bytes;
  std::string format = "text";  // text | json
  std::string sysroot;
  bool check_module_files = true;
};

// Prints the reports to stdout, a one-line reason per failed core to stderr.
// Returns the exit status: 0 when every core was analyzed, 1 otherwise.
int RunAnalyze(const AnalyzeOptions& options);

}  // namespace coroner
