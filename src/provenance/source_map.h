// SourceMap: from a path in a module's DWARF (where the file was when it was
// compiled) to the file in a checkout on this machine.
//
// In order: the user's `OLD=NEW` rules (longest OLD first, on whole path
// components); the long prefix packaged builds carry
// (`/longer_pathname_so_that_rpms_can_support_packaging_the_debug_info_for_all_os_profiles/src/`),
// after which the next component names the repository, looked for as a
// source root of that name or inside a source root; then the path's
// trailing components under each source root, longest first. Only files
// that exist under a root or a rule's NEW are returned, never a DWARF path as
// it stands nor one that climbs out with ".."; nothing is read but
// directory entries.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace coroner {

struct ResolvedSource {
  std::string local;       // the file on this machine; empty when not found
  std::string repository;  // the checkout's directory name from the packaging prefix, when known
  std::string in_repository;  // the path inside that repository, when known
  std::string how;         // "source map", "packaging prefix", "source root"
};

class SourceMap {
 public:
  // "OLD=NEW"; a usage error when malformed.
  Status AddRule(const std::string& rule);
  // A file of OLD=NEW lines (`#` comments).
  Status AddFile(const std::string& path);
  void AddRoot(const std::string& dir);
  const std::vector<std::string>& roots() const { return roots_; }

  ResolvedSource Resolve(const std::string& dwarf_path) const;

 private:
  std::vector<std::pair<std::string, std::string>> rules_;
  std::vector<std::string> roots_;
};

// The marker of packaged builds' debug paths.
inline constexpr const char* kPackagingPrefix =
    "/longer_pathname_so_that_rpms_can_support_packaging_the_debug_info_for_all_os_profiles/";

}  // namespace coroner
