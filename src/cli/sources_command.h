// `coroner sources CORE`: the crashing thread's frames at the source level,
// the versions of the modules in the crash chain, and the fix status.
#pragma once

#include <string>
#include <vector>

#include "core/module_files.h"

#include "provenance/source_report.h"

namespace coroner {

struct SourcesCommandOptions {
  std::string core;
  SourceFlags flags;
  int context = 5;
  bool json = false;
  Sysroot sysroot;
  std::vector<std::string> debug_dirs, exe_files;
};

int RunSourcesCommand(const SourcesCommandOptions& options);

}  // namespace coroner
