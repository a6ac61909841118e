#include "cli/sources_command.h"

#include <cstdio>

#include "core/core.h"
#include "provenance/source_report.h"
#include "source/byte_source.h"
#include "symbolize/symbol_provider.h"
#include "unwind/backtrace.h"

namespace coroner {

int RunSourcesCommand(const SourcesCommandOptions& o) {
  SourceOptions so;
  so.context = o.context;
  for (const auto& r : o.source_roots) so.map.AddRoot(r);
  auto usage = [](const std::string& message) {
    std::fprintf(stderr, "coroner: %s\n", message.c_str());
    return 2;
  };
  for (const auto& rule : o.source_maps) {
    if (auto r = so.map.AddRule(rule); !r.ok()) return usage(r.error().message);
  }
  if (!o.source_map_file.empty()) {
    if (auto r = so.map.AddFile(o.source_map_file); !r.ok()) return usage(r.error().message);
  }
  if (!o.components_file.empty()) {
    if (auto r = so.components.AddFile(o.components_file); !r.ok()) return usage(r.error().message);
  }
  if (!o.inventory_dir.empty()) {
    auto inv = PackageInventory::Load(o.inventory_dir);
    if (!inv.ok()) return usage(inv.error().message);
    so.inventory = std::move(*inv);
  }
  if (o.check_fix.empty() != o.repo.empty()) return usage("--check-fix COMMIT and --repo DIR go together");
  so.fix_commit = o.check_fix;
  so.fix_repo = o.repo;

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
  ModuleMap modules(**core, provider);
  StackMemory stack((*core)->memory());
  Backtrace bt = BuildBacktrace((*core)->threads()[(*core)->crashing_thread()], modules, stack);
  SourceReport report = BuildSourceReport(**core, bt, so);
  std::string out = o.json ? SourceReportToJson(report).dump() + "\n" : SourceReportToText(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace coroner
