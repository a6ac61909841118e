// User rules for `coroner epi --rules FILE`: labels and exclusions, each an
// SQL condition over the dataset's `cores` table, applied before clustering.
// An exclusion removes known false positives (cores a log says were test
// kills, say); a label puts the cores it matches into one cluster of that
//
//   [[exclude]]
//   name = "chaos test kills"
//   where = "comm = 'chaos-monkey'"
//
//   [[label]]
//   name = "libunwind setcontext race"
//   where = "syndrome = 'return-to-null' AND context = 'exception-unwind'"
//
//   [signature]            # more frames to skip, on top of the built-in list
//   skip = ["my_fatal_handler"]
//   skip_prefixes = ["folly::symbolizer::"]
//
//   [environment]          # identity variables analyze and scan keep (with --rules)
//   allow = ["POD_NAME", "MY_JOB_*"]
//   host = ["NODE_NAME"]   # variables naming the host (Kubernetes' downward API)
#pragma once

#include <string>
#include <vector>

#include "base/expected.h"

namespace coroner {

struct Rule {
  enum class Kind { kExclude, kLabel } kind = Kind::kExclude;
  std::string name;
  std::string where;
};

struct Rules {
  std::vector<Rule> rules;  // in file order; the first label that matches wins
  // Function names (exact, and prefixes) the signatures skip besides the
  // built-in ones; when any are given, signatures are made again from the
  // crashing threads' frames in the dataset.
  std::vector<std::string> skip, skip_prefixes;
  // Environment variables kept besides the built-in identity list: exact
  // names, or prefixes ending in '*' (which never admit a name that looks
  // like a secret: processor/process_identity.h).
  std::vector<std::string> environment_allow;
  // Variables whose value is the host the process ran on, first present first.
  std::vector<std::string> environment_host;
};

// Parses the TOML text; a one-line error names what is wrong.
Expected<Rules> ParseRules(const std::string& text);
Expected<Rules> LoadRules(const std::string& path);

}  // namespace coroner
