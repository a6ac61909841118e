// coroner: core-dump analysis and epidemiology. main() only parses flags and
// hands over to a subcommand.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include "cli/analyze_command.h"
#include "cli/epi_command.h"
#include "cli/scan_command.h"
#include "cli/sources_command.h"
#include "demo/demo_fleet.h"

// jemalloc's options, read when it starts (where coroner is built with it):
// its memory in transparent huge pages. An analysis fills some 10 MB of fresh
// memory (frames, stack pages, symbol tables), and on a virtual machine each
// 4 KiB page fault cost about 7 us: huge pages took a 100 GiB core's full
// analysis from 0.066 to 0.045 s and a zoo core's from 35 to 25 ms, for
// 9 MiB more resident memory. Ignored by other allocators.
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:always";
}

namespace {

// The flags that say where a crash's sources and versions are, for
// `sources` and for `analyze --format md`.
void AddSourceFlags(CLI::App* cmd, coroner::SourceFlags& f) {
  cmd->add_option("--source-root", f.source_roots, "a checkout to look source files up in (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--source-map", f.source_maps, "OLD=NEW: a DWARF path prefix and where it is here (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--source-map-file", f.source_map_file, "a file of OLD=NEW lines");
  cmd->add_option("--inventory-dir", f.inventory_dir,
                  "captures from the crashed container: dpkg -l, rpm -qa, pip list --format json, a dpkg database");
  cmd->add_option("--check-fix", f.check_fix, "a commit: is it in the checkout given by --repo?");
  cmd->add_option("--repo", f.repo, "the git checkout for --check-fix");
}

// Where a core's module files are, for every command that reads them: the
// same flags with the same words. One value per flag (repeat the flag for
// more), so that the cores after it stay cores.
void AddModuleFileFlags(CLI::App* cmd, std::vector<std::string>& sysroot, std::vector<std::string>& exe_files,
                        std::vector<std::string>* debug_dirs) {
  cmd->add_option("--sysroot", sysroot, "look module files up under DIR, or a machine's under ARCH=DIR (x86_64, aarch64)")
      ->allow_extra_args(false);
  if (debug_dirs)
    cmd->add_option("--debug-dir", *debug_dirs,
                    "a directory with the build-id layout (.build-id/xx/rest.debug), as /usr/lib/debug")
        ->allow_extra_args(false);
  cmd->add_option("--exe", exe_files,
                  "a program's or library's file: for the module with its build-id, or its name where the core does "
                  "not say where its files are (qemu-user's)")
      ->allow_extra_args(false);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coroner: read Linux core dumps (x86_64, aarch64), one deeply or a fleet fast"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "coroner 0.1.0");

  coroner::AnalyzeOptions analyze;
  bool json = false;
  uint64_t max_bytes = 0;
  auto* cmd = app.add_subcommand("analyze", "report on each core: process, signal, threads, registers, modules");
  cmd->add_option("CORE", analyze.cores, "core files (plain, .zst, .lz4 or .xz)")->required();
  cmd->add_option("--max-bytes", max_bytes, "read only the first N bytes of each core, as if only they had been downloaded");
  cmd->add_flag("--json", json, "one JSON object per core, one per line");
  const std::map<std::string, coroner::ReportFormat> formats = {
      {"text", coroner::ReportFormat::kText}, {"md", coroner::ReportFormat::kMarkdown}, {"json", coroner::ReportFormat::kJson}};
  cmd->add_option("--format", analyze.format, "text, md (the Markdown report) or json")
      ->transform(CLI::CheckedTransformer(formats));
  cmd->add_option("--components", analyze.components_file, "library-to-component rules, `pattern<TAB>component` a line");
  std::vector<std::string> analyze_sysroot, scan_sysroot, sources_sysroot;
  AddModuleFileFlags(cmd, analyze_sysroot, analyze.exe_files, &analyze.debug_dirs);
  cmd->add_flag("--registers-only", analyze.registers_only, "no backtraces: registers, signal and modules only");
  cmd->add_option("--max-frames", analyze.max_frames, "stop each backtrace after N frames (default 1024)");
  cmd->add_flag("!--no-module-files", analyze.check_module_files, "do not look at module files on disk");
  cmd->add_flag("!--no-python", analyze.python_frames, "native frames only: do not read a CPython process's Python stacks");
  cmd->add_option("--rules", analyze.rules_file, "a rules file: its [environment] allow list adds identity variables");
  AddSourceFlags(cmd, analyze.source_flags);

  coroner::ScanOptions scan;
  std::string scan_rules;
  uint64_t scan_max_bytes = 0;
  auto* scan_cmd = app.add_subcommand("scan", "analyze a fleet of cores into a SQLite dataset");
  scan_cmd->add_option("INPUT", scan.inputs, "core files, directories, globs, @listfiles, http(s):// URLs");
  scan_cmd->add_option("--log", scan.logs, "log files with coroner-crash lines (from libcoroner_crashlog)")
      ->allow_extra_args(false);
  scan_cmd->add_option("--db", scan.db, "the dataset (created when absent)")->required();
  scan_cmd->add_option("--jobs", scan.jobs, "worker processes (default: the machine's CPUs)")->check(CLI::Range(1, 1024));
  scan_cmd->add_option("--inventory", scan.inventory, "a CSV with a host column (and valid_from/valid_to) joined on host");
  scan_cmd->add_option("--max-bytes", scan_max_bytes, "read at most the first N bytes of each core");
  scan_cmd->add_option("--timeout", scan.timeout_seconds, "seconds one core may take (default 60)")->check(CLI::PositiveNumber);
  AddModuleFileFlags(scan_cmd, scan_sysroot, scan.exe_files, nullptr);
  scan_cmd->add_option("--rules", scan_rules, "a rules file: its [environment] allow list adds identity variables");
  scan_cmd->add_flag("--force", scan.force, "analyze unchanged inputs again");
  std::string shard;
  scan_cmd->add_option("--shard", shard, "I/N: scan only shard I (0-based) of N, balanced by size");

  std::string merge_db;
  std::vector<std::string> merge_shards;
  auto* merge_cmd = app.add_subcommand("merge", "merge shard datasets into one (idempotent)");
  merge_cmd->add_option("--db", merge_db, "the merged dataset (created when absent)")->required();
  merge_cmd->add_option("SHARD", merge_shards, "shard datasets")->required();

  std::string query_db, query_sql;
  bool query_json = false;
  auto* query_cmd = app.add_subcommand("query", "run a read-only SQL query on a dataset");
  query_cmd->add_option("--db", query_db, "the dataset")->required();
  query_cmd->add_option("SQL", query_sql, "one SQL statement")->required();
  query_cmd->add_flag("--json", query_json, "rows as a JSON array of objects");

  coroner::EpiCommandOptions epi;
  auto* epi_cmd = app.add_subcommand("epi", "the crash populations in a dataset and what each correlates with");
  epi_cmd->add_option("--db", epi.db, "the dataset")->required();
  epi_cmd->add_flag("--json", epi.json, "the report as JSON on stdout (docs/epi-json.md)");
  epi_cmd->add_option("--md", epi.md, "write the Markdown report to FILE");
  epi_cmd->add_option("--html", epi.html, "write the HTML report (one self-contained file) to FILE");
  epi_cmd->add_option("--where", epi.where, "an SQL condition over the cores table: analyze only these cores");
  epi_cmd->add_option("--incident-window", epi.incident_window_minutes,
                      "minutes: a job's cores within this of its first crash are one incident (default 15)")
      ->check(CLI::Range(0.0, 100000.0));
  epi_cmd->add_option("--rules", epi.rules, "a TOML file of labels and exclusions ([[label]], [[exclude]])");
  epi_cmd->add_option("--kernel-log", epi.kernel_logs, "kernel logs (dmesg or journal text): FILE or HOST=FILE")
      ->allow_extra_args(true);
  epi_cmd->add_option("--inventory", epi.inventory,
                      "the hosts' placements (the scan's CSV): values it gives are tested per host-day at risk");

  std::string demo_out = "coroner-demo", demo_scenario = "demo";
  auto* demo_cmd = app.add_subcommand("demo", "a seeded fleet of real zoo cores with planted causes, scanned and reported");
  demo_cmd->add_option("--out", demo_out, "where the fleet, dataset and reports go (default ./coroner-demo)");
  demo_cmd->add_option("--scenario", demo_scenario, std::string("one of ") + coroner::kScenarioNames);

  coroner::SourcesCommandOptions sources;
  auto* sources_cmd = app.add_subcommand("sources", "the crashing thread at the source level: files, lines, versions, fix status");
  sources_cmd->add_option("CORE", sources.core, "the core")->required();
  sources_cmd->add_option("--components", sources.flags.components_file,
                          "library-to-component rules, `pattern<TAB>component[<TAB>repository[<TAB>path]]`");
  AddSourceFlags(sources_cmd, sources.flags);
  sources_cmd->add_option("--context", sources.context, "source lines shown either side (default 5)")->check(CLI::Range(0, 100));
  sources_cmd->add_flag("--json", sources.json, "the report as one JSON object");
  AddModuleFileFlags(sources_cmd, sources_sysroot, sources.exe_files, &sources.debug_dirs);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  for (auto [values, into] : {std::pair{&analyze_sysroot, &analyze.sysroot}, std::pair{&scan_sysroot, &scan.sysroot},
                              std::pair{&sources_sysroot, &sources.sysroot}}) {
    auto parsed = coroner::ParseSysroot(*values);
    if (!parsed.ok()) {
      std::fprintf(stderr, "coroner: %s\n", parsed.error().message.c_str());
      return 2;
    }
    *into = std::move(*parsed);
  }
  if (cmd->parsed()) {
    if (json) analyze.format = coroner::ReportFormat::kJson;
    if (cmd->count("--max-bytes")) analyze.max_bytes = max_bytes;
    return coroner::RunAnalyze(analyze);
  }
  if (scan_cmd->parsed()) {
    if (scan_cmd->count("--max-bytes")) scan.max_bytes = scan_max_bytes;
    if (scan.inputs.empty() && scan.logs.empty()) {
      std::fprintf(stderr, "coroner: scan needs INPUT... or --log FILE\n");
      return 2;
    }
    if (!shard.empty()) {
      int i = -1, n = 0;
      char slash = 0, extra = 0;
      if (std::sscanf(shard.c_str(), "%d%c%d%c", &i, &slash, &n, &extra) != 3 || slash != '/' || n < 1 || i < 0 ||
          i >= n) {
        std::fprintf(stderr, "coroner: --shard wants I/N with 0 <= I < N, not %s\n", shard.c_str());
        return 2;
      }
      scan.shard = std::make_pair(i, n);
    }
    return coroner::RunScanCommand(scan, scan_rules);
  }
  if (sources_cmd->parsed()) return coroner::RunSourcesCommand(sources);
  if (merge_cmd->parsed()) return coroner::RunMergeCommand(merge_db, merge_shards);
  if (query_cmd->parsed()) return coroner::RunQueryCommand(query_db, query_sql, query_json);
  if (epi_cmd->parsed()) return coroner::RunEpiCommand(epi);
  if (demo_cmd->parsed()) return coroner::RunDemoCommand(demo_out, demo_scenario);
  return 2;
}
