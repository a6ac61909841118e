#include "cli/analyze_command.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "core/core.h"
#include "core/crash_line.h"
#include "epi/rules.h"
#include "live/snapshot.h"
#include "live/snapshot_core.h"
#include "processor/processor.h"
#include "report/core_report.h"
#include "report/markdown_report.h"
#include "source/byte_source.h"
#include "symbolize/symbol_provider.h"
#include "text/text.h"

namespace coroner {
namespace {

// A log read for its crash lines is text, bounded like an inventory; a
// crash line is at most 256 KiB (docs/crashlog.md), so a longer line is
// skipped without being held.
constexpr uint64_t kMaxLogBytes = 256ull << 20;
constexpr size_t kMaxLineBytes = 256 << 10;

struct CrashLineText {
  size_t line_number;
  std::string text;
};

// The crash lines of a file that is not an ELF core: empty when it holds
// none (or cannot be read), and the file is then reported as the core
// reader saw it.
std::vector<CrashLineText> CrashLinesOf(const std::string& path) {
  std::vector<CrashLineText> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  std::string line;
  bool too_long = false;
  size_t number = 1;
  uint64_t total = 0;
  std::vector<char> chunk(1 << 20);
  auto end_line = [&]() {
    if (!too_long && HasCrashLine(line)) out.push_back({number, line});
    line.clear();
    too_long = false;
    ++number;
  };
  while (total < kMaxLogBytes && in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())).gcount() > 0) {
    size_t got = static_cast<size_t>(in.gcount());
    total += got;
    for (size_t at = 0; at < got;) {
      const char* nl = static_cast<const char*>(std::memchr(chunk.data() + at, '\n', got - at));
      size_t stop = nl ? static_cast<size_t>(nl - chunk.data()) : got;
      if (!too_long) {
        if (line.size() + (stop - at) > kMaxLineBytes) too_long = true, line.clear();
        else line.append(chunk.data() + at, stop - at);
      }
      at = stop;
      if (nl) {
        end_line();
        ++at;
      }
    }
  }
  if (!line.empty()) end_line();
  return out;
}

}  // namespace

int RunAnalyze(const AnalyzeOptions& options) {
  int status = 0;
  Rules rules;
  if (!options.rules_file.empty()) {
    auto loaded = LoadRules(options.rules_file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "coroner: %s\n", loaded.error().message.c_str());
      return 2;
    }
    rules = std::move(*loaded);
  }
  ProcessOptions process;
  process.depth = options.registers_only ? AnalysisDepth::kRegisters : AnalysisDepth::kFull;
  process.unwind.max_frames = options.max_frames;
  process.python_frames = options.python_frames;
  process.environment.allow = rules.environment_allow;
  process.environment.host = rules.environment_host;
  CoreOptions core_options = CoreOptionsFor(process);
  core_options.sysroot = options.sysroot;
  core_options.check_module_files = options.check_module_files;
  core_options.executable_files = options.exe_files;
  SymbolOptions symbol_options;
  symbol_options.sysroot = options.sysroot;
  symbol_options.debug_dirs = options.debug_dirs;
  symbol_options.extra_files = options.exe_files;
  // One provider for the whole batch: module files are opened once per
  // build-id. It lives until the process exits, which releases its files
  // and mappings all at once: unmapping them one by one was an eighth of the
  // analysis of a core with 300 modules.
  static auto& kept = *new std::vector<std::unique_ptr<FileSymbolProvider>>;
  kept.push_back(std::make_unique<FileSymbolProvider>(symbol_options));
  FileSymbolProvider& provider = *kept.back();
  bool json = options.format == ReportFormat::kJson;
  SourceFlags flags = options.source_flags;
  flags.components_file = options.components_file;
  auto sources = MakeSourceOptions(flags);
  if (!sources.ok()) {
    std::fprintf(stderr, "coroner: %s\n", sources.error().message.c_str());
    return 2;
  }
  const ComponentMap& components = sources->components;
  auto emit = [&](const std::string& out) {
    std::string text = out + '\n';
    std::fwrite(text.data(), 1, text.size(), stdout);
  };
  auto fail = [&](const std::string& path, const Error& error) {
    std::fprintf(stderr, "coroner: %s: %s\n", path.c_str(), error.message.c_str());
    status = 1;
    if (json) emit(ErrorToJson(path, error));
  };
  auto report = [&](Core& core, const std::string& path) {
    ProcessOptions with_path = process;
    with_path.input_path = path;
    CrashAnalysis analysis = ProcessCore(core, provider, with_path);
    analysis.path = path;
    std::optional<SourceReport> source_report;
    if (options.format == ReportFormat::kMarkdown && analysis.crashing_backtrace()) {
      source_report = BuildSourceReport(core, *analysis.crashing_backtrace(), *sources);
    }
    if (json) emit(CoreToJson(analysis));
    else if (options.format == ReportFormat::kMarkdown) emit(CoreToMarkdown(analysis, components, source_report ? &*source_report : nullptr));
    else emit(CoreToText(analysis));
  };
  for (int pid : options.pids) {
    std::string name = "pid " + std::to_string(pid);
    auto snapshot = TakeSnapshot(pid);
    if (!snapshot.ok()) {
      fail(name, snapshot.error());
      continue;
    }
    LiveCapture capture = CaptureFacts(*snapshot);
    auto owned = MakeSnapshotSource(std::move(*snapshot));
    SnapshotSource* source = owned.get();
    auto core = Core::Open(std::move(owned), core_options);
    if (!core.ok()) {
      fail(name, core.error());
      continue;
    }
    (*core)->SetLive(std::move(capture));
    report(**core, name);
    if (!options.write_core.empty()) {
      ReadForDebuggers(**core);
      std::string file = options.pids.size() > 1 ? options.write_core + "." + std::to_string(pid) : options.write_core;
      if (auto written = source->WriteCore(file, options.whole_memory); !written.ok()) fail(name, written.error());
    }
  }
  for (const auto& path : options.cores) {
    auto source = OpenCoreSource(path, options.max_bytes);
    Expected<std::unique_ptr<Core>> core =
        source.ok() ? Core::Open(std::move(*source), core_options) : Expected<std::unique_ptr<Core>>(source.error());
    if (core.ok()) {
      report(**core, path);
      continue;
    }
    // A log with crashlog lines (docs/crashlog.md): each line is analyzed
    // as the small core it describes, named FILE:LINE.
    std::vector<CrashLineText> lines;
    if (core.error().kind == ErrorKind::kNotElf) lines = CrashLinesOf(path);
    if (lines.empty()) {
      fail(path, core.error());
      continue;
    }
    for (const auto& l : lines) {
      std::string name = path + ":" + std::to_string(l.line_number);
      auto parsed = ParseCrashLine(l.text);
      if (!parsed.ok()) {
        fail(name, parsed.error());
        continue;
      }
      report(*AssembleCore(*parsed), name);
    }
  }
  std::fflush(stdout);
  return status;
}

}  // namespace coroner
