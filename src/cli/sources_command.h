// `coroner sources CORE`: the crashing thread's frames at the source level,
// the versions of the modules in the crash chain, and the fix status.
#pragma once

#include <string>
#include <vector>

#include "cli/analyze_command.h"

namespace coroner {

struct SourcesCommandOptions {
  std::string core;
  std::vector<std::string> source_roots, source_maps;
  std::string source_map_file, inventory_dir, components_file;
  std::string check_fix, repo;
  int context = 5;
  bool json = false;
  std::string sysroot;
  std::vector<std::string> debug_dirs, exe_files;
};

int RunSourcesCommand(const SourcesCommandOptions& options);

}  // namespace coroner
