// `coroner analyze CORE...`: the per-core report for each core.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/module_files.h"
#include "provenance/source_report.h"

namespace coroner {

enum class ReportFormat { kText, kMarkdown, kJson };

struct AnalyzeOptions {
  std::vector<std::string> cores;
  std::vector<int> pids;       // --pid: live processes, snapshotted (live/snapshot.h)
  std::string write_core;      // --write-core: each snapshot as a core file (FILE, or FILE.PID for several)
  bool whole_memory = false;   // --whole-memory: that core holds every readable page
  std::optional<uint64_t> max_bytes;
  ReportFormat format = ReportFormat::kText;
  std::string components_file;  // --components: extra library-to-component rules
  Sysroot sysroot;
  std::vector<std::string> debug_dirs;
  std::vector<std::string> exe_files;  // --exe
  bool check_module_files = true;
  bool registers_only = false;  // no unwinding or symbolization
  size_t max_frames = 1024;
  bool python_frames = true;  // --no-python turns the Python stacks off
  std::string rules_file;     // --rules: its [environment] allow list
  // Where sources and versions are, for the Markdown report (the
  // components file above is theirs too).
  SourceFlags source_flags;
};

// Prints the reports to stdout, a one-line reason per failed core to stderr.
// Returns the exit status: 0 when every core and process was analyzed, 1
// otherwise (a process coroner may not read, or one that is gone).
int RunAnalyze(const AnalyzeOptions& options);

}  // namespace coroner
