#include "cli/sources_command.h"

#include <cstdio>

#include "core/core.h"
#include "provenance/source_report.h"
#include "source/byte_source.h"
#include "symbolize/symbol_provider.h"
#include "text/text.h"
#include "processor/processor.h"

namespace coroner {

int RunSourcesCommand(const SourcesCommandOptions& o) {
  auto made = MakeSourceOptions(o.flags);
  if (!made.ok()) {
    std::fprintf(stderr, "coroner: %s\n", made.error().message.c_str());
    return 2;
  }
  SourceOptions& so = *made;
  so.context = o.context;

  auto source = OpenCoreSource(o.core, std::nullopt);
  CoreOptions core_options;
  core_options.sysroot = o.sysroot;
  auto core = source.ok() ? Core::Open(std::move(*source), core_options) : Expected<std::unique_ptr<Core>>(source.error());
  if (!core.ok()) {
    std::fprintf(stderr, "coroner: %s: %s\n", o.core.c_str(), core.error().message.c_str());
    return 1;
  }
  if ((*core)->threads().empty()) {
    std::fprintf(stderr, "coroner: %s: the core holds no thread\n", o.core.c_str());
    return 1;
  }
  SymbolOptions symbol_options;
  symbol_options.sysroot = o.sysroot;
  symbol_options.debug_dirs = o.debug_dirs;
  symbol_options.extra_files = o.exe_files;
  FileSymbolProvider provider(symbol_options);
  ProcessOptions process;
  process.depth = AnalysisDepth::kLabels;
  CrashAnalysis analysis = ProcessCore(**core, provider, process);
  SourceReport report = BuildSourceReport(**core, *analysis.crashing_backtrace(), so);
  std::string out = o.json ? JsonText(SourceReportToJson(report)) + "\n" : SourceReportToText(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace coroner
