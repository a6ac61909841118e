// SymbolProvider: finds the file(s) for a module of a core, by build-id, and
// keeps them open for the life of the provider (rust-minidump's
// SymbolProvider, Breakpad's SymbolSupplier).
//
// FileSymbolProvider looks, in order: the path the process mapped (under
// --sysroot), the build-id directories of --debug-dir and /usr/lib/debug
// (`.build-id/xx/rest` for the binary, `.build-id/xx/rest.debug` for its
// debug file), and debuginfod (DEBUGINFOD_URLS).
// A file whose build-id differs from the core's is never used. Results,
// including "not found", are cached by build-id, so a batch of cores from
// one program opens libc once.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/core.h"
#include "symbolize/module_image.h"

namespace coroner {

struct ModuleLookup {
  std::shared_ptr<ModuleImage> image;  // nullptr when nothing usable was found
  // How the binary and the debug file were found: "path", "exe",
  // "debug-dir", "debuginfod"; empty when not found (or when the binary holds
  // its own debug info: debug_found_by is then binary_found_by).
  std::string binary_found_by, debug_found_by;
  bool path_mismatched = false;  // the file at the mapped path has another build-id
};

class SymbolProvider {
 public:
  virtual ~SymbolProvider() = default;
  virtual ModuleLookup Find(const Module& module) = 0;
};

struct SymbolOptions {
  Sysroot sysroot;  // a module's tree is its machine's (Module::arch)
  std::vector<std::string> debug_dirs;  // searched before /usr/lib/debug
  bool use_debuginfod = true;           // only when DEBUGINFOD_URLS is set
  // Files to use for any module whose build-id they carry (`--exe PATH`):
  // for cores whose binaries are no longer where the process mapped them.
  std::vector<std::string> extra_files;
};

class FileSymbolProvider final : public SymbolProvider {
 public:
  explicit FileSymbolProvider(SymbolOptions options);
  ~FileSymbolProvider() override;
  ModuleLookup Find(const Module& module) override;

 private:
  ModuleLookup Locate(const Module& module);
  std::string Debuginfod(const std::string& build_id, bool executable);

  SymbolOptions options_;
  std::map<std::string, std::string> extra_by_build_id_;
  std::mutex mutex_;
  std::map<std::string, ModuleLookup, std::less<>> cache_;  // by build-id, else "path:" + path
  void* debuginfod_ = nullptr;  // debuginfod_client*
};

}  // namespace coroner
