// The source side of one crash (the workflow's phases 3 and 4): for each
// frame of the crashing thread with debug info, its component, repository,
// file and line, and the source lines around it when the file is found
// under a source root; for each module in the crash chain, what built it
// (build-id, DWARF producer and compilation directory), its package and
// version from an inventory, and the git commit of its checkout; what a
// user must still check out; and whether a given fix is in the checkout.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "provenance/components.h"
#include "provenance/git.h"
#include "provenance/inventory.h"
#include "provenance/source_map.h"
#include "unwind/backtrace.h"

namespace coroner {

// Version of the `coroner sources --json` document (docs/sources-json.md).
constexpr int kSourcesJsonVersion = 1;

// The command-line flags that make SourceOptions (`coroner sources` and
// `coroner analyze --format md` share them).
struct SourceFlags {
  std::vector<std::string> source_roots, source_maps;
  std::string source_map_file, inventory_dir, components_file;
  std::string check_fix, repo;
};

struct SourceOptions;
// A usage error (bad rule, unreadable file or directory) as an Error.
Expected<SourceOptions> MakeSourceOptions(const SourceFlags& flags);

struct SourceOptions {
  SourceMap map;
  std::optional<PackageInventory> inventory;
  ComponentMap components;
  int context = 5;  // lines shown before and after the frame's line
  std::string fix_commit, fix_repo;  // --check-fix COMMIT --repo DIR
};

struct SourceLine {
  int number = 0;
  std::string text;
  bool current = false;  // the frame's line
};

struct SourceFrame {
  size_t index = 0;
  std::string function, module, component, repository, file;
  int line = 0;
  bool inlined = false;
  ResolvedSource resolved;
  std::vector<SourceLine> lines;
};

struct ModuleVersion {
  std::string path, build_id, component, repository;
  std::string producer, comp_dir;  // from the DWARF of its first frame; empty without
  std::optional<Package> package;
  std::string checkout, commit;  // the git work tree its sources were found in, and its HEAD
};

struct SourceReport {
  std::vector<SourceFrame> frames;
  std::vector<ModuleVersion> modules;
  std::vector<std::string> to_check_out;  // "ROCm/rocm-systems (projects/clr) at hip-runtime-amd 6.2.4 ..."
  std::optional<FixCheck> fix;
  std::string fix_commit, fix_repo;
  // Every module of the core (not only the crash chain) by path, with its
  // package when the inventory knows it: the report's environment table.
  std::map<std::string, Package> packages;
};

SourceReport BuildSourceReport(const Core& core, const Backtrace& crashing,
                               const SourceOptions& options);

// At most `context` lines either side of `line` of `path`; empty when the
// file cannot be read. Lines are capped at 512 bytes, the file at 16 MiB.
std::vector<SourceLine> ReadSourceLines(const std::string& path, int line, int context);

std::string SourceReportToText(const SourceReport& report);
nlohmann::ordered_json SourceReportToJson(const SourceReport& report);
// "Fixed: ... is in the checked-out version (HEAD ...)", or not, or why unknown.
std::string FixStatusText(const SourceReport& report);

}  // namespace coroner
