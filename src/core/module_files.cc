#include "core/module_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <tuple>

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
  return {ModuleFileInfo::State::kFound,
          ReadBuildId(*image, read, [](const Elf64_Phdr& ph) { return ph.p_offset; })};
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

}  // namespace coroner
