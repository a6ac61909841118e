// What a git checkout says about itself, by running the user's `git` (no
// shell: arguments are passed as they are, so a commit or path from a core
// cannot inject anything). Bounded by a timeout and an output cap.
#pragma once

#include <optional>
#include <string>

namespace coroner {

// The checkout's HEAD commit (full hex); nullopt when `dir` is not in a git
// work tree or git is missing.
std::optional<std::string> GitHead(const std::string& dir);

// The top of the work tree that holds `path`; nullopt outside one.
std::optional<std::string> GitTopLevel(const std::string& path);

enum class FixStatus { kIncluded, kNotIncluded, kUnknown };

struct FixCheck {
  FixStatus status = FixStatus::kUnknown;
  std::string head;    // the checked-out commit
  std::string detail;  // why it is unknown (git's own message)
};

// Whether `commit` is an ancestor of (or is) the checkout's HEAD:
// `git merge-base --is-ancestor COMMIT HEAD`.
FixCheck CheckFix(const std::string& repo, const std::string& commit);

}  // namespace coroner
