#include "cli/scan_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "dataset/dataset.h"
#include "dataset/merge.h"
#include "epi/rules.h"
#include "text/text.h"

namespace coroner {
namespace {

std::string Bytes(double b) {
  if (b >= 1 << 20) return fmt::format("{:.1f} MiB", b / (1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

}  // namespace

int RunScanCommand(ScanOptions options, const std::string& rules_file) {
  if (::isatty(STDERR_FILENO)) options.progress = stderr;
  if (!rules_file.empty()) {
    auto rules = LoadRules(rules_file);
    if (!rules.ok()) {
      std::fprintf(stderr, "coroner: %s\n", rules.error().message.c_str());
      return 2;
    }
    options.environment_allow = rules->environment_allow;
    options.environment_host = rules->environment_host;
  }
  auto summary = RunScan(options);
  if (!summary.ok()) {
    std::fprintf(stderr, "coroner: %s\n", summary.error().message.c_str());
    return summary.error().kind == ErrorKind::kMalformed ? 2 : 1;
  }
  const ScanSummary& s = *summary;
  for (const auto& w : s.warnings) std::fprintf(stderr, "coroner: %s\n", w.c_str());
  std::string partial = s.partial ? fmt::format(", {} partial", s.partial) : "";
  std::string out = fmt::format("scanned {} inputs in {:.1f} s: {} analyzed ({} ok{}, {} error), {} unchanged", s.inputs,
                                s.seconds, s.analyzed, s.ok, partial, s.errors, s.unchanged);
  if (s.seconds > 0 && s.analyzed) out += fmt::format(", {:.0f} cores/s", static_cast<double>(s.analyzed) / s.seconds);
  out += "\n";
  if (options.journal) out += fmt::format("the journal gave {} crash entries\n", s.journal_entries);
  if (!s.bytes_per_core.empty()) {
    std::vector<uint64_t> b = s.bytes_per_core;
    std::sort(b.begin(), b.end());
    out += fmt::format("read {}: median {}, max {} a core\n", Bytes(static_cast<double>(s.bytes_read)),
                       Bytes(static_cast<double>(b[b.size() / 2])), Bytes(static_cast<double>(b.back())));
  }
  if (!s.error_kinds.empty()) {
    out += "errors:";
    for (const auto& [kind, n] : s.error_kinds) out += fmt::format(" {} {}", n, kind);
    out += "\n";
  }
  // Read-write, so that closing it checkpoints the WAL and leaves no -wal/-shm files.
  if (auto ds = Dataset::Open(options.db, false); ds.ok()) {
    auto q = ds->Query(
        "SELECT syndrome, count(*) FROM cores WHERE status = 'ok' GROUP BY syndrome ORDER BY count(*) DESC, syndrome");
    if (q.ok() && !q->rows.empty()) {
      out += "syndromes in the dataset:\n";
      for (const auto& row : q->rows) out += fmt::format("  {:<22}{:>8}\n", row[0].text, row[1].integer);
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int RunMergeCommand(const std::string& out, const std::vector<std::string>& shards) {
  auto r = MergeDatasets(out, shards);
  if (!r.ok()) {
    std::fprintf(stderr, "coroner: %s\n", r.error().message.c_str());
    return 1;
  }
  std::printf("merged %zu shards into %s: %zu cores added, %zu replaced, %zu unchanged\n", r->shards, out.c_str(),
              r->added, r->replaced, r->unchanged);
  return 0;
}

namespace {

// The statement a query's text stands for: SQL as it is, or one of
// sqlite3's dot commands users type first (`.tables`, `.schema [TABLE]`)
// as the SELECT that answers it; nullopt for another dot command.
std::optional<std::string> QueryStatement(const std::string& text) {
  std::istringstream words(text);
  std::string first, table, extra;
  words >> first >> table >> extra;
  if (first.empty() || first[0] != '.') return text;
  const std::string own = " AND name NOT LIKE 'sqlite_%'";
  if (first == ".tables" && table.empty())
    return "SELECT name FROM sqlite_master WHERE type = 'table'" + own + " ORDER BY name";
  if (first == ".schema" && extra.empty()) {
    std::string quoted;
    for (char c : table) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL" + own +
           (table.empty() ? std::string() : " AND tbl_name = '" + quoted + "'") + " ORDER BY tbl_name, type DESC, name";
  }
  return std::nullopt;
}

}  // namespace

int RunQueryCommand(const std::string& db, const std::string& text, bool json) {
  std::optional<std::string> sql = QueryStatement(text);
  if (!sql) {
    std::fprintf(stderr, "coroner: query takes one SQL statement, .tables or .schema [TABLE], not %s\n",
                 EscapedLine(text.substr(0, 64)).c_str());
    return 2;
  }
  auto ds = Dataset::OpenReadOnly(db);
  if (!ds.ok()) {
    std::fprintf(stderr, "coroner: %s\n", ds.error().message.c_str());
    return 1;
  }
  auto result = ds->QueryUserStatement(*sql);
  if (!result.ok()) {
    std::fprintf(stderr, "coroner: %s\n", result.error().message.c_str());
    return 1;
  }
  std::string out = json ? QueryResultToJson(*result) : QueryResultToTable(*result);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace coroner
