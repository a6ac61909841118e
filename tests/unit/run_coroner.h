// Runs the coroner binary ($CORONER_BIN) as a user would, for CLI tests.
#pragma once

#include <string>
#include <vector>

namespace coroner::testing {

struct CommandResult {
  int status;  // exit status; -1 when it did not exit normally
  std::string out, err;
};

// `args` is appended to the binary's path as shell words.
CommandResult Coroner(const std::string& args);

// A shell command's exit status and standard output (its stderr is the
// caller's to redirect).
CommandResult Run(const std::string& command);

// A file's bytes; empty when it cannot be read.
std::string ReadAll(const std::string& path);

// For a forked child: enters a private mount namespace in which each of
// `dirs` is read-only, a view nothing outside the child shares. False where
// no mount namespace can be made here.
bool MakeReadOnlyInPrivateNamespace(const std::vector<std::string>& dirs);

}  // namespace coroner::testing
