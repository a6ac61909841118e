#include "cli/analyze_command.h"

#include <cstdio>

#include "core/core.h"
#include "report/core_report.h"
#include "source/byte_source.h"

namespace coroner {

int RunAnalyze(const AnalyzeOptions& options) {
  int status = 0;
  CoreOptions core_options;
  core_options.sysroot = options.sysroot;
  core_options.check_module_files = options.check_module_files;
  bool json = options.format == "json";
  for (const auto& path : options.cores) {
    auto source = OpenCoreSource(path, options.max_bytes);
    Expected<std::unique_ptr<Core>> core =
        source.ok() ? Core::Open(std::move(*source), core_options) : Expected<std::unique_ptr<Core>>(source.error());
    std::string out;
    if (!core.ok()) {
      std::fprintf(stderr, "coroner: %s: %s\n", path.c_str(), core.error().message.c_str());
      status = 1;
      if (!json) continue;
      out = ErrorToJson(path, core.error()).dump();
    } else if (json) {
      out = CoreToJson(**core, path).dump();
    } else {
      out = CoreToText(**core, path);
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  std::fflush(stdout);
  return status;
}

}  // namespace coroner
