// The package an ELF image says it belongs to: the package metadata note
// (`.note.package`, FDO's "package metadata for executable files") that
// Fedora, Debian's and Yocto's builds can link in, a JSON object naming the
// package, its version and the distribution. systemd-coredump reads it into
// COREDUMP_PACKAGE_*; coroner reads it from the core's header pages, else
// from the module's file when its build-id is the core's.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace coroner {

struct PackageNote {
  std::string type;            // "deb", "rpm", ...
  std::string name, version, architecture;
  std::string os, os_version;  // "debian", "12"
  std::string debug_info_url;  // a debuginfod server for it
  bool operator==(const PackageNote&) const = default;
};

// The note's JSON text, as the image held it (untrusted): nullopt unless it
// is an object whose `name` is a string. Other members are kept when they
// are strings, each as valid UTF-8 of at most 256 bytes; unknown ones are
// ignored.
std::optional<PackageNote> ParsePackageNote(std::string_view json);

}  // namespace coroner
