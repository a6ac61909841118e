#include "core/module_files.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <optional>
#include <vector>

#include "core/elf_image.h"

namespace coroner {
namespace {

using FileKey = std::tuple<std::string, dev_t, ino_t, off_t, long, long>;

std::mutex cache_mutex;
std::map<FileKey, ModuleFileInfo>& Cache() {
  static auto* cache = new std::map<FileKey, ModuleFileInfo>;  // lives until exit
  return *cache;
}

ModuleFileInfo ReadModuleFile(int fd) {
  ReadAtFn read = [fd](uint64_t off, std::span<std::byte> out) -> size_t {
    ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(off));
    return n < 0 ? 0 : static_cast<size_t>(n);
  };
  auto image = ReadElfImage(read);
  if (!image) return {ModuleFileInfo::State::kNotElf, {}};
  ImageNotes notes = ReadImageNotes(*image, read, [](const Elf64_Phdr& ph) { return ph.p_offset; });
  ModuleFileInfo info{ModuleFileInfo::State::kFound, notes.build_id};
  info.package = ParsePackageNote(notes.package_json);
  info.machine = image->ehdr.e_machine;
  for (const auto& ph : image->phdrs) {
    if (ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC || ph.p_type == PT_PHDR) info.segments.push_back(ph);
    if (ph.p_type == PT_INTERP && ph.p_filesz > 1 && ph.p_filesz <= 4096) {
      std::string path(ph.p_filesz, '\0');
      path.resize(read(ph.p_offset, std::as_writable_bytes(std::span(path))));
      info.interpreter = path.substr(0, path.find('\0'));
    }
  }
  return info;
}

}  // namespace

ModuleFileInfo LookUpModuleFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {ModuleFileInfo::State::kMissing, {}};
  if (!S_ISREG(st.st_mode)) return {ModuleFileInfo::State::kNotElf, {}};
  FileKey key{path, st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
  {
    std::lock_guard lock(cache_mutex);
    if (auto it = Cache().find(key); it != Cache().end()) return it->second;
  }
  ModuleFileInfo info{ModuleFileInfo::State::kUnreadable, {}};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    info = ReadModuleFile(fd);
    ::close(fd);
  }
  std::lock_guard lock(cache_mutex);
  Cache().emplace(key, info);
  return info;
}

Expected<Sysroot> ParseSysroot(const std::vector<std::string>& values) {
  Sysroot s;
  bool plain = false;
  for (const std::string& v : values) {
    size_t eq = v.find('=');
    std::string_view machine = eq == std::string::npos ? std::string_view() : std::string_view(v).substr(0, eq);
    std::optional<Arch> arch;
    if (machine == ArchName(Arch::kX86_64)) arch = Arch::kX86_64;
    if (machine == ArchName(Arch::kAarch64)) arch = Arch::kAarch64;
    if (!arch) {
      if (plain) return MakeError(ErrorKind::kUnsupported, "--sysroot: two trees for every machine (" + s.any + ", " + v + ")");
      plain = true;
      s.any = v;
    } else if (!s.by_arch.emplace(*arch, v.substr(eq + 1)).second) {
      return MakeError(ErrorKind::kUnsupported, "--sysroot: " + std::string(machine) + " given twice");
    }
  }
  return s;
}

namespace {

// `path` resolved inside `root` (no trailing '/') as a chroot would.
std::string ResolveInside(const std::string& root, const std::string& path) {
  // What is left to resolve, as components; `resolved` is the part inside
  // the sysroot that is known to be no link ("" is its top).
  std::vector<std::string> todo;
  auto push_components = [&todo](const std::string& p) {
    std::vector<std::string> parts;
    for (size_t from = 0; from <= p.size();) {
      size_t slash = std::min(p.find('/', from), p.size());
      if (slash > from) parts.push_back(p.substr(from, slash - from));
      from = slash + 1;
    }
    todo.insert(todo.end(), parts.rbegin(), parts.rend());  // a stack: first component last
  };
  push_components(path);
  std::string resolved;
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.back());
    todo.pop_back();
    if (part == ".") continue;
    if (part == "..") {
      size_t slash = resolved.rfind('/');  // at the top, ".." stays there
      resolved.erase(slash == std::string::npos ? 0 : slash);
      continue;
    }
    std::string next = resolved + "/" + part;
    struct stat st {};
    if (::lstat((root + next).c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
      resolved = std::move(next);  // a file, a directory or nothing: the open decides
      continue;
    }
    if (++links > 40) return std::string();
    char target[4096];
    ssize_t n = ::readlink((root + next).c_str(), target, sizeof target);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof target) return std::string();
    std::string t(target, static_cast<size_t>(n));
    if (t[0] == '/') resolved.clear();  // absolute: from the sysroot's top
    push_components(t);
  }
  return root + (resolved.empty() ? "/" : resolved);
}

}  // namespace

std::string InSysroot(const std::string& sysroot, const std::string& path) {
  if (sysroot.empty()) return path;
  std::string root = sysroot;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  std::string inside = ResolveInside(root, path);
  struct stat st {};
  if (!inside.empty() && ::stat(inside.c_str(), &st) == 0) return inside;
  // Not in the tree as it stands, but a path that begins with the tree
  // itself: qemu-user, given the tree's program (`qemu-aarch64 -L ROOT
  // ROOT/usr/bin/prog`), records that host path as the program's, and the
  // program finds its own files from there. Its part below the tree is
  // resolved inside it like any other, so it cannot leave the tree either.
  // The tree as given (`--sysroot ./root`) and as the host spells it.
  char real[PATH_MAX];
  for (std::string top : {root, std::string(::realpath(root.c_str(), real) ? real : "")}) {
    if (top.empty() || top == "/") continue;
    if (path.size() > top.size() + 1 && path.compare(0, top.size() + 1, top + "/") == 0)
      return ResolveInside(root, path.substr(top.size()));
  }
  return inside;
}

}  // namespace coroner
