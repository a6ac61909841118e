#include "cli/analyze_command.h"

#include <cstdio>

#include "core/core.h"
#include "processor/processor.h"
#include "report/core_report.h"
#include "report/markdown_report.h"
#include "source/byte_source.h"
#include "symbolize/symbol_provider.h"
#include "text/text.h"

namespace coroner {

int RunAnalyze(const AnalyzeOptions& options) {
  int status = 0;
  CoreOptions core_options;
  core_options.sysroot = options.sysroot;
  core_options.check_module_files = options.check_module_files;
  SymbolOptions symbol_options;
  symbol_options.sysroot = options.sysroot;
  symbol_options.debug_dirs = options.debug_dirs;
  symbol_options.extra_files = options.exe_files;
  // One provider for the whole batch: module files are opened once per build-id.
  FileSymbolProvider provider(symbol_options);
  ProcessOptions process;
  process.depth = options.registers_only ? AnalysisDepth::kRegisters : AnalysisDepth::kFull;
  process.unwind.max_frames = options.max_frames;
  bool json = options.format == "json";
  SourceFlags flags = options.source_flags;
  flags.components_file = options.components_file;
  auto sources = MakeSourceOptions(flags);
  if (!sources.ok()) {
    std::fprintf(stderr, "coroner: %s\n", sources.error().message.c_str());
    return 2;
  }
  const ComponentMap& components = sources->components;
  for (const auto& path : options.cores) {
    auto source = OpenCoreSource(path, options.max_bytes);
    Expected<std::unique_ptr<Core>> core =
        source.ok() ? Core::Open(std::move(*source), core_options) : Expected<std::unique_ptr<Core>>(source.error());
    std::string out;
    if (!core.ok()) {
      std::fprintf(stderr, "coroner: %s: %s\n", path.c_str(), core.error().message.c_str());
      status = 1;
      if (!json) continue;
      out = JsonText(ErrorToJson(path, core.error()));
    } else {
      CrashAnalysis analysis = ProcessCore(**core, provider, process);
      analysis.path = path;
      std::optional<SourceReport> source_report;
      if (options.format == "md" && analysis.crashing_backtrace()) {
        source_report = BuildSourceReport(**core, *analysis.crashing_backtrace(), *sources);
      }
      if (json) out = JsonText(CoreToJson(analysis));
      else if (options.format == "md") out = CoreToMarkdown(analysis, components, source_report ? &*source_report : nullptr);
      else out = CoreToText(analysis);
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  std::fflush(stdout);
  return status;
}

}  // namespace coroner
