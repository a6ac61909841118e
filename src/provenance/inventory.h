// PackageInventory: which package and version each module came from, from what a
// user captured in the crashed container (`--inventory-dir DIR`):
//   - `dpkg -l` output (any file whose lines start with "ii  "),
//   - `pip list --format json` output (a JSON array of {name, version}),
//   - `rpm -qa` output (name-version-release.arch a line),
//   - a copy of a dpkg database (`status`, and `info/*.list` for which
//     package owns which file).
// A module is matched by its exact path in a `.list` file, else by its
// shared-object name (libc.so.6 -> libc6, libgcc_s.so.1 -> libgcc-s1,
// ld-linux-x86-64.so.2 -> libc6; for rpm, libc.so.6 -> glibc, libfoo.so.1 ->
// libfoo), else, under site-packages, by the Python package directory it
// sits in. Files are capped at 64 MiB each.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"

namespace coroner {

struct Package {
  std::string name, version;
  std::string manager;  // "dpkg", "rpm" or "pip"
};

class PackageInventory {
 public:
  // Reads every capture in `dir`; an error only when `dir` cannot be read.
  // Files that are none of the above are skipped and named in `skipped()`.
  static Expected<PackageInventory> Load(const std::string& dir);
  // Adds one capture's text (pip JSON, `dpkg -l`, `rpm -qa`); `name` says
  // where it came from. Text that is none of them is recorded as skipped.
  void AddCapture(const std::string& name, const std::string& text);
  std::optional<Package> For(const std::string& module_path) const;
  bool empty() const { return dpkg_.empty() && pip_.empty() && rpm_.empty(); }
  const std::vector<std::string>& skipped() const { return skipped_; }
  const std::vector<std::string>& sources() const { return sources_; }

 private:
  std::map<std::string, std::string> dpkg_;        // package (no :arch) -> version
  std::map<std::string, std::string> pip_;         // normalized name -> version
  std::map<std::string, std::string> pip_names_;   // normalized name -> name as listed
  std::map<std::string, std::string> owner_;       // file path -> package, from info/*.list
  std::map<std::string, std::string> rpm_;         // package -> version-release
  std::vector<std::string> skipped_, sources_;
};

}  // namespace coroner
