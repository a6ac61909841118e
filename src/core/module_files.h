// Looking up a module's file on disk: does it exist, and what is its
// build-id. Results are cached for the life of the process, keyed by path and
// the file's identity (device, inode, size, mtime), so a batch of cores from
// one program reads libc's headers once. Safe to call from several threads.
#pragma once

#include <elf.h>

#include "base/expected.h"
#include "core/package_note.h"
#include "core/registers.h"

#include <map>
#include <string>
#include <vector>

namespace coroner {

struct ModuleFileInfo {
  enum class State { kFound, kMissing, kUnreadable, kNotElf } state = State::kMissing;
  std::string build_id;  // lowercase hex; empty when the file has none
  uint16_t machine = 0;  // e_machine
  // Its PT_LOAD and PT_DYNAMIC headers: where the loader maps it, for a core
  // that does not say (no NT_FILE note).
  std::vector<Elf64_Phdr> segments;
  std::string interpreter;  // PT_INTERP: the dynamic linker it asks for
  std::optional<PackageNote> package;  // its package metadata note
};

ModuleFileInfo LookUpModuleFile(const std::string& path);

// Where module files are on this machine (`--sysroot`): one tree for every
// core, and one per machine (`--sysroot aarch64=DIR`), so that a mixed
// fleet's cores each look in their machine's tree. Empty: the paths as the
// core gives them.
struct Sysroot {
  Sysroot(std::string dir = {}) : any(std::move(dir)) {}  // NOLINT: a plain DIR is a sysroot
  std::string any;                      // a plain DIR: every machine's
  std::map<Arch, std::string> by_arch;  // ARCH=DIR
  const std::string& For(Arch arch) const {
    auto it = by_arch.find(arch);
    return it != by_arch.end() ? it->second : any;
  }
  bool operator==(const Sysroot&) const = default;
};
// `--sysroot` values: DIR, or ARCH=DIR with ARCH `x86_64` or `aarch64`.
// An error for a machine given twice, or two plain DIRs.
Expected<Sysroot> ParseSysroot(const std::vector<std::string>& values);

// Where the core's `path` for a module is on this machine, with `sysroot`
// as the root of the crashed machine's tree: the path's components resolved
// inside the sysroot as a chroot would, ".." stopping at its top and a
// symbolic link's target (an absolute one too) taken inside it, so that a
// hostile NT_FILE path (`/../../etc/x`) or a link in the tree never reaches a
// file outside it. No sysroot: `path` as it is. Empty when the path does not
// resolve (more than 40 links, a component that is not a directory). A
// path that begins with the sysroot itself and is not in the tree as it
// stands is the tree's own file named by its host path (qemu-user's
// program): its rest is resolved inside the tree.
std::string InSysroot(const std::string& sysroot, const std::string& path);

}  // namespace coroner
