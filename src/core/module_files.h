// Looking up a module's file on disk: does it exist, and what is its
// build-id. Results are cached for the life of the process, keyed by path and
// the file's identity (device, inode, size, mtime), so a batch of cores from
// one program reads libc's headers once. Safe to call from several threads.
#pragma once

#include <string>

namespace coroner {

struct ModuleFileInfo {
  enum class State { kFound, kMissing, kUnreadable, kNotElf } state = State::kMissing;
  std::string build_id;  // lowercase hex; empty when the file has none
};

ModuleFileInfo LookUpModuleFile(const std::string& path);

}  // namespace coroner
