#include "cli/epi_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "dataset/dataset.h"
#include "dataset/metadata.h"
#include "dataset/scanner.h"
#include "dataset/timestamps.h"
#include "demo/demo_fleet.h"
#include "report/epi_report.h"
#include "epi/epidemiology.h"

namespace coroner {
namespace {

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (out.flush()) return true;
  std::fprintf(stderr, "coroner: cannot write %s\n", path.c_str());
  return false;
}

// The year of the newest crash, for syslog lines that carry none.
int NewestYear(Dataset& ds) {
  auto q = ds.Query("SELECT max(time) FROM cores");
  if (q.ok() && !q->rows.empty() && q->rows[0][0].type == QueryValue::Type::kText)
    if (auto t = ParseIso8601(q->rows[0][0].text)) return std::atoi(FormatIso8601(*t).substr(0, 4).c_str());
  return 1970 + static_cast<int>(std::time(nullptr) / (365.2425 * kSecondsPerDay));
}

std::string Self() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.parent_path().string();
}

// The crash zoo's cores: $CORONER_ZOO, or the zoo beside the binary (the
// build tree), built from the source tree when it is not there yet.
std::string ZooCores() {
  if (const char* env = std::getenv("CORONER_ZOO"); env && *env) return std::string(env) + "/cores";
  std::string zoo = Self() + "/zoo";
  if (std::filesystem::exists(zoo + "/manifest.tsv")) return zoo + "/cores";
#ifdef CORONER_SOURCE_DIR
  std::string crashers = std::string(CORONER_SOURCE_DIR) + "/tests/crashers";
  if (std::filesystem::exists(crashers + "/Makefile")) {
    std::fprintf(stderr, "coroner: building the crash zoo in %s\n", zoo.c_str());
    std::string cmd = "make -s -C '" + crashers + "' OUT='" + zoo + "' -j2 >&2";
    if (std::system(cmd.c_str()) == 0) return zoo + "/cores";
  }
#endif
  return "";
}

}  // namespace

// The analysis behind both commands; prints a one-line error and returns
// the exit status when it cannot be made.
std::optional<EpiResult> Compute(const EpiCommandOptions& o, int* status) {
  auto fail = [&](const std::string& message, int code) {
    std::fprintf(stderr, "coroner: %s\n", message.c_str());
    *status = code;
    return std::nullopt;
  };
  auto ds = Dataset::OpenReadOnly(o.db);
  if (!ds.ok()) return fail(ds.error().message, 1);
  EpiOptions options;
  options.where = o.where;
  options.incident_window_seconds = static_cast<int64_t>(o.incident_window_minutes * 60);
  if (!o.rules.empty()) {
    auto rules = LoadRules(o.rules);
    if (!rules.ok()) return fail(rules.error().message, 2);
    options.rules = *rules;
  }
  std::vector<std::string> warnings;
  int year = o.kernel_logs.empty() ? 0 : NewestYear(*ds);
  for (const auto& spec : o.kernel_logs) {
    auto log = LoadKernelLog(spec, year);
    if (!log.ok()) return fail(log.error().message, 1);
    options.hardware.insert(options.hardware.end(), log->events.begin(), log->events.end());
    for (const auto& w : log->warnings) warnings.push_back(spec + ": " + w);
  }
  std::optional<Inventory> inventory;
  if (!o.inventory.empty()) {
    auto inv = Inventory::Load(o.inventory);
    if (!inv.ok()) return fail(inv.error().message, 1);
    inventory = std::move(*inv);
    options.inventory = &*inventory;
  }
  auto result = RunEpidemiology(*ds, options);
  // A --where or a rule that SQLite rejects is the user's to fix.
  if (!result.ok()) return fail(result.error().message, 2);
  result->warnings.insert(result->warnings.begin(), warnings.begin(), warnings.end());
  return std::move(*result);
}

int RunEpiCommand(const EpiCommandOptions& o) {
  int status = 0;
  auto result = Compute(o, &status);
  if (!result) return status;
  if (!o.md.empty() && !WriteText(o.md, EpiToMarkdown(*result))) return 1;
  if (!o.html.empty() && !WriteText(o.html, EpiToHtml(*result))) return 1;
  std::fputs((o.json ? EpiToJson(*result) : EpiToText(*result)).c_str(), stdout);
  return 0;
}

int RunDemoCommand(const std::string& out_dir, const std::string& name) {
  std::optional<Scenario> scenario = ScenarioNamed(name);
  if (!scenario) {
    std::fprintf(stderr, "coroner: --scenario is one of %s, not %s\n", kScenarioNames, name.c_str());
    return 2;
  }
  std::string zoo = ZooCores();
  if (zoo.empty()) {
    std::fprintf(stderr, "coroner: no crash zoo: set CORONER_ZOO to a zoo directory (make zoo builds one)\n");
    return 1;
  }
  // The demo replaces only what an earlier demo made: a directory that is
  // new, empty, or carries the demo's marker (a real fleet's directory given
  // by mistake is never touched).
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string marker = out_dir + "/.coroner-demo";
  if (fs::exists(fs::symlink_status(out_dir, ec))) {
    bool ours = fs::is_regular_file(fs::symlink_status(marker, ec));
    if (!fs::is_directory(fs::symlink_status(out_dir, ec)) || (!fs::is_empty(out_dir, ec) && !ours)) {
      std::fprintf(stderr, "coroner: %s is not a directory an earlier demo made; give --out a new or empty directory\n",
                   out_dir.c_str());
      return 1;
    }
  }
  fs::create_directories(out_dir, ec);
  if (!WriteText(marker, "made by coroner demo: the demo may replace what is in this directory\n")) return 1;
  fs::remove_all(out_dir + "/fleet", ec);
  auto fleet = GenerateFleet(*scenario, zoo, out_dir + "/fleet");
  if (!fleet.ok()) {
    std::fprintf(stderr, "coroner: %s\n", fleet.error().message.c_str());
    return 1;
  }
  std::string db = out_dir + "/dataset.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix, ec);
  ScanOptions scan;
  scan.inputs = {fleet->cores_dir};
  scan.db = db;
  scan.inventory = fleet->inventory;
  auto summary = RunScan(scan);
  if (!summary.ok()) {
    std::fprintf(stderr, "coroner: %s\n", summary.error().message.c_str());
    return 1;
  }
  std::string out = fmt::format(
      "demo fleet \"{}\": {} real cores from {} hosts over {} days, scanned in {:.1f} s ({} ok, {} error)\nplanted:\n",
      scenario->name, fleet->cores, scenario->hosts, scenario->days, summary->seconds, summary->ok, summary->errors);
  for (const auto& p : scenario->populations) {
    out += fmt::format("  {:3}  {} ({})", fleet->per_population[p.name], p.name, p.core);
    if (!p.cause_attribute.empty()) out += fmt::format(": {} = {}", p.cause_attribute, p.cause_value);
    out += "\n";
  }
  EpiCommandOptions epi;
  epi.db = db;
  epi.kernel_logs = fleet->kernel_logs;
  epi.inventory = fleet->inventory;
  int status = 0;
  auto result = Compute(epi, &status);
  if (!result) return status;
  if (!WriteText(out_dir + "/report.md", EpiToMarkdown(*result)) ||
      !WriteText(out_dir + "/report.html", EpiToHtml(*result)) ||
      !WriteText(out_dir + "/report.json", EpiToJson(*result)))
    return 1;
  out += "\n" + EpiToText(*result);
  out += fmt::format("\nreport: {}/report.html (and report.md, report.json; the dataset is {})\n", out_dir, db);
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace coroner
