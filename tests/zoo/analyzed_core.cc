#include "zoo/analyzed_core.h"

#include <cctype>
#include <stdexcept>

namespace coroner::testing {

FileSymbolProvider& ZooSymbols() {
  static FileSymbolProvider provider{SymbolOptions{"", {ZooDir() + "/debug"}, false, {}}};
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

std::string ZooTestName(const ::testing::TestParamInfo<ZooCore>& info) {
  std::string n = info.param.variant;
  for (auto& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

}  // namespace coroner::testing
