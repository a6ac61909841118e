#include "symbolize/symbol_provider.h"

#include <elfutils/debuginfod.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "core/module_files.h"
#include "source/shared_library.h"

namespace coroner {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string BuildIdPath(const std::string& dir, const std::string& build_id, const char* suffix) {
  if (build_id.size() < 3) return {};
  return dir + "/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + suffix;
}

// libdebuginfod's client, loaded only when DEBUGINFOD_URLS asks for it
// (source/shared_library.h).
struct DebuginfodApi {
  DebuginfodApi() : lib("libdebuginfod.so.1") {
    lib.Get("debuginfod_begin", begin);
    lib.Get("debuginfod_end", end);
    lib.Get("debuginfod_find_executable", find_executable);
    lib.Get("debuginfod_find_debuginfo", find_debuginfo);
  }
  SharedLibrary lib;
  debuginfod_client* (*begin)() = nullptr;
  void (*end)(debuginfod_client*) = nullptr;
  int (*find_executable)(debuginfod_client*, const unsigned char*, int, char**) = nullptr;
  int (*find_debuginfo)(debuginfod_client*, const unsigned char*, int, char**) = nullptr;
};

const DebuginfodApi& DebuginfodClient() {
  static const DebuginfodApi api;
  return api;
}

}  // namespace

FileSymbolProvider::FileSymbolProvider(SymbolOptions options) : options_(std::move(options)) {
  options_.debug_dirs.push_back("/usr/lib/debug");
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  if (options_.use_debuginfod && urls && *urls && DebuginfodClient().lib.ok()) debuginfod_ = DebuginfodClient().begin();
  for (const auto& f : options_.extra_files) {
    if (std::string id = FileBuildId(f); !id.empty()) extra_by_build_id_.emplace(id, f);
  }
}

FileSymbolProvider::~FileSymbolProvider() {
  if (debuginfod_) DebuginfodClient().end(static_cast<debuginfod_client*>(debuginfod_));
}

ModuleLookup FileSymbolProvider::Find(const Module& module) {
  // A module with a build-id is looked up without building a key.
  std::string path_key;
  std::string_view key = module.build_id;
  if (key.empty()) key = path_key = "path:" + module.path;
  std::lock_guard lock(mutex_);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  ModuleLookup found = Locate(module);
  cache_.emplace(std::string(key), found);
  return found;
}

std::string FileSymbolProvider::Debuginfod(const std::string& build_id, bool executable) {
  if (!debuginfod_ || build_id.empty()) return {};
  auto* client = static_cast<debuginfod_client*>(debuginfod_);
  char* path = nullptr;
  auto* id = reinterpret_cast<const unsigned char*>(build_id.c_str());
  int fd = executable ? DebuginfodClient().find_executable(client, id, 0, &path)
                      : DebuginfodClient().find_debuginfo(client, id, 0, &path);
  std::string result;
  if (fd >= 0) {
    ::close(fd);
    if (path) result = path;
  }
  std::free(path);
  return result;
}

ModuleLookup FileSymbolProvider::Locate(const Module& module) {
  ModuleLookup r;
  if (module.is_vdso) return r;  // its code is in the core; nothing on disk
  const std::string& id = module.build_id;
  // The binary: code bytes and .eh_frame. Opened once here and reused.
  std::shared_ptr<ModuleImage> binary;
  auto open_binary = [&](const std::string& p, const std::string& file_id, const char* how) {
    if (id.empty() || file_id == id) {
      binary = ModuleImage::Open(p, {});
      if (binary) r.binary_found_by = how;
    }
  };
  auto try_binary = [&](const std::string& p, const char* how) {
    if (!binary && Exists(p)) open_binary(p, FileBuildId(p), how);
  };
  if (auto it = extra_by_build_id_.find(id); !id.empty() && it != extra_by_build_id_.end()) {
    try_binary(it->second, "exe");
  }
  // The file at the module's path: the core reader looked at it already
  // (Module::file_status); only a core read without that check is looked at
  // here.
  std::string at_path = InSysroot(options_.sysroot.For(module.arch), module.path);
  switch (module.file_status) {
    case ModuleFileStatus::kOk:
    case ModuleFileStatus::kMismatched:
      if (!binary) open_binary(at_path, module.file_build_id, "path");
      break;
    case ModuleFileStatus::kMissing:
    case ModuleFileStatus::kUnreadable: break;
    case ModuleFileStatus::kUnchecked:
      if (!binary && Exists(at_path)) {
        std::string file_id = FileBuildId(at_path);
        open_binary(at_path, file_id, "path");
        r.path_mismatched = !binary && !id.empty() && file_id != id;
      }
      break;
  }
  for (const auto& dir : options_.debug_dirs) try_binary(BuildIdPath(dir, id, ""), "debug-dir");
  if (!binary) try_binary(Debuginfod(id, true), "debuginfod");

  std::string want = !id.empty() ? id : binary ? binary->build_id() : std::string();
  if (binary && binary->has_dwarf()) {
    r.image = binary;
    r.debug_found_by = r.binary_found_by;
    return r;
  }
  // The separate debug file: .symtab, DWARF, .debug_frame.
  std::string debug;
  auto try_debug = [&](const std::string& p, const char* how) {
    if (!debug.empty() || !Exists(p)) return;
    if (!want.empty() && FileBuildId(p) == want) {
      debug = p;
      r.debug_found_by = how;
    }
  };
  for (const auto& dir : options_.debug_dirs) try_debug(BuildIdPath(dir, want, ".debug"), "debug-dir");
  if (debug.empty()) try_debug(Debuginfod(want, false), "debuginfod");
  if (debug.empty()) {
    r.image = binary;
    return r;
  }
  r.image = ModuleImage::Open(binary ? binary->binary_path() : std::string(), debug);
  return r;
}

}  // namespace coroner
