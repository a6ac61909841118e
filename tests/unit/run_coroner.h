// Runs the coroner binary ($CORONER_BIN) as a user would, for CLI tests.
#pragma once

#include <string>

namespace coroner::testing {

struct CommandResult {
  int status;  // exit status; -1 when it did not exit normally
  std::string out, err;
};

// `args` is appended to the binary's path as shell words.
CommandResult Coroner(const std::string& args);

}  // namespace coroner::testing
