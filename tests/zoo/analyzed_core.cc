#include "zoo/analyzed_core.h"

#include <cctype>
#include <map>
#include <stdexcept>

namespace coroner::testing {

FileSymbolProvider& ZooSymbols() {
  static FileSymbolProvider provider{SymbolOptions{{}, {ZooDir() + "/debug"}, false, {}}};
  return provider;
}

std::unique_ptr<AnalyzedCore> AnalyzeCore(const std::string& path) {
  auto a = std::make_unique<AnalyzedCore>();
  auto source = OpenCoreSource(path, std::nullopt);
  if (!source.ok()) throw std::runtime_error(path + ": " + source.error().message);
  ProcessOptions options;
  auto core = Core::Open(std::move(*source), CoreOptionsFor(options));
  if (!core.ok()) throw std::runtime_error(path + ": " + core.error().message);
  a->core = std::move(*core);
  a->analysis = ProcessCore(*a->core, ZooSymbols(), options);
  a->analysis.path = path;
  return a;
}

std::unique_ptr<AnalyzedCore> AnalyzeCrossSource(std::unique_ptr<ByteSource> source, const std::string& path,
                                                 const std::string& sysroot, const std::vector<std::string>& exe_files) {
  auto a = std::make_unique<AnalyzedCore>();
  ProcessOptions options;
  CoreOptions core_options = CoreOptionsFor(options);
  core_options.sysroot = sysroot;
  core_options.executable_files = exe_files;
  auto core = Core::Open(std::move(source), core_options);
  if (!core.ok()) throw std::runtime_error(path + ": " + core.error().message);
  a->core = std::move(*core);
  // One provider per set of files: --exe is given when it is made. Kept,
  // as the analysis' modules refer to it.
  static auto& providers = *new std::map<std::string, std::unique_ptr<FileSymbolProvider>>;
  std::string key = sysroot;
  for (const auto& f : exe_files) key += "\n" + f;
  auto& provider = providers[key];
  if (!provider) provider = std::make_unique<FileSymbolProvider>(SymbolOptions{sysroot, {}, false, exe_files});
  a->analysis = ProcessCore(*a->core, *provider, options);
  a->analysis.path = path;
  return a;
}

std::unique_ptr<AnalyzedCore> AnalyzeCrossCore(const std::string& path, const std::string& sysroot,
                                               const std::vector<std::string>& exe_files) {
  auto source = OpenCoreSource(path, std::nullopt);
  if (!source.ok()) throw std::runtime_error(path + ": " + source.error().message);
  return AnalyzeCrossSource(std::move(*source), path, sysroot, exe_files);
}

std::string ZooTestName(const ::testing::TestParamInfo<ZooCore>& info) {
  std::string n = info.param.variant;
  for (auto& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

}  // namespace coroner::testing
