// coroner: core-dump analysis and epidemiology. main() only parses flags and
// hands over to a subcommand.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/analyze_command.h"
#include "cli/epi_command.h"
#include "cli/list_command.h"
#include "cli/scan_command.h"
#include "cli/sources_command.h"
#include "demo/demo_fleet.h"

// jemalloc's options, read when it starts (where coroner is built with it):
// its memory in transparent huge pages. An analysis fills some 10 MB of fresh
// memory, and a page fault per 4 KiB of it is a good part of a small
// analysis's time (bench/measurements.md). Ignored by other allocators.
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:always";
}

namespace {

// --journal [PATH] (repeatable; alone: the system journal), --since,
// --until and --boot [ID], as scan and list take them.
void AddJournalFlags(CLI::App* cmd, coroner::JournalFlags& f, const char* what) {
  cmd->add_option("--journal", f.paths, what)
      ->expected(0, 1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--since", f.since, "journal entries from this time on (2026-12-07, \"2026-12-07 10:00\", -2h, today; UTC)");
  cmd->add_option("--until", f.until, "journal entries up to this time");
  cmd->add_option("--boot", f.boot, "journal entries of this boot (an id; alone: this machine's)")->expected(0, 1);
}

// The journal selection the flags name, when --journal is given; false,
// with the reason on stderr, when they name none that is valid.
bool TakeJournalFlags(CLI::App* cmd, const coroner::JournalFlags& f, std::optional<coroner::JournalSelection>& out) {
  if (cmd->count("--journal")) {
    out.emplace();
    return coroner::MakeJournalSelection(f, *out);
  }
  if (cmd->count("--since") || cmd->count("--until") || cmd->count("--boot")) {
    std::fprintf(stderr, "coroner: --since, --until and --boot select journal entries: they need --journal\n");
    return false;
  }
  return true;
}

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

// The --sysroot values as a command's module search takes them; prints the
// error and returns false when one is malformed.
bool TakeSysroot(const std::vector<std::string>& values, coroner::Sysroot& into) {
  auto parsed = coroner::ParseSysroot(values);
  if (!parsed.ok()) {
    std::fprintf(stderr, "coroner: %s\n", parsed.error().message.c_str());
    return false;
  }
  into = std::move(*parsed);
  return true;
}

// Each subcommand: its flags (Add), and what it runs once they are parsed
// (Run), side by side.
struct AnalyzeCommand {
  coroner::AnalyzeOptions options;
  bool json = false;
  uint64_t max_bytes = 0;
  std::vector<std::string> sysroot;
  CLI::App* cmd = nullptr;

  void Add(CLI::App& app) {
    cmd = app.add_subcommand("analyze", "report on each core: process, signal, threads, registers, modules");
    cmd->add_option("CORE", options.cores, "core files (plain, .zst, .lz4 or .xz)");
    cmd->add_option("--pid", options.pids, "a running process: analyze a snapshot of it, which it runs on from (repeatable)");
    cmd->add_option("--write-core", options.write_core, "with --pid: write the snapshot as a core file (FILE.PID for several)");
    cmd->add_flag("--whole-memory", options.whole_memory, "with --write-core: every readable page, not only those read");
    cmd->add_option("--max-bytes", max_bytes, "read only the first N bytes of each core, as if only they had been downloaded");
    cmd->add_flag("--json", json, "one JSON object per core, one per line");
    const std::map<std::string, coroner::ReportFormat> formats = {{"text", coroner::ReportFormat::kText},
                                                                  {"md", coroner::ReportFormat::kMarkdown},
                                                                  {"json", coroner::ReportFormat::kJson}};
    cmd->add_option("--format", options.format, "text, md (the Markdown report) or json")
        ->transform(CLI::CheckedTransformer(formats));
    cmd->add_option("--components", options.components_file, "library-to-component rules, `pattern<TAB>component` a line");
    AddModuleFileFlags(cmd, sysroot, options.exe_files, &options.debug_dirs);
    cmd->add_flag("--registers-only", options.registers_only, "no backtraces: registers, signal and modules only");
    cmd->add_option("--max-frames", options.max_frames, "stop each backtrace after N frames (default 1024)");
    cmd->add_flag("!--no-module-files", options.check_module_files, "do not look at module files on disk");
    cmd->add_flag("!--no-python", options.python_frames, "native frames only: do not read a CPython process's Python stacks");
    cmd->add_option("--rules", options.rules_file, "a rules file: its [environment] allow list adds identity variables");
    AddSourceFlags(cmd, options.source_flags);
  }
  int Run() {
    if (!TakeSysroot(sysroot, options.sysroot)) return 2;
    if (json && cmd->count("--format") && options.format != coroner::ReportFormat::kJson) {
      std::fprintf(stderr, "coroner: --json and --format %s disagree: give one of them\n",
                   options.format == coroner::ReportFormat::kMarkdown ? "md" : "text");
      return 2;
    }
    if (options.cores.empty() && options.pids.empty()) {
      std::fprintf(stderr, "coroner analyze: give a core file or --pid PID\n");
      return 2;
    }
    if (!options.write_core.empty() && options.pids.empty()) {
      std::fprintf(stderr, "coroner analyze: --write-core writes a snapshot: give --pid\n");
      return 2;
    }
    if (json) options.format = coroner::ReportFormat::kJson;
    if (cmd->count("--max-bytes")) options.max_bytes = max_bytes;
    return coroner::RunAnalyze(options);
  }
};

struct ScanCommand {
  coroner::ScanOptions options;
  coroner::JournalFlags journal;
  std::string rules, shard;
  uint64_t max_bytes = 0;
  std::vector<std::string> sysroot;
  CLI::App* cmd = nullptr;

  void Add(CLI::App& app) {
    cmd = app.add_subcommand("scan", "analyze a fleet of cores into a SQLite dataset");
    cmd->add_option("INPUT", options.inputs, "core files, directories, globs, @listfiles, http(s):// URLs");
    cmd->add_option("--log", options.logs, "log files with coroner-crash lines (from libcoroner_crashlog)")
        ->allow_extra_args(false);
    cmd->add_option("--pid", options.pids, "running processes: a snapshot of each becomes a row (--pid $(pgrep -f train.py))");
    cmd->add_option("--db", options.db, "the dataset (created when absent)")->required();
    cmd->add_option("--jobs", options.jobs, "worker processes (default: the machine's CPUs)")->check(CLI::Range(1, 1024));
    cmd->add_option("--inventory", options.inventory, "a CSV with a host column (and valid_from/valid_to) joined on host");
    cmd->add_option("--max-bytes", max_bytes, "read at most the first N bytes of each core");
    cmd->add_option("--timeout", options.timeout_seconds, "seconds one core may take (default 60)")
        ->check(CLI::PositiveNumber);
    AddModuleFileFlags(cmd, sysroot, options.exe_files, nullptr);
    cmd->add_option("--rules", rules, "a rules file: its [environment] allow list adds identity variables");
    cmd->add_flag("--force", options.force, "analyze unchanged inputs again");
    cmd->add_option("--shard", shard, "I/N: scan only shard I (0-based) of N, balanced by size");
    AddJournalFlags(cmd, journal,
                    "systemd-coredump's journal: a directory or .journal file (alone: the system journal); each "
                    "crash's core, by its name among the INPUTs or where the entry says, with the entry's fields");
  }
  int Run() {
    if (!TakeSysroot(sysroot, options.sysroot)) return 2;
    if (cmd->count("--max-bytes")) options.max_bytes = max_bytes;
    if (!TakeJournalFlags(cmd, journal, options.journal)) return 2;
    if (options.inputs.empty() && options.logs.empty() && options.pids.empty() && !options.journal) {
      std::fprintf(stderr, "coroner: scan needs INPUT..., --journal, --log FILE or --pid PID\n");
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
      options.shard = std::make_pair(i, n);
    }
    return coroner::RunScanCommand(options, rules);
  }
};

struct ListCommand {
  coroner::ListCommandOptions options;
  coroner::JournalFlags journal;
  CLI::App* cmd = nullptr;

  void Add(CLI::App& app) {
    cmd = app.add_subcommand("list", "the crashes, newest first, one line each: of a dataset or of the journal");
    cmd->add_option("--db", options.db, "a dataset");
    AddJournalFlags(cmd, journal, "systemd-coredump's journal: a directory or .journal file (alone: the system journal)");
    cmd->add_flag("--json", options.json, "the crashes as a JSON array of objects");
    cmd->add_option("-n,--lines", options.limit, "at most this many, the newest");
  }
  int Run() {
    if ((cmd->count("--journal") > 0) == !options.db.empty()) {
      std::fprintf(stderr, "coroner: list reads a dataset (--db D) or a journal (--journal [PATH]): one of them\n");
      return 2;
    }
    if (!TakeJournalFlags(cmd, journal, options.journal)) return 2;
    return coroner::RunListCommand(options);
  }
};

struct MergeCommand {
  std::string db;
  std::vector<std::string> shards;
  CLI::App* cmd = nullptr;

  void Add(CLI::App& app) {
    cmd = app.add_subcommand("merge", "merge shard datasets into one (idempotent)");
    cmd->add_option("--db", db, "the merged dataset (created when absent)")->required();
    cmd->add_option("SHARD", shards, "shard datasets")->required();
  }
  int Run() { return coroner::RunMergeCommand(db, shards); }
};

struct QueryCommand {
  std::string db, sql;
  bool json = false;
  CLI::App* cmd = nullptr;

  void Add(CLI::App& app) {
    cmd = app.add_subcommand("query", "run a read-only SQL query on a dataset");
    cmd->add_option("--db", db, "the dataset")->required();
    cmd->add_option("SQL", sql, "one SQL statement")->required();
    cmd->add_flag("--json", json, "rows as a JSON array of objects");
  }
  int Run() { return coroner::RunQueryCommand(db, sql, json); }
};

struct EpiCommand {
  coroner::EpiCommandOptions options;
  CLI::App* cmd = nullptr;

  void Add(CLI::App& app) {
    cmd = app.add_subcommand("epi", "the crash populations in a dataset and what each correlates with");
    cmd->add_option("--db", options.db, "the dataset")->required();
    cmd->add_flag("--json", options.json, "the report as JSON on stdout (docs/epi-json.md)");
    cmd->add_option("--md", options.md, "write the Markdown report to FILE");
    cmd->add_option("--html", options.html, "write the HTML report (one self-contained file) to FILE");
    cmd->add_option("--where", options.where, "an SQL condition over the cores table: analyze only these cores");
    cmd->add_option("--incident-window", options.incident_window_minutes,
                    "minutes: a job's cores within this of its first crash are one incident (default 15)")
        ->check(CLI::Range(0.0, 100000.0));
    cmd->add_option("--rules", options.rules, "a TOML file of labels and exclusions ([[label]], [[exclude]])");
    cmd->add_option("--kernel-log", options.kernel_logs, "kernel logs (dmesg or journal text): FILE or HOST=FILE")
        ->allow_extra_args(true);
    cmd->add_option("--inventory", options.inventory,
                    "the hosts' placements (the scan's CSV): values it gives are tested per host-day at risk");
  }
  int Run() { return coroner::RunEpiCommand(options); }
};

struct DemoCommand {
  std::string out = "coroner-demo", scenario = "demo";
  CLI::App* cmd = nullptr;

  void Add(CLI::App& app) {
    cmd = app.add_subcommand("demo", "a seeded fleet of real zoo cores with planted causes, scanned and reported");
    cmd->add_option("--out", out, "where the fleet, dataset and reports go (default ./coroner-demo)");
    cmd->add_option("--scenario", scenario, std::string("one of ") + coroner::kScenarioNames);
  }
  int Run() { return coroner::RunDemoCommand(out, scenario); }
};

struct SourcesCommand {
  coroner::SourcesCommandOptions options;
  std::vector<std::string> sysroot;
  CLI::App* cmd = nullptr;

  void Add(CLI::App& app) {
    cmd = app.add_subcommand("sources", "the crashing thread at the source level: files, lines, versions, fix status");
    cmd->add_option("CORE", options.core, "the core")->required();
    cmd->add_option("--components", options.flags.components_file,
                    "library-to-component rules, `pattern<TAB>component[<TAB>repository[<TAB>path]]`");
    AddSourceFlags(cmd, options.flags);
    cmd->add_option("--context", options.context, "source lines shown either side (default 5)")->check(CLI::Range(0, 100));
    cmd->add_flag("--json", options.json, "the report as one JSON object");
    AddModuleFileFlags(cmd, sysroot, options.exe_files, &options.debug_dirs);
  }
  int Run() {
    if (!TakeSysroot(sysroot, options.sysroot)) return 2;
    return coroner::RunSourcesCommand(options);
  }
};

// The number of one-character edits from `a` to `b` (Levenshtein).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// `coroner help [COMMAND]` prints the help of the program or of a command;
// a first word that is no command is named as such, with the nearest
// command when one is close. Nothing to say: parsing goes on.
std::optional<int> HelpOrUnknownCommand(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return std::nullopt;
  const std::string word = argv[1];
  if (word == "help") {
    if (argc == 2) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      if (sub->get_name() == argv[2]) {
        std::fputs(sub->help().c_str(), stdout);
        return 0;
      }
    std::fprintf(stderr, "coroner: no command %s to help with (coroner help lists them)\n", argv[2]);
    return 2;
  }
  std::string nearest;
  size_t best = SIZE_MAX;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == word) return std::nullopt;
    if (size_t d = EditDistance(word, sub->get_name()); d < best) best = d, nearest = sub->get_name();
  }
  if (best <= 2)
    std::fprintf(stderr, "coroner: unknown command %s; did you mean %s? (coroner help lists the commands)\n",
                 word.c_str(), nearest.c_str());
  else
    std::fprintf(stderr, "coroner: unknown command %s (coroner help lists the commands)\n", word.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"coroner: read Linux core dumps (x86_64, aarch64), one deeply or a fleet fast"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "coroner 0.1.0");
  AnalyzeCommand analyze;
  ScanCommand scan;
  MergeCommand merge;
  ListCommand list;
  QueryCommand query;
  EpiCommand epi;
  DemoCommand demo;
  SourcesCommand sources;
  analyze.Add(app);
  scan.Add(app);
  merge.Add(app);
  list.Add(app);
  query.Add(app);
  epi.Add(app);
  demo.Add(app);
  sources.Add(app);
  if (std::optional<int> done = HelpOrUnknownCommand(app, argc, argv)) return *done;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (analyze.cmd->parsed()) return analyze.Run();
  if (scan.cmd->parsed()) return scan.Run();
  if (sources.cmd->parsed()) return sources.Run();
  if (merge.cmd->parsed()) return merge.Run();
  if (list.cmd->parsed()) return list.Run();
  if (query.cmd->parsed()) return query.Run();
  if (epi.cmd->parsed()) return epi.Run();
  if (demo.cmd->parsed()) return demo.Run();
  return 2;
}
