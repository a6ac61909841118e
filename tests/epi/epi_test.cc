// `coroner epi` on seeded fleets of real zoo cores with planted causes (the
// demo's and three more): every planted population is one cluster, its top
// finding names the planted cause at adjusted p < 1e-6, its onset is within
// a day of the planted one, every other finding of it that the cause implies
// is explained by it, and no background cluster shows a planted cause at
// adjusted p < 0.01 (in the exposure and region fleets, no finding at all).
// The host-days behind each rate are recomputed from the inventory here.
// Also rules, --where, the reports' escaping, and bad arguments.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "dataset/attribute_keys.h"
#include "dataset/dataset.h"
#include "dataset/scanner.h"
#include "dataset/timestamps.h"
#include "demo/demo_fleet.h"
#include "epi/epidemiology.h"
#include "epi/kernel_log.h"
#include "epi/statistics.h"
#include "unit/run_coroner.h"
#include "zoo/fleet.h"
#include "zoo/zoo.h"

namespace coroner::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Work() {
  static const std::string dir =
      fs::path(::testing::TempDir() + "/epi-test-" + std::to_string(getpid())).lexically_normal().string();
  return dir;
}

struct Scanned {
  Scenario scenario;
  GeneratedFleet fleet;
  std::string db;
  json report;  // with the inventory: rates per host-day
  json cases;   // without it: the cluster against the other crashes only
};

// Generates, scans and reports one scenario (once per test binary).
const Scanned& Scan(const Scenario& scenario) {
  static std::map<std::string, Scanned> done;
  auto it = done.find(scenario.name);
  if (it != done.end()) return it->second;
  Scanned s;
  s.scenario = scenario;
  std::string dir = Work() + "/" + scenario.name;
  auto fleet = GenerateFleet(scenario, ZooDir() + "/cores", dir + "/fleet");
  EXPECT_TRUE(fleet.ok()) << fleet.error().message;
  s.fleet = *fleet;
  s.db = dir + "/dataset.db";
  auto r = Coroner("scan " + s.fleet.cores_dir + " --db " + s.db + " --inventory " + s.fleet.inventory);
  EXPECT_EQ(r.status, 0) << r.err;
  std::string logs;
  for (const auto& l : s.fleet.kernel_logs) logs += " --kernel-log " + l;
  auto e = Coroner("epi --db " + s.db + " --json --inventory " + s.fleet.inventory + logs);
  EXPECT_EQ(e.status, 0) << e.err;
  s.report = json::parse(e.out);
  auto c = Coroner("epi --db " + s.db + " --json" + logs);
  EXPECT_EQ(c.status, 0) << c.err;
  s.cases = json::parse(c.out);
  return done.emplace(scenario.name, std::move(s)).first->second;
}

// epi run in this process over a scanned fleet, with its kernel logs and
// inventory, for the tests that read its facts; none on failure.
std::optional<EpiResult> EpiHere(const Scanned& s) {
  auto ds = Dataset::OpenReadOnly(s.db);
  EXPECT_TRUE(ds.ok()) << ds.error().message;
  if (!ds.ok()) return std::nullopt;
  EpiOptions options;
  for (const auto& path : s.fleet.kernel_logs) {
    auto log = LoadKernelLog(path, 2026);
    EXPECT_TRUE(log.ok()) << log.error().message;
    if (!log.ok()) return std::nullopt;
    options.hardware.insert(options.hardware.end(), log->events.begin(), log->events.end());
  }
  static std::map<std::string, Inventory> inventories;  // alive beside the results that point into them
  auto inventory = Inventory::Load(s.fleet.inventory);
  EXPECT_TRUE(inventory.ok()) << inventory.error().message;
  if (!inventory.ok()) return std::nullopt;
  options.inventory = &(inventories[s.fleet.inventory] = std::move(*inventory));
  auto r = RunEpidemiology(*ds, options);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (!r.ok()) return std::nullopt;
  return std::move(*r);
}

// The signature the scan gave each population's cores: one per population.
std::map<std::string, std::string> Signatures(const Scanned& s) {
  auto ds = Dataset::OpenReadOnly(s.db);
  EXPECT_TRUE(ds.ok());
  std::map<std::string, std::set<std::string>> seen;
  auto q = ds->Query("SELECT path, signature FROM cores");
  EXPECT_TRUE(q.ok());
  for (const auto& row : q->rows) seen[s.fleet.population_of.at(row[0].text)].insert(row[1].text);
  std::map<std::string, std::string> out;
  for (const auto& [pop, sigs] : seen) {
    EXPECT_EQ(sigs.size(), 1u) << pop;
    out[pop] = *sigs.begin();
  }
  return out;
}

// Host-days with column = value within [from, to] (days, inclusive), summed
// here from the inventory's rows (which the generator writes without
// overlaps); "host" is the host column.
double InventoryDays(const std::string& csv_path, const std::string& column, const std::string& value,
                     const std::string& from, const std::string& to) {
  std::ifstream in(csv_path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream ss(line); std::getline(ss, line, ',');) header.push_back(line);
  auto lo = ParseIso8601(from + "T00:00:00Z"), hi = ParseIso8601(to + "T00:00:00Z");
  EXPECT_TRUE(lo && hi);
  double days = 0;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    size_t i = 0;
    for (std::stringstream ss(line); std::getline(ss, line, ',');) row[header.at(i++)] = line;
    if (!column.empty() && row.at(column) != value) continue;
    auto a = ParseIso8601(row.at("valid_from")), b = ParseIso8601(row.at("valid_to"));
    EXPECT_TRUE(a && b);
    int64_t x = std::max(*a, *lo), y = std::min(*b, *hi + 86400);
    if (x < y) days += static_cast<double>(y - x) / 86400;
  }
  return days;
}

bool StrictBackground(const Scenario& scenario) { return scenario.name == "exposure" || scenario.name == "region"; }

// A population whose cause is the change it began with: named so, with
// the host-days recomputed from the inventory; no crash before the value
// reached a host, all of them after.
void CheckBeganWith(const Scanned& s, const json& cluster, const PlantedPopulation& p) {
  const json& report = s.report;
  const json& began = cluster["began_with"];
  ASSERT_FALSE(began.is_null()) << cluster.dump();
  EXPECT_EQ(began["attribute"], p.cause_attribute);
  EXPECT_EQ(began["value"], p.cause_value);
  EXPECT_EQ(began["crashes_before"], 0);
  EXPECT_EQ(began["crashes_after"], p.count);
  double all = InventoryDays(s.fleet.inventory, "", "", report["first_day"], report["last_day"]);
  double with = InventoryDays(s.fleet.inventory, p.cause_attribute, p.cause_value, report["first_day"],
                              report["last_day"]);
  EXPECT_NEAR(began["host_days_after"].get<double>(), with, 1e-6);
  EXPECT_NEAR(began["host_days_before"].get<double>(), all - with, 1e-6);
  // Every crash on the value, which has this share of the host-days.
  EXPECT_NEAR(began["p_value"].get<double>(), std::pow(with / all, static_cast<double>(p.count)), 1e-12);
  EXPECT_GE(began["p_lag"].get<double>(), 0.01);
  char words[160];
  std::snprintf(words, sizeof words, "began with %s %s (0 crashes in %.0f host-days before, %zu after)",
                p.cause_attribute.c_str(), p.cause_value.c_str(), all - with, p.count);
  EXPECT_EQ(began["reading"], words);
}

void CheckPlantedCauses(const Scenario& scenario) {
  const Scanned& s = Scan(scenario);
  const json& report = s.report;
  EXPECT_EQ(report["cores"], s.fleet.cores);
  EXPECT_EQ(report["clusters"].size(), scenario.populations.size());
  auto signatures = Signatures(s);
  std::set<std::string> distinct;
  for (const auto& [pop, sig] : signatures) distinct.insert(sig);
  ASSERT_EQ(distinct.size(), scenario.populations.size()) << "two populations share a signature";
  // Tarone: tests that could never be significant are left out of the
  // family, and every finding could have been significant in it.
  EXPECT_GT(report["untestable"].get<uint64_t>(), 0u);
  uint64_t family = report["tests"], cores = report["cores"];
  for (const auto& c : report["clusters"])
    for (const auto& f : c["findings"]) {
      uint64_t n = c["count"];
      if (!f["host_days"].is_null()) {
        // Every crash of these fleets is placed: at best all n on the value,
        // which has this share of the host-days.
        ASSERT_FALSE(c["exposure"].is_null());
        double q = f["host_days"].get<double>() / c["exposure"]["host_days"].get<double>();
        EXPECT_LE(std::pow(q, static_cast<double>(n)), 0.05 / static_cast<double>(family)) << f.dump();
        // The host-days, recomputed from the inventory over the window.
        std::string column = f["attribute"] == "host" ? "host" : f["attribute"].get<std::string>();
        EXPECT_NEAR(f["host_days"].get<double>(),
                    InventoryDays(s.fleet.inventory, column, f["value"], f["window"]["from"], f["window"]["to"]), 1e-6)
            << f.dump();
        EXPECT_EQ(f["window"]["from"], c["first_seen"]);
        EXPECT_EQ(f["window"]["to"], c["last_seen"]);
        // The rates are crashes per host-day with the value and without.
        double all = c["exposure"]["host_days"], with = f["host_days"];
        EXPECT_NEAR(f["rate"].get<double>(), f["count"].get<double>() / with, 1e-9);
        EXPECT_NEAR(f["rate_without"].get<double>(), (static_cast<double>(n) - f["count"].get<double>()) / (all - with),
                    1e-9);
      } else if (f["window"].is_null()) {
        // Against its reference: the cluster and the crashes it was compared with.
        uint64_t all = n + f["reference"]["crashes"].get<uint64_t>();
        EXPECT_LE(all, cores);
        uint64_t m = static_cast<uint64_t>(std::llround(f["baseline_share"].get<double>() * static_cast<double>(all)));
        EXPECT_LE(FisherGreater(std::min(n, m), n, m, all), 0.05 / static_cast<double>(family)) << f.dump();
      }
    }
  for (const auto& c : report["clusters"])
    if (!c["exposure"].is_null()) {
      EXPECT_NEAR(c["exposure"]["host_days"].get<double>(),
                  InventoryDays(s.fleet.inventory, "", "", c["first_seen"], c["last_seen"]), 1e-6);
      EXPECT_EQ(c["exposure"]["hosts"], scenario.hosts);
    }
  std::set<std::pair<std::string, std::string>> causes;
  for (const auto& p : scenario.populations)
    if (!p.cause_attribute.empty()) causes.insert({p.cause_attribute, p.cause_value});
  auto start = ParseIso8601(scenario.start_date);
  ASSERT_TRUE(start);
  for (const auto& p : scenario.populations) {
    SCOPED_TRACE(scenario.name + ": " + p.name);
    const json* cluster = nullptr;
    for (const auto& c : report["clusters"])
      if (c["signature"] == signatures.at(p.name)) cluster = &c;
    ASSERT_NE(cluster, nullptr);
    EXPECT_EQ((*cluster)["count"], p.count);
    // Only the strongest finding explains others, and it is never explained.
    for (const auto& f : (*cluster)["findings"]) {
      if (f["explained_by"].is_null()) continue;
      const json& first = (*cluster)["findings"][0];
      EXPECT_EQ(f["explained_by"]["attribute"], first["attribute"]) << f.dump();
      EXPECT_EQ(f["explained_by"]["value"], first["value"]) << f.dump();
      EXPECT_EQ(f["flag"], "explained by " + first["attribute"].get<std::string>() + " = " +
                               first["value"].get<std::string>());
    }
    if (!(*cluster)["findings"].empty()) {
      EXPECT_TRUE((*cluster)["findings"][0]["explained_by"].is_null());
    }
    if (p.onset_cause) {
      CheckBeganWith(s, *cluster, p);
    } else if (!p.cause_attribute.empty()) {
      ASSERT_FALSE((*cluster)["findings"].empty());
      const json& top = (*cluster)["findings"][0];
      EXPECT_EQ(top["attribute"], p.cause_attribute);
      EXPECT_EQ(top["value"], p.cause_value);
      EXPECT_LT(top["p_adjusted"].get<double>(), 1e-6);
      EXPECT_GE(top["share"].get<double>(), 0.99);
      EXPECT_FALSE(top["flag"].is_null());
      // The generator's first crash of the population is the planted onset.
      int first = s.fleet.first_day.at(p.name);
      EXPECT_LE(first - p.start_day, 3) << "the generator could not place the onset";
      auto onset = ParseIso8601((*cluster)["onset"].get<std::string>());
      ASSERT_TRUE(onset);
      int64_t planted = *start + first * 86400;
      EXPECT_LE(std::llabs(*onset - planted), 86400) << (*cluster)["onset"];
    } else {
      if (StrictBackground(scenario)) {
        EXPECT_TRUE((*cluster)["findings"].empty()) << (*cluster)["findings"].dump();
      }
      for (const auto& f : (*cluster)["findings"]) {
        if (f["p_adjusted"].get<double>() >= 0.01) continue;
        EXPECT_EQ(causes.count({f["attribute"], f["value"]}), 0u)
            << "background shows planted cause " << f["attribute"] << "=" << f["value"];
      }
    }
  }
}

const json& ClusterOf(const json& report, const std::string& signature) {
  for (const auto& c : report["clusters"])
    if (c["signature"] == signature) return c;
  static const json none;
  ADD_FAILURE() << "no cluster " << signature;
  return none;
}

// Who the report calls suspect hardware, in each of its places, agrees:
// every finding flagged so and every "suspect the GPU" reading names a
// host or machine with a verdict in hosts[]. Returns the verdicts' hosts.
std::set<std::string> CheckVerdictsAgree(const json& report) {
  std::set<std::string> verdicts;
  for (const auto& h : report["hosts"])
    if (!h["verdict"].is_null()) verdicts.insert(h["host"].get<std::string>());
  for (const auto& c : report["clusters"]) {
    for (const auto& f : c["findings"]) {
      if (!f["flag"].is_string() || f["flag"].get<std::string>().find("suspect hardware") == std::string::npos)
        continue;
      if (f["attribute"].get<std::string>().rfind("hw_errors_", 0) == 0) continue;  // hosts with errors: below
      EXPECT_EQ(verdicts.count(f["value"].get<std::string>()), 1u) << c["id"] << " " << f.dump();
    }
    if (c["gpu_events"].is_object() && c["gpu_events"]["reading"].is_string()) {
      std::string reading = c["gpu_events"]["reading"];
      size_t on = reading.find(" on GPU ");
      if (reading.find("suspect the GPU") != std::string::npos && on != std::string::npos) {
        std::string owner = reading.substr(on + 8, reading.find(' ', on + 8) - on - 8);
        EXPECT_EQ(verdicts.count(owner), 1u) << reading;
      }
    }
  }
  return verdicts;
}

// Whether a cluster's findings or GPU reading call anything suspect.
bool SaysHardware(const json& cluster) {
  std::string words = cluster["findings"].dump() + cluster["gpu_events"].dump();
  return words.find("suspect hardware") != std::string::npos || words.find("suspect the GPU") != std::string::npos;
}

TEST(Epi, DemoFleetFindsTheBadMachineTheReleaseAndTheKernel) {
  CheckPlantedCauses(DemoScenario());
  const Scanned& scanned = Scan(DemoScenario());
  const json& r = scanned.report;
  // The HTML card says what the cluster began with once, not again as a finding's flag.
  {
    std::string html = Work() + "/demo-report.html";
    auto h = Coroner("epi --db " + scanned.db + " --inventory " + scanned.fleet.inventory + " --html " + html);
    ASSERT_EQ(h.status, 0) << h.err;
    std::string page = ReadAll(html);
    size_t flags = 0;
    for (size_t at = page.find("<p class=\"flag\">began with release"); at != std::string::npos;
         at = page.find("<p class=\"flag\">began with release", at + 1))
      ++flags;
    EXPECT_EQ(flags, 1u);
  }
  // One syndrome hiding two clusters: the release's and the kernel's null-derefs.
  size_t null_derefs = 0;
  for (const auto& c : r["clusters"]) null_derefs += c["syndrome"] == "null-deref";
  EXPECT_EQ(null_derefs, 2u);
  // The bad machine's readings: suspect hardware, fresh nodes only.
  for (const auto& c : r["clusters"]) {
    if (c["syndrome"] != "misaligned-stack") continue;
    EXPECT_EQ(c["findings"][0]["flag"], "100% of this cluster on one machine — suspect hardware");
    bool fresh = false;
    for (const auto& f : c["findings"])
      fresh |= f["attribute"] == "uptime_bucket" && f["flag"] == "never on nodes up more than 2 days";
    EXPECT_TRUE(fresh);
    EXPECT_EQ(c["uptime"][">=7d"], 0);
    // The machine's region and its hosts are what the machine implies: each
    // is explained by it (within the machine's cores and outside them, they
    // are no longer over-represented).
    std::string machine = c["findings"][0]["value"];
    size_t implied = 0;
    for (const auto& f : c["findings"]) {
      if (f["attribute"] != "region" && f["attribute"] != "host") continue;
      ++implied;
      EXPECT_EQ(f["explained_by"], (json{{"attribute", "machine"}, {"value", machine}})) << f.dump();
    }
    EXPECT_GT(implied, 0u);
  }
  // The release's and the kernel's clusters began with them.
  const Scanned& s = Scan(DemoScenario());
  auto signatures = Signatures(s);
  for (const auto& p : DemoScenario().populations) {
    if (p.cause_attribute != "release" && p.cause_attribute != "kernel") continue;
    const json& began = ClusterOf(r, signatures.at(p.name))["began_with"];
    ASSERT_FALSE(began.is_null()) << p.name;
    EXPECT_EQ(began["attribute"], p.cause_attribute);
    EXPECT_EQ(began["value"], p.cause_value);
    EXPECT_EQ(began["crashes_before"], 0);
  }
  // The bad machine is one row, a machine with a verdict over the VMs its
  // crashes came from (the fleet's own record); none of them has a row of
  // its own for those crashes, and no other host has a verdict.
  std::set<std::string> vms;
  for (const auto& [path, pop] : s.fleet.population_of)
    if (pop == DemoScenario().populations[0].name) vms.insert(fs::path(path).parent_path().filename().string());
  EXPECT_GE(vms.size(), 2u);
  EXPECT_EQ(CheckVerdictsAgree(r), std::set<std::string>{"phys-we-03"});
  // Without the inventory at epi, the machine each core's attributes name
  // (the scan joined it) rolls the VMs up the same way.
  EXPECT_EQ(CheckVerdictsAgree(s.cases), std::set<std::string>{"phys-we-03"});
  for (const auto& h : r["hosts"]) {
    if (h["host"] == "phys-we-03") {
      EXPECT_TRUE(h["machine"].get<bool>());
      EXPECT_EQ(h["vms"], json(std::vector<std::string>(vms.begin(), vms.end())));
      EXPECT_NE(h["evidence"].dump().find("40 impossible register states"), std::string::npos) << h.dump();
      EXPECT_EQ(h["verdict"].get<std::string>().rfind("phys-we-03 (" + std::to_string(vms.size()) + " VMs): ", 0), 0u)
          << h.dump();
    } else {
      EXPECT_EQ(vms.count(h["host"]), 0u) << h.dump();
    }
  }
}

// The demo fleet's bad machine in facts, not words: its cluster's top
// finding reads "on one machine" (the planted one), suspect hardware; the
// uptime reading is the tightest bucket above the planted longest uptime;
// the region and hosts it implies are explained by the machine.
TEST(Epi, ReadingsAreFacts) {
  const Scanned& s = Scan(DemoScenario());
  auto ds = Dataset::OpenReadOnly(s.db);
  ASSERT_TRUE(ds.ok()) << ds.error().message;
  auto r = RunEpidemiology(*ds, EpiOptions{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Scenario scenario = DemoScenario();
  const PlantedPopulation& bad = scenario.populations[0];
  const Cluster* cluster = nullptr;
  for (const auto& c : r->clusters)
    if (c.syndrome == "misaligned-stack") cluster = &c;
  ASSERT_NE(cluster, nullptr);
  ASSERT_FALSE(cluster->findings.empty());
  const Finding& top = cluster->findings[0];
  EXPECT_EQ(top.attribute, bad.cause_attribute);
  EXPECT_EQ(top.value, bad.cause_value);
  ASSERT_TRUE(top.reading && std::holds_alternative<reading::OnOneMachine>(*top.reading));
  EXPECT_DOUBLE_EQ(std::get<reading::OnOneMachine>(*top.reading).share, 1.0);
  EXPECT_TRUE(top.suspect_hardware);
  int64_t bound = 0;
  for (int64_t t : {int64_t{3600}, int64_t{6 * 3600}, int64_t{86400}, int64_t{2 * 86400}, int64_t{7 * 86400}})
    if (!bound && t > bad.max_uptime_seconds) bound = t;
  size_t uptime = 0, explained = 0;
  for (const auto& f : cluster->findings) {
    if (f.reading && std::holds_alternative<reading::NeverUpLonger>(*f.reading)) {
      ++uptime;
      EXPECT_EQ(std::get<reading::NeverUpLonger>(*f.reading).seconds, bound);
    }
    if (f.attribute == "region" || f.attribute == "host") {
      ++explained;
      ASSERT_TRUE(f.reading && std::holds_alternative<reading::ExplainedBy>(*f.reading)) << f.attribute << "=" << f.value;
      EXPECT_EQ(std::get<reading::ExplainedBy>(*f.reading).attribute, bad.cause_attribute);
      EXPECT_EQ(std::get<reading::ExplainedBy>(*f.reading).value, bad.cause_value);
    }
  }
  EXPECT_EQ(uptime, 1u);
  EXPECT_GT(explained, 0u);
  // The machine's verdict rests on that finding, as a fact of its own.
  const HostVerdict* machine = nullptr;
  for (const auto& h : r->hosts)
    if (h.host == bad.cause_value) machine = &h;
  ASSERT_NE(machine, nullptr);
  EXPECT_TRUE(machine->suspect);
  EXPECT_TRUE(machine->machine);
  const verdict::ClusterFinding* named = nullptr;
  for (const auto& e : machine->evidence)
    if (const auto* f = std::get_if<verdict::ClusterFinding>(&e.fact)) named = f;
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(&r->clusters[named->cluster], cluster);
  EXPECT_EQ(named->attribute, bad.cause_attribute);
  EXPECT_EQ(named->value, bad.cause_value);
  EXPECT_TRUE(std::holds_alternative<reading::OnOneMachine>(named->reading));
  EXPECT_EQ(named->count, cluster->count);
  EXPECT_EQ(named->cluster_crashes, cluster->count);
}

// The hosts whose GPUs report Xid 79 are those the illegal instructions
// crash on: the cluster's finding and the hosts' verdicts say so together.
TEST(Epi, GpuFleetFindsTheXidHostsAndTheSku) {
  CheckPlantedCauses(GpuScenario());
  const Scanned& s = Scan(GpuScenario());
  std::set<std::string> xid_hosts;
  for (const auto& path : s.fleet.kernel_logs) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      if (line.find("NVRM: Xid (") != std::string::npos) xid_hosts.insert(fs::path(path).stem().string());
  }
  EXPECT_EQ(xid_hosts.size(), static_cast<size_t>(GpuScenario().gpu_error_hosts));
  EXPECT_EQ(CheckVerdictsAgree(s.report), xid_hosts);
  // In facts: each of those hosts is suspect for the illegal instructions
  // that came after its hardware errors, which the cluster's finding read.
  auto r = EpiHere(s);
  ASSERT_TRUE(r);
  std::set<std::string> after_errors;
  for (const auto& h : r->hosts) {
    for (const auto& e : h.evidence) {
      const auto* a = std::get_if<verdict::AfterHardwareErrors>(&e.fact);
      if (!a) continue;
      EXPECT_TRUE(h.suspect) << h.host;
      EXPECT_GE(a->crashes, 2u);
      EXPECT_EQ(a->window_days, 7);
      EXPECT_TRUE(std::holds_alternative<reading::OnHostsWithHardwareErrors>(a->reading));
      EXPECT_EQ(r->clusters[a->cluster].syndrome, "illegal-instruction");
      after_errors.insert(h.host);
    }
  }
  EXPECT_EQ(after_errors, xid_hosts);
}

// Release r518 reached every host on day 8; the wild jumps began on day 12
// in one region. Every one of them is on r518 by the calendar: within the
// cluster's active window, with or without the inventory, r518 is no finding.
TEST(Epi, RegionFleetFindsTheRegionAndTheService) {
  CheckPlantedCauses(RegionScenario());
  const Scanned& s = Scan(RegionScenario());
  auto signatures = Signatures(s);
  for (const json* r : {&s.report, &s.cases}) {
    const json& c = ClusterOf(*r, signatures.at(RegionScenario().populations[0].name));
    for (const auto& f : c["findings"]) EXPECT_NE(f["attribute"], "release") << f.dump();
    // Nor did the wild jumps begin with it: four days of the whole fleet on
    // r518 passed without one, at a rate that gives one every few hours.
    EXPECT_TRUE(c["began_with"].is_null()) << c["began_with"].dump();
  }
  for (const auto& c : s.report["clusters"]) EXPECT_TRUE(c["began_with"].is_null()) << c.dump();
}

// One region has three times the hosts; another population lives only in
// the small region. Against all the other crashes, the background
// populations looked over-represented in the big region (the trap: the
// small region's population, a cause of its own, depleted it elsewhere);
// per host-day they are not, and against a reference without that
// population (the competition-bias correction) neither. The batch service
// lives mostly on the bad SKU: it is a finding of the SKU's cluster,
// explained by the SKU.
TEST(Epi, ExposureFleetSeesThroughTheTrapAndTheConfounder) {
  Scenario scenario = ExposureScenario();
  CheckPlantedCauses(scenario);
  const Scanned& s = Scan(scenario);
  auto signatures = Signatures(s);
  for (const json* report : {&s.cases, &s.report}) {
    const json& trap = ClusterOf(*report, signatures.at(scenario.populations[2].name));
    for (const auto& f : trap["findings"])
      EXPECT_FALSE(f["attribute"] == "region" && f["p_adjusted"].get<double>() < 0.01) << f.dump();
    // The small region's own population keeps its cause, and is what the
    // reference without an inventory leaves out.
    const json& small = ClusterOf(*report, signatures.at(scenario.populations[1].name));
    bool region = false;
    for (const auto& f : small["findings"]) region |= f["attribute"] == "region" && f["value"] == "westeurope";
    EXPECT_TRUE(region) << small["findings"].dump();
  }
  EXPECT_TRUE(ClusterOf(s.report, signatures.at(scenario.populations[2].name))["findings"].empty());
  // The old reference, all the other crashes, still springs the trap: the
  // background against every other crash, recomputed here from the
  // dataset (Fisher, one-sided), is significant in the big region.
  {
    auto q = Coroner("query --json --db " + s.db +
                     " \"SELECT (c.signature = '" + signatures.at(scenario.populations[2].name) +
                     "') AS mine, (SELECT value FROM attributes WHERE core = c.id AND key = 'region') = 'eastus' AS east, "
                     "count(*) AS n FROM cores c WHERE c.status = 'ok' GROUP BY 1, 2\"");
    ASSERT_EQ(q.status, 0) << q.err;
    uint64_t both = 0, n = 0, with = 0, all = 0;
    for (const auto& row : json::parse(q.out)) {
      uint64_t k = row["n"].get<uint64_t>();
      all += k;
      if (row["mine"] == 1) n += k;
      if (row["east"] == 1) with += k;
      if (row["mine"] == 1 && row["east"] == 1) both += k;
    }
    EXPECT_LT(FisherGreater(both, n, with, all), 1e-3) << both << " of " << n << ", " << with << " of " << all;
  }
  const json& sku = ClusterOf(s.report, signatures.at(scenario.populations[0].name));
  bool batch = false;
  for (const auto& f : sku["findings"])
    if (f["attribute"] == "service" && f["value"] == "batch") {
      batch = true;
      EXPECT_EQ(f["explained_by"], (json{{"attribute", "sku"}, {"value", "Standard_L8s_v3"}})) << f.dump();
      EXPECT_GT(f["rate_ratio"].get<double>(), 2.0) << f.dump();
    }
  EXPECT_TRUE(batch) << sku["findings"].dump();
}

TEST(Epi, RulesExcludeAndLabelBeforeClustering) {
  const Scanned& s = Scan(DemoScenario());
  std::string rules = Work() + "/rules.toml";
  std::ofstream(rules) << "[[exclude]]\nname = \"known fpe test\"\nwhere = \"syndrome = 'fpe'\"\n"
                          "[[label]]\nname = \"every null-deref\"\nwhere = \"syndrome = 'null-deref'\"\n"
                          "[signature]\nskip = [\"load\"]\n";
  auto r = Coroner("epi --db " + s.db + " --json --rules " + rules);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["cores"], 280);
  EXPECT_EQ(j["excluded"], 20);
  bool labelled = false;
  for (const auto& c : j["clusters"]) {
    EXPECT_NE(c["syndrome"], "fpe");
    if (c["label"] == "every null-deref") {
      labelled = true;
      EXPECT_EQ(c["count"], 110);
      EXPECT_EQ(c["syndrome"], "null-deref");
    }
  }
  EXPECT_TRUE(labelled);
  // The extra skip-list: bad_pointer's "load" frame is gone from its signature.
  bool resigned = false;
  for (const auto& c : j["clusters"]) resigned |= c["signature"] == "bad-pointer | main" && c["count"] == 20;
  EXPECT_TRUE(resigned) << j["clusters"];

  auto w = Coroner("epi --db " + s.db + " --json --where \"syndrome <> 'return-to-null'\"");
  ASSERT_EQ(w.status, 0) << w.err;
  EXPECT_EQ(json::parse(w.out)["cores"], 220);

  auto bad_where = Coroner("epi --db " + s.db + " --where \"no_such_column = 1\"");
  EXPECT_EQ(bad_where.status, 2);
  EXPECT_NE(bad_where.err.find("no such column"), std::string::npos) << bad_where.err;
  std::ofstream(rules) << "[[label]\nname = 1\n";
  auto bad_rules = Coroner("epi --db " + s.db + " --rules " + rules);
  EXPECT_EQ(bad_rules.status, 2);
  EXPECT_NE(bad_rules.err.find("rules: line 1"), std::string::npos) << bad_rules.err;
  EXPECT_EQ(Coroner("epi --db " + Work() + "/missing.db").status, 1);
}

// Hostile names from metadata reach every report as text.
TEST(Epi, ReportsEscapeWhatCoresAndMetadataSay) {
  std::string dir = Work() + "/hostile";
  fs::create_directories(dir);
  const std::string host = "<script>alert(1)</script>";
  int n = 0;
  for (const char* variant : {"null_deref-O0", "abort_assert-O0", "bus_error-O0"})
    for (int i = 0; i < 4; ++i) {
      std::string core = dir + "/" + variant + "-" + std::to_string(i) + ".core";
      fs::create_hard_link(ZooDir() + "/cores/" + variant + ".core", core);
      std::ofstream(core + ".json") << json{{"host", i < 3 ? host : "h|`*_[x]"},
                                            {"region", "\"quoted\" & <b>bold</b>"},
                                            {"time", "2026-10-0" + std::to_string(1 + (n++ % 5)) + "T10:00:00Z"}}
                                           .dump();
    }
  std::string db = dir + "/d.db";
  ASSERT_EQ(Coroner("scan " + dir + " --db " + db).status, 0);
  auto r = Coroner("epi --db " + db + " --html " + dir + "/r.html --md " + dir + "/r.md");
  ASSERT_EQ(r.status, 0) << r.err;
  std::string html = ReadAll(dir + "/r.html");
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<b>bold"), std::string::npos);
  size_t scripts = 0;
  for (size_t at = html.find("<script"); at != std::string::npos; at = html.find("<script", at + 1)) ++scripts;
  EXPECT_EQ(scripts, 1u);  // the report's own
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  std::string md = ReadAll(dir + "/r.md");
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  EXPECT_EQ(md.find("h|`"), std::string::npos);  // the pipe would split a table cell
}

// A sidecar naming `exe` and `build_id` as the core does: each is still one
// value per core (the findings once said "exe: 8 of cluster (200.0%)").
TEST(Epi, ExeAndBuildIdAreCountedOncePerCore) {
  std::string dir = Work() + "/exe-twice";
  fs::create_directories(dir);
  auto j = json::parse(Coroner("analyze --json " + ZooDir() + "/cores/null_deref-O0.core").out);
  std::string exe = j["process"]["exe"], build_id;
  for (const auto& m : j["modules"])
    if (m["path"] == exe) build_id = m["build_id"];
  ASSERT_FALSE(build_id.empty());
  for (int i = 0; i < 8; ++i) {
    std::string core = dir + "/null_deref-" + std::to_string(i) + ".core";
    fs::create_hard_link(ZooDir() + "/cores/null_deref-O0.core", core);
    std::ofstream(core + ".json") << json{{"host", "h" + std::to_string(i % 2)}, {"exe", exe}, {"build_id", build_id},
                                          {"time", "2026-10-0" + std::to_string(1 + i % 5) + "T10:00:00Z"}}
                                         .dump();
  }
  // Another population, so that the executable is a finding of the first.
  for (int i = 0; i < 8; ++i) {
    std::string core = dir + "/abort_assert-" + std::to_string(i) + ".core";
    fs::create_hard_link(ZooDir() + "/cores/abort_assert-O0.core", core);
    std::ofstream(core + ".json") << json{{"host", "h" + std::to_string(i % 2)},
                                          {"time", "2026-10-0" + std::to_string(1 + i % 5) + "T10:00:00Z"}}
                                         .dump();
  }
  std::string db = dir + "/d.db";
  ASSERT_EQ(Coroner("scan " + dir + " --db " + db).status, 0);
  auto r = Coroner("epi --db " + db + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto e = json::parse(r.out);
  ASSERT_EQ(e["clusters"].size(), 2u);
  // Counted once, the executable and its build-id are exactly the first
  // cluster's cores: what the cluster is, not a finding (counted twice, they
  // were "build_id: 16 of 8").
  for (const auto& c : e["clusters"]) {
    EXPECT_EQ(c["count"], 8);
    for (const auto& f : c["findings"]) {
      EXPECT_LE(f["count"].get<int>(), 8) << f.dump();
      EXPECT_LE(f["share"].get<double>(), 1.0) << f.dump();
      EXPECT_NE(f["attribute"], "exe") << f.dump();
      EXPECT_NE(f["attribute"], "build_id") << f.dump();
    }
  }
  // The text report's shares too.
  auto text = Coroner("epi --db " + db);
  EXPECT_EQ(text.out.find("200.0%"), std::string::npos) << text.out;
}

// The hardware fleet: one host whose crashes fall in four clusters no other
// host has, with impossible states, flipped pointers, machine checks and
// 85% of its segfault lines on CPU 17; one GPU whose Xid 48/79 lines precede
// the runtime's aborts on every VM placed on its machine; an application's
// GPU bug on GPUs everywhere (the same signature as the bad GPU's aborts);
// background crashes and one corrected machine check elsewhere. The planted host and GPU get verdicts,
// and no other host does; every line the kernel printed about a crash is
// joined to its core, as counted here from the logs themselves.
TEST(Epi, HardwareFleetGivesVerdictsToThePlantedHostAndGpuOnly) {
  const Scanned& s = Scan(HardwareScenario());
  const json& r = s.report;
  std::map<std::string, const json*> verdicts;
  for (const auto& h : r["hosts"])
    if (!h["verdict"].is_null()) verdicts[h["host"]] = &h;
  ASSERT_EQ(verdicts.size(), 2u) << r["hosts"].dump();
  EXPECT_EQ(CheckVerdictsAgree(r), (std::set<std::string>{"we-node-03", "phys-eus-03"}));
  ASSERT_TRUE(verdicts.count("we-node-03"));
  ASSERT_TRUE(verdicts.count("phys-eus-03"));

  // The logs, read here: lines about crashes, the bad host's CPUs.
  uint64_t crash_lines = 0, on_cpu17 = 0, bad_host_with_cpu = 0, xid_lines = 0;
  for (const auto& path : s.fleet.kernel_logs) {
    std::ifstream in(path);
    bool bad = path.find("/we-node-03.log") != std::string::npos;
    for (std::string line; std::getline(in, line);) {
      bool crash = line.find("]: segfault at ") != std::string::npos || line.find(" traps: ") != std::string::npos;
      crash_lines += crash;
      xid_lines += line.find("NVRM: Xid (") != std::string::npos;
      // Traps print no CPU: only the segfault lines name one.
      if (bad && crash && line.find(" likely on CPU ") != std::string::npos) {
        ++bad_host_with_cpu;
        on_cpu17 += line.find("likely on CPU 17 ") != std::string::npos;
      }
    }
  }
  // One line per crash the kernel reports: all but the aborts.
  uint64_t faults = 0;
  for (const auto& [pop, n] : s.fleet.per_population)
    if (pop.find("GPU") == std::string::npos && pop.find("assertions") == std::string::npos) faults += n;
  EXPECT_EQ(crash_lines, faults);
  EXPECT_EQ(r["joined_lines"], crash_lines + xid_lines);

  const json& bad = *verdicts["we-node-03"];
  EXPECT_GE(bad["score"].get<double>(), 4);
  EXPECT_EQ(bad["cpus"]["17"], on_cpu17);
  std::string evidence = bad["evidence"].dump();
  EXPECT_NE(evidence.find(std::to_string(on_cpu17) + " of the " + std::to_string(bad_host_with_cpu) +
                          " crash lines in the kernel log that name a CPU name CPU 17"),
            std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find(std::to_string(s.fleet.per_population.at("bad host: misaligned stacks")) +
                          " impossible register states"),
            std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find(std::to_string(s.fleet.per_population.at("bad host: flipped pointers")) +
                          " cores with possible bit flips"),
            std::string::npos)
      << evidence;
  EXPECT_NE(evidence.find("4 of them (mostly) on this host alone"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("MCE bank 4 on CPU 17"), std::string::npos) << evidence;

  // The bad GPU is the machine's: its aborts fell on every VM placed there
  // (the hosts of its cores, from the fleet's own record), and the verdict
  // names the machine and those VMs.
  uint64_t bad_gpu = s.fleet.per_population.at("bad GPU: Xid 79/48 before the runtime aborts");
  std::set<std::string> vms;
  for (const auto& [path, pop] : s.fleet.population_of)
    if (pop == "bad GPU: Xid 79/48 before the runtime aborts")
      vms.insert(fs::path(path).parent_path().filename().string());
  EXPECT_GE(vms.size(), 2u);
  const json& machine = *verdicts["phys-eus-03"];
  EXPECT_EQ(machine["vms"], json(std::vector<std::string>(vms.begin(), vms.end())));
  std::string gpu_evidence = machine["evidence"].dump();
  EXPECT_NE(gpu_evidence.find("GPU 0000:3b:00 reported its own errors: Xid 48 ×" + std::to_string(bad_gpu) +
                              ", Xid 79 ×" + std::to_string(bad_gpu) + "; " + std::to_string(bad_gpu) +
                              " crashes followed them"),
            std::string::npos)
      << gpu_evidence;

  // One gpu-fault cluster holds both GPU populations: every core is joined
  // to its Xid line, and the reading names the application and the GPU.
  uint64_t app = s.fleet.per_population.at("application GPU bug on every GPU");
  size_t gpu_clusters = 0;
  for (const auto& c : r["clusters"]) {
    if (c["syndrome"] != "gpu-fault") continue;
    ++gpu_clusters;
    EXPECT_EQ(c["count"], bad_gpu + app);
    EXPECT_EQ(c["gpu_events"]["cores"], bad_gpu + app);
    EXPECT_EQ(c["gpu_events"]["gpus"]["phys-eus-03 0000:3b:00"].get<uint64_t>(), bad_gpu);
    std::string reading = c["gpu_events"]["reading"];
    EXPECT_NE(reading.find("different GPUs"), std::string::npos) << reading;
    EXPECT_NE(reading.find("the application, not a GPU"), std::string::npos) << reading;
    EXPECT_NE(reading.find("GPU phys-eus-03 0000:3b:00 alone has " + std::to_string(bad_gpu)), std::string::npos)
        << reading;
  }
  EXPECT_EQ(gpu_clusters, 1u);

  // The cores' own evidence, as scan stored it.
  auto ds = Dataset::OpenReadOnly(s.db);
  ASSERT_TRUE(ds.ok());
  auto q = ds->Query(
      "SELECT (SELECT count(*) FROM attributes WHERE key = 'impossible_state'), (SELECT count(*) FROM attributes "
      "WHERE key = 'possible_bit_flips' AND value = '2'), (SELECT count(*) FROM cores WHERE syndrome = 'gpu-fault')");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->rows[0][0].integer, static_cast<int64_t>(s.fleet.per_population.at("bad host: misaligned stacks")));
  // bit_flip.c's pointer and the fault address both are one bit from the object.
  EXPECT_EQ(q->rows[0][1].integer, static_cast<int64_t>(s.fleet.per_population.at("bad host: flipped pointers")));
  EXPECT_EQ(q->rows[0][2].integer, static_cast<int64_t>(bad_gpu + app));
}

// The hardware fleet's verdicts as facts, from epi run here over the
// scan's dataset, its inventory and its kernel logs: each count is the
// one the logs and the fleet's own record give.
TEST(Epi, HardwareVerdictsAreFacts) {
  const Scanned& s = Scan(HardwareScenario());
  auto r = EpiHere(s);
  ASSERT_TRUE(r);

  // The bad host's segfault lines that name a CPU, and those naming 17.
  uint64_t on_cpu17 = 0, with_cpu = 0;
  for (const auto& path : s.fleet.kernel_logs) {
    if (path.find("/we-node-03.log") == std::string::npos) continue;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      if (line.find("]: segfault at ") == std::string::npos || line.find(" likely on CPU ") == std::string::npos)
        continue;
      ++with_cpu;
      on_cpu17 += line.find("likely on CPU 17 ") != std::string::npos;
    }
  }
  auto fact = [](const HostVerdict& h, auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    for (const auto& e : h.evidence)
      if (const T* t = std::get_if<T>(&e.fact)) return t;
    return static_cast<const T*>(nullptr);
  };
  std::map<std::string, const HostVerdict*> suspect;
  for (const auto& h : r->hosts)
    if (h.suspect) suspect[h.host] = &h;
  ASSERT_EQ(suspect.size(), 2u);
  ASSERT_TRUE(suspect.count("we-node-03"));
  ASSERT_TRUE(suspect.count("phys-eus-03"));

  const HostVerdict& bad = *suspect["we-node-03"];
  EXPECT_FALSE(bad.machine);
  const auto* cpu = fact(bad, static_cast<verdict::CrashLinesOnOneCpu*>(nullptr));
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->cpu, 17);
  EXPECT_EQ(cpu->on_cpu, on_cpu17);
  EXPECT_EQ(cpu->lines, with_cpu);
  EXPECT_LT(cpu->p, 1e-3);
  const auto* impossible = fact(bad, static_cast<verdict::ImpossibleStates*>(nullptr));
  ASSERT_NE(impossible, nullptr);
  EXPECT_EQ(impossible->cores, s.fleet.per_population.at("bad host: misaligned stacks"));
  const auto* flips = fact(bad, static_cast<verdict::BitFlips*>(nullptr));
  ASSERT_NE(flips, nullptr);
  EXPECT_EQ(flips->cores, s.fleet.per_population.at("bad host: flipped pointers"));
  const auto* own = fact(bad, static_cast<verdict::OwnClusters*>(nullptr));
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(own->own, 4u);
  const auto* mce = fact(bad, static_cast<verdict::MachineErrors*>(nullptr));
  ASSERT_NE(mce, nullptr);
  ASSERT_FALSE(mce->first.empty());
  EXPECT_EQ(mce->first[0].kind, EventKind::kMce);
  EXPECT_EQ(mce->first[0].bank, 4);
  EXPECT_EQ(mce->first[0].cpu, 17);

  // The bad GPU is the machine's: Xid 48 and 79 once per abort before each.
  uint64_t bad_gpu = s.fleet.per_population.at("bad GPU: Xid 79/48 before the runtime aborts");
  const HostVerdict& machine = *suspect["phys-eus-03"];
  EXPECT_TRUE(machine.machine);
  const auto* gpu = fact(machine, static_cast<verdict::GpuErrors*>(nullptr));
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->gpu, "0000:3b:00");
  EXPECT_EQ(gpu->lines, (std::map<verdict::GpuErrorKind, uint64_t>{{{48}, bad_gpu}, {{79}, bad_gpu}}));
  EXPECT_EQ(gpu->followed, bad_gpu);

  // The gpu-fault cluster: many GPUs (the application), one standing out.
  size_t gpu_clusters = 0;
  for (const auto& c : r->clusters) {
    if (c.syndrome != "gpu-fault") continue;
    ++gpu_clusters;
    ASSERT_TRUE(c.gpu_events.reading);
    const auto* many = std::get_if<gpu_reading::ManyGpus>(&*c.gpu_events.reading);
    ASSERT_NE(many, nullptr);
    EXPECT_EQ(many->cores, c.count);
    EXPECT_EQ(many->gpus, c.gpu_events.gpus.size());
    ASSERT_TRUE(many->stands_out);
    EXPECT_EQ(many->stands_out->owner, "phys-eus-03");
    EXPECT_EQ(many->stands_out->gpu, "0000:3b:00");
    EXPECT_EQ(many->stands_out->crashes, bad_gpu);
  }
  EXPECT_EQ(gpu_clusters, 1u);
}

// AMD GPUs and a release (the amd scenario): the application's page faults
// on GPUs of many hosts, in every form the driver generations print, with
// their status lines, are the application's (no hardware word, no verdict);
// the GPU whose uncorrectable ECC errors precede its aborts is named with
// its host; the boot lines of mce, EDAC and amdgpu are no evidence; the
// crash that came with a release on the day it reached every host is named
// as the change it began with.
TEST(Epi, AmdFleetNamesTheBadGpuNotTheApplicationAndTheRelease) {
  Scenario scenario = AmdScenario();
  const Scanned& s = Scan(scenario);
  const json& r = s.report;
  auto signatures = Signatures(s);
  const std::string app = scenario.populations[0].name, bad = scenario.populations[1].name;
  ASSERT_EQ(signatures.at(app), signatures.at(bad));  // one syndrome and signature: the GPU runtime's abort
  uint64_t n_bad = s.fleet.per_population.at(bad), n_app = s.fleet.per_population.at(app);

  // The logs hold every driver form, the boot lines, and per crash the
  // lines that begin an event: the kernel's own (segfault, traps), the page
  // fault, ROCr's memory access fault, the ECC report and the reset. Each
  // of those is joined to its core; the status lines make no event.
  uint64_t events = 0, boots = 0;
  std::set<std::string> forms;
  for (const auto& path : s.fleet.kernel_logs) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      for (const char* form : {"amdgpu:  Process ", "amdgpu:  for process ", "fault from die AID0.XCD1",
                               "vmid:8 pasid:32769, for process ", "WALKER_ERROR: 0x0"})
        if (line.find(form) != std::string::npos) forms.insert(form);
      boots += line.find("mce: CPU0: Thermal monitoring enabled") != std::string::npos;
      for (const char* begins : {"]: segfault at ", " traps: ", "page fault (", "Memory access fault by GPU",
                                 "uncorrectable hardware errors", "GPU reset begin"})
        events += line.find(begins) != std::string::npos;
    }
  }
  EXPECT_EQ(forms.size(), 5u);
  EXPECT_GT(boots, 0u);
  EXPECT_EQ(r["joined_lines"], events);

  // One verdict: the bad GPU's host, naming the GPU; the boot lines are in
  // no host's evidence.
  EXPECT_EQ(CheckVerdictsAgree(r), std::set<std::string>{"eus-node-04"});
  for (const auto& h : r["hosts"]) {
    EXPECT_EQ(h["evidence"].dump().find("machine error"), std::string::npos) << h.dump();
    if (h["host"] != "eus-node-04") continue;
    EXPECT_FALSE(h["machine"].get<bool>());
    std::string verdict = h["verdict"];
    EXPECT_NE(verdict.find("GPU 0000:c1:00.0 RAS uncorrectable ×" + std::to_string(n_bad)), std::string::npos)
        << verdict;
  }
  // The GPU cluster: the application on many GPUs, and the one GPU.
  const json& gpu = ClusterOf(r, signatures.at(app));
  EXPECT_EQ(gpu["count"], n_app + n_bad);
  EXPECT_EQ(gpu["gpu_events"]["cores"], n_app + n_bad);
  std::string reading = gpu["gpu_events"]["reading"];
  EXPECT_NE(reading.find("the application, not a GPU"), std::string::npos) << reading;
  EXPECT_NE(reading.find("but GPU eus-node-04 0000:c1:00.0 alone has " + std::to_string(n_bad)), std::string::npos)
      << reading;
  // The bad GPU's host is over-represented in it, and so are hosts with
  // hardware errors, which that host explains; neither calls the cluster
  // hardware: it is mostly the application's.
  for (const auto& f : gpu["findings"])
    if (f["attribute"] == "hw_errors_7d") {
      EXPECT_EQ(f["explained_by"], (json{{"attribute", "host"}, {"value", "eus-node-04"}})) << f.dump();
    }
  // No software population says hardware.
  for (const auto& c : r["clusters"])
    if (c["signature"] != signatures.at(app)) {
      EXPECT_FALSE(SaysHardware(c)) << c.dump();
    }
  EXPECT_FALSE(SaysHardware(gpu)) << gpu.dump();

  // The text, Markdown and HTML reports call the same host suspect, and no
  // other: every line that says "suspect" is its verdict.
  std::string logs, dir = fs::path(s.db).parent_path().string();
  for (const auto& l : s.fleet.kernel_logs) logs += " --kernel-log " + l;
  auto text = Coroner("epi --db " + s.db + " --inventory " + s.fleet.inventory + logs + " --md " + dir + "/r.md --html " +
                      dir + "/r.html");
  ASSERT_EQ(text.status, 0) << text.err;
  for (const std::string& report : {text.out, ReadAll(dir + "/r.md"), ReadAll(dir + "/r.html")}) {
    size_t suspects = 0;
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("suspect") == std::string::npos) continue;
      ++suspects;
      EXPECT_NE(line.find("eus-node-04: GPU 0000:c1:00.0 RAS uncorrectable"), std::string::npos) << line;
    }
    EXPECT_GE(suspects, 1u);
  }

  // The release: named as the change the cluster began with.
  const PlantedPopulation& release = scenario.populations[2];
  ASSERT_TRUE(release.onset_cause);
  CheckBeganWith(s, ClusterOf(r, signatures.at(release.name)), release);
  // Without an inventory, no host-days: the other crashes are the clock, and name the same release.
  const json& clock = ClusterOf(s.cases, signatures.at(release.name))["began_with"];
  ASSERT_FALSE(clock.is_null());
  EXPECT_EQ(clock["attribute"], release.cause_attribute);
  EXPECT_EQ(clock["value"], release.cause_value);
  EXPECT_EQ(clock["clock"], "crashes");
}

// Per core: the impossible state of the misaligned-stack rules, the GPU
// runtime a gpu-fault aborted in, and a CUDA GPU dump beside a core.
TEST(Epi, AnalyzeSaysImpossibleStatesGpuRuntimesAndGpuDumps) {
  auto misaligned = Coroner("analyze --json " + ZooDir() + "/cores/misaligned_stack-O0.core");
  ASSERT_EQ(misaligned.status, 0) << misaligned.err;
  json m = json::parse(misaligned.out);
  ASSERT_TRUE(m["diagnosis"]["impossible_state"].is_string());
  EXPECT_NE(m["diagnosis"]["impossible_state"].get<std::string>().find("off by 8"), std::string::npos);
  auto null_deref = Coroner("analyze --json " + ZooDir() + "/cores/null_deref-O0.core");
  EXPECT_TRUE(json::parse(null_deref.out)["diagnosis"]["impossible_state"].is_null());

  std::string dir = Work() + "/gpu-dump";
  fs::create_directories(dir);
  std::string core = dir + "/train.core";
  fs::copy_file(ZooDir() + "/cores/gpu_runtime_abort-O0.core", core, fs::copy_options::overwrite_existing);
  auto plain = Coroner("analyze --json " + core);
  ASSERT_EQ(plain.status, 0) << plain.err;
  json g = json::parse(plain.out);
  EXPECT_EQ(g["diagnosis"]["syndrome"], "gpu-fault");
  EXPECT_EQ(g["diagnosis"]["gpu_runtime"], "libhsa-runtime64.so.1");
  EXPECT_TRUE(g["gpu_state"].empty());
  std::ofstream(dir + "/train.nvcudmp") << "not read, only noted";
  json with = json::parse(Coroner("analyze --json " + core).out);
  ASSERT_EQ(with["gpu_state"].size(), 1u);
  EXPECT_NE(with["gpu_state"][0].get<std::string>().find(dir + "/train.nvcudmp"), std::string::npos);
}

// The cores of `dir` (with their sidecars) scanned into dir/d.db, and epi's
// JSON report of them; null on a failure, which fails the test.
json ScanAndEpi(const std::string& dir) {
  std::string db = dir + "/d.db";
  auto scan = Coroner("scan " + dir + " --db " + db);
  EXPECT_EQ(scan.status, 0) << scan.err;
  auto r = Coroner("epi --db " + db + " --json");
  EXPECT_EQ(r.status, 0) << r.err;
  return r.status == 0 ? json::parse(r.out) : json();
}

// The report's (last) cluster of `syndrome`, or null.
const json* ClusterOfSyndrome(const json& report, const std::string& syndrome) {
  const json* found = nullptr;
  if (report.is_object() && report.contains("clusters"))
    for (const auto& c : report["clusters"])
      if (c["syndrome"] == syndrome) found = &c;
  return found;
}

// "Suspect hardware" needs at least 5 cores over at least 2 days: 3 crashes
// of one afternoon, all on one host, read "only on host ...". The same
// cluster with 6 cores over 3 days is suspect hardware.
TEST(Epi, SuspectHardwareNeedsFiveCoresOverTwoDays) {
  for (int cores : {3, 6}) {
    std::string dir = Work() + "/support-" + std::to_string(cores);
    fs::create_directories(dir);
    auto add = [&](const std::string& variant, int i, const std::string& host, const std::string& time) {
      std::string core = dir + "/" + variant + "-" + std::to_string(i) + ".core";
      fs::create_hard_link(ZooDir() + "/cores/" + variant + ".core", core);
      std::ofstream(core + ".json") << json{{"host", host}, {"time", time}}.dump();
    };
    for (int i = 0; i < cores; ++i)
      add("bus_error-O0", i, "bad-host", cores == 3 ? "2026-10-01T1" + std::to_string(i) + ":00:00Z"
                                                    : "2026-10-0" + std::to_string(1 + i / 2) + "T10:00:00Z");
    for (int i = 0; i < 40; ++i)
      add("abort_assert-O0", i, "host-" + std::to_string(i % 10), "2026-10-0" + std::to_string(1 + i % 5) + "T11:00:00Z");
    json e = ScanAndEpi(dir);
    const json* bus = ClusterOfSyndrome(e, "bus-error");
    ASSERT_NE(bus, nullptr) << e.dump();
    ASSERT_FALSE((*bus)["findings"].empty()) << e.dump();
    const json& top = (*bus)["findings"][0];
    EXPECT_EQ(top["attribute"], "host");
    EXPECT_EQ(top["value"], "bad-host");
    EXPECT_EQ(top["flag"], cores == 3 ? "only on host bad-host" : "100% of this cluster on one host — suspect hardware")
        << top.dump();
  }
}

// A CI VM: three crashes in three clusters no other host has, within half
// an hour of its boot. It scores (unrelated clusters, fresh boot), but three
// crashes of one afternoon without an error record of the machine are
// chance: its row says "no verdict", and no report says "suspect".
TEST(Epi, ACiVmsThreeFreshCrashesAreNoVerdict) {
  std::string dir = Work() + "/ci-vm";
  fs::create_directories(dir);
  auto add = [&](const std::string& variant, int i, const std::string& host, const std::string& boot,
                 const std::string& time) {
    std::string core = dir + "/" + variant + "-" + std::to_string(i) + ".core";
    fs::create_hard_link(ZooDir() + "/cores/" + variant + ".core", core);
    std::ofstream(core + ".json") << json{{"host", host}, {"boot_time", boot}, {"time", time}}.dump();
  };
  int minute = 5;
  for (const char* variant : {"bus_error-O0", "divide_by_zero-O0", "illegal_instruction-O0"})
    add(variant, 0, "ci-vm-7", "2026-10-03T14:00:00Z", "2026-10-03T14:" + std::to_string(minute += 8) + ":00Z");
  for (int i = 0; i < 40; ++i)
    add("abort_assert-O0", i, "host-" + std::to_string(i % 10), "2026-09-20T00:00:00Z",
        "2026-10-0" + std::to_string(1 + i % 5) + "T11:00:00Z");
  std::string db = dir + "/d.db";
  ASSERT_EQ(Coroner("scan " + dir + " --db " + db).status, 0);
  auto r = Coroner("epi --db " + db + " --json --md " + dir + "/r.md --html " + dir + "/r.html");
  ASSERT_EQ(r.status, 0) << r.err;
  auto e = json::parse(r.out);
  ASSERT_EQ(e["hosts"].size(), 1u) << e["hosts"].dump();
  const json& ci = e["hosts"][0];
  EXPECT_EQ(ci["host"], "ci-vm-7");
  EXPECT_GE(ci["score"].get<double>(), 4) << ci.dump();
  EXPECT_TRUE(ci["verdict"].is_null());
  std::string evidence = ci["evidence"].dump();
  EXPECT_NE(evidence.find("3 crashes in 3 clusters, 3 of them (mostly) on this host alone"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("3 of 3 crashes within an hour of boot"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("no verdict: 3 crashes and no error record"), std::string::npos) << evidence;
  std::string text = Coroner("epi --db " + db).out;
  for (const std::string& report : {text, ReadAll(dir + "/r.md"), ReadAll(dir + "/r.html")})
    EXPECT_EQ(report.find("suspect"), std::string::npos);
}

// A fleet of zoo cores, each linked into `dir` with a sidecar of its own.
struct SidecarFleet {
  explicit SidecarFleet(std::string d) : dir(std::move(d)) { fs::create_directories(dir); }
  void operator()(const std::string& variant, const json& sidecar) {
    std::string core = dir + "/" + variant + "-" + std::to_string(cores++) + ".core";
    fs::create_hard_link(ZooDir() + "/cores/" + variant + ".core", core);
    std::ofstream(core + ".json") << sidecar.dump();
  }
  std::string dir;
  int cores = 0;
};

// Every key the attribute table says names a physical machine does so in
// every part of epi: bus errors on three VMs whose sidecars name one
// machine, over three days, are a finding on that machine (suspect
// hardware) and one verdict row for the machine, which counts their crashes
// (the cores' machine, as the sidecars name it).
TEST(Epi, EveryMachineKeyNamesAMachine) {
  for (const auto& key : AttributeKeys()) {
    if (key.place != KeyPlace::kMachine) continue;
    const std::string name(key.name);
    SCOPED_TRACE(name);
    SidecarFleet add(Work() + "/machine-key-" + name);
    for (int i = 0; i < 6; ++i)
      add("bus_error-O0", {{"host", "vm-" + std::to_string(i % 3)}, {name, "phys-1"},
                           {"time", "2026-10-0" + std::to_string(1 + i / 2) + "T10:00:00Z"}});
    for (int i = 0; i < 30; ++i)
      add("abort_assert-O0", {{"host", "host-" + std::to_string(i % 10)}, {name, "phys-" + std::to_string(2 + i % 10)},
                              {"time", "2026-10-0" + std::to_string(1 + i % 5) + "T11:00:00Z"}});
    json e = ScanAndEpi(add.dir);
    const json* bus = ClusterOfSyndrome(e, "bus-error");
    ASSERT_NE(bus, nullptr) << e.dump();
    ASSERT_FALSE((*bus)["findings"].empty()) << e.dump();
    EXPECT_EQ((*bus)["findings"][0]["attribute"], name);
    EXPECT_EQ((*bus)["findings"][0]["value"], "phys-1");
    EXPECT_EQ((*bus)["findings"][0]["flag"], "100% of this cluster on one " + name + " — suspect hardware");
    size_t rows = 0;
    for (const auto& h : e["hosts"]) {
      if (h["verdict"].is_null()) continue;
      ++rows;
      EXPECT_EQ(h["host"], "phys-1");
      EXPECT_TRUE(h["machine"].get<bool>());
      EXPECT_EQ(h["crashes"], 6) << h.dump();
    }
    EXPECT_EQ(rows, 1u) << e["hosts"].dump();
  }
}

// Six jobs of 8 ranks over six days: in each, rank 0 dereferences NULL
// first and the 7 others throw within half a minute (collateral); five of
// the six roots are on one host. A torchrun job whose 4 ranks all hit the
// same bus error at once; background assertions everywhere. Each job is one
// incident with its root named; the collateral cluster has no finding and
// says whose collateral it is; the bad host is the root cluster's finding,
// per incident; the torchrun job is alike.
TEST(Epi, AJobsCrashIsOneIncidentAndItsCollateralNoFinding) {
  std::string dir = Work() + "/incidents";
  SidecarFleet add(dir);
  for (int job = 0; job < 6; ++job) {
    std::string day = "2026-10-0" + std::to_string(1 + job);
    std::string root_host = job < 5 ? "gpu-bad-01" : "gpu-07";
    for (int rank = 0; rank < 8; ++rank) {
      std::string host = rank < 4 ? root_host : "gpu-1" + std::to_string(job);
      std::string time = day + "T10:00:" + (rank == 0 ? std::string("00") : std::to_string(10 + rank * 2)) + "Z";
      add(rank == 0 ? "null_deref-O0" : "uncaught_exception-O0",
          {{"host", host}, {"time", time}, {"job_id", std::to_string(48210 + job)}, {"job_step", "0"},
           {"launcher", "slurm"}, {"rank", std::to_string(rank)}});
    }
  }
  for (int rank = 0; rank < 4; ++rank)
    add("bus_error-O0", {{"host", "tr-0" + std::to_string(rank / 2)}, {"time", "2026-10-03T08:00:00Z"},
                         {"job_id", "run-7"}, {"launcher", "torchrun"}, {"rank", std::to_string(rank)}});
  for (int i = 0; i < 60; ++i)
    add("abort_assert-O0", {{"host", "h-" + std::to_string(i % 20)}, {"time", "2026-10-0" + std::to_string(1 + i % 6) + "T1" +
                                                                                 std::to_string(i % 10) + ":00:00Z"}});
  std::string db = dir + "/d.db";
  ASSERT_EQ(Coroner("scan " + dir + " --db " + db).status, 0);
  auto r = Coroner("epi --db " + db + " --json --md " + dir + "/r.md --html " + dir + "/r.html");
  ASSERT_EQ(r.status, 0) << r.err;
  json e = json::parse(r.out);
  EXPECT_EQ(e["cores"], 6 * 8 + 4 + 60);
  EXPECT_EQ(e["incident_count"], 6 + 1 + 60);
  const json *root = nullptr, *collateral = nullptr, *alike = nullptr;
  for (const auto& c : e["clusters"]) {
    if (c["syndrome"] == "null-deref") root = &c;
    if (c["syndrome"] == "uncaught-exception") collateral = &c;
    if (c["syndrome"] == "bus-error") alike = &c;
  }
  ASSERT_TRUE(root && collateral && alike);
  // The incidents: one per job, its root rank 0 in the null-deref cluster.
  ASSERT_EQ(e["incidents"].size(), 7u) << e["incidents"].dump();
  size_t slurm = 0;
  for (const auto& i : e["incidents"]) {
    if (i["launcher"] == "torchrun") {
      EXPECT_EQ(i["job"], "run-7");
      EXPECT_EQ(i["cores"], 4);
      EXPECT_TRUE(i["alike"].get<bool>());
      EXPECT_EQ(i["collateral"], 0);
      EXPECT_EQ(i["root"]["rank"], 0);
      EXPECT_EQ(i["root"]["cluster"], (*alike)["id"]);
      continue;
    }
    ++slurm;
    EXPECT_EQ(i["cores"], 8);
    EXPECT_EQ(i["collateral"], 7);
    EXPECT_FALSE(i["alike"].get<bool>());
    EXPECT_EQ(i["root"]["rank"], 0);
    EXPECT_EQ(i["root"]["cluster"], (*root)["id"]);
    EXPECT_EQ(i["root"]["signature"], (*root)["signature"]);
    EXPECT_EQ(i["job"].get<std::string>().substr(0, 4), "4821");
  }
  EXPECT_EQ(slurm, 6u);
  EXPECT_EQ((*root)["incidents"], 6);
  EXPECT_EQ((*alike)["incidents"], 1);
  EXPECT_EQ((*collateral)["count"], 42);
  EXPECT_EQ((*collateral)["incidents"], 6);
  // Collateral only: no finding, whose collateral it is.
  EXPECT_TRUE((*collateral)["findings"].empty()) << (*collateral)["findings"].dump();
  EXPECT_EQ((*collateral)["collateral_of"], (*root)["id"]);
  EXPECT_EQ((*collateral)["collateral_reading"],
            "collateral of " + (*root)["id"].get<std::string>() + " (rank 0 on host gpu-bad-01 died first)");
  // The bad host, counted per incident: 5 of the 6 roots, and none of the
  // 60 background crashes (Fisher over the 66 observations + the alike job's one).
  const json* bad = nullptr;
  for (const auto& f : (*root)["findings"])
    if (f["attribute"] == "host" && f["value"] == "gpu-bad-01") bad = &f;
  ASSERT_NE(bad, nullptr) << (*root)["findings"].dump();
  EXPECT_EQ((*bad)["count"], 5);
  EXPECT_NEAR((*bad)["p_value"].get<double>(), FisherGreater(5, 6, 5, 67), 1e-15);
  // No finding anywhere names a collateral core's host.
  for (const auto& c : e["clusters"])
    for (const auto& f : c["findings"]) EXPECT_EQ(f["value"].get<std::string>().rfind("gpu-1", 0), std::string::npos);
  // The reports list the incidents.
  std::string text = Coroner("epi --db " + db).out;
  EXPECT_NE(text.find("slurm job 48210 step 0: 8 cores, rank 0 on host gpu-bad-01 died first (" +
                      (*root)["id"].get<std::string>() + "), 7 collateral"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("torchrun job run-7: 4 cores, rank 0 on host tr-00 died first"), std::string::npos) << text;
  EXPECT_NE(text.find("every rank crashed alike: deterministic, not one bad node"), std::string::npos);
  EXPECT_NE(ReadAll(dir + "/r.md").find("## Incidents"), std::string::npos);
  // A window of 6 s: the ranks that threw 12 to 24 s after their root are
  // incidents apart from it (in 6 s groups), and no longer its collateral.
  json narrow = json::parse(Coroner("epi --db " + db + " --json --incident-window 0.1").out);
  EXPECT_EQ(narrow["incident_count"], 60 + 1 + 6 * (1 + 2));
  for (const auto& i : narrow["incidents"])
    if (i["launcher"] == "slurm") {
      EXPECT_LE(i["cores"].get<int>(), 4) << i.dump();
    }
  EXPECT_NE(ReadAll(dir + "/r.html").find("<table class=\"sortable\" id=\"incidents\">"), std::string::npos);
}

// Incidents that hold their job and their root (each case merged or
// misjudged before):
// - one job key per launcher, cluster, job id, step and both restart
//   counts: Slurm's job 1234 on two clusters, a torchrun run named
//   "900 step 0" and Slurm's job 900 step 0, two elastic restarts of one
//   Slurm job, are incidents apart; two JAX runs sharing a coordinator
//   address are too (a rank is never twice in one incident);
// - a core claiming job 5000's rank 0 fourteen minutes before its crash,
//   from a host the job never ran on, is alone; another one on a host of
//   the job splits nothing either: the real rank 0 is the root of all 8;
// - a big rank's core written 40 s after its peers' watchdog aborts is
//   still the root: a rank that gave up yields to one that faulted.
TEST(Epi, IncidentsHoldTheirJobAndTheirRoot) {
  std::string dir = Work() + "/incidents-hold";
  SidecarFleet add(dir);
  auto at = [](int day, int seconds) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "2026-10-%02dT10:%02d:%02dZ", day, seconds / 60, seconds % 60);
    return std::string(buf);
  };
  // Two ranks crashing at once, the second collateral.
  auto pair = [&](int day, json job) {
    for (int rank = 0; rank < 2; ++rank) {
      json s = job;
      s["host"] = "h-" + std::to_string(day) + "-" + std::to_string(rank);
      s["time"] = at(day, rank * 5);
      s["rank"] = std::to_string(rank);
      add(rank == 0 ? "null_deref-O0" : "uncaught_exception-O0", s);
    }
  };
  pair(1, {{"launcher", "slurm"}, {"job_id", "1234"}, {"job_step", "0"}, {"job_cluster", "east"}});
  pair(1, {{"launcher", "slurm"}, {"job_id", "1234"}, {"job_step", "0"}, {"job_cluster", "west"}});
  pair(2, {{"launcher", "torchrun"}, {"job_id", "900 step 0"}});
  pair(2, {{"launcher", "slurm"}, {"job_id", "900"}, {"job_step", "0"}});
  pair(3, {{"launcher", "slurm"}, {"job_id", "777"}, {"job_step", "0"}, {"elastic_restart", "0"}});
  for (int rank = 0; rank < 2; ++rank)  // the elastic restart, five minutes on
    add(rank == 0 ? "null_deref-O0" : "uncaught_exception-O0",
        {{"launcher", "slurm"}, {"job_id", "777"}, {"job_step", "0"}, {"elastic_restart", "1"},
         {"host", "h-3-" + std::to_string(rank)}, {"time", at(3, 300 + rank * 5)}, {"rank", std::to_string(rank)}});
  for (int run = 0; run < 2; ++run)  // two JAX runs, five minutes apart, one coordinator
    for (int rank = 0; rank < 2; ++rank)
      add(rank == 0 ? "null_deref-O0" : "uncaught_exception-O0",
          {{"launcher", "jax"}, {"job_id", "10.0.0.1:1234"}, {"host", "j-" + std::to_string(rank)},
           {"time", at(4, run * 300 + rank * 5)}, {"rank", std::to_string(rank)}, {"world_size", "2"}});
  // Job 5000: two impostors, then the real crash 14 minutes later.
  json job5000 = {{"launcher", "slurm"}, {"job_id", "5000"}, {"job_step", "0"}, {"world_size", "8"}};
  json impostor = job5000;
  impostor.update({{"host", "elsewhere"}, {"job_node", "n0"}, {"time", at(5, 0)}, {"rank", "0"}});
  add("bus_error-O0", impostor);
  impostor.update({{"host", "n3"}, {"job_node", "n3"}, {"time", at(5, 1)}, {"rank", "3"}});
  add("bus_error-O2", impostor);
  for (int rank = 0; rank < 8; ++rank) {
    json s = job5000;
    s.update({{"host", "n" + std::to_string(rank)}, {"job_node", "n" + std::to_string(rank)},
              {"time", at(5, 14 * 60 + (rank == 0 ? 0 : 10 + rank))}, {"rank", std::to_string(rank)}});
    add(rank == 0 ? "null_deref-O0" : "uncaught_exception-O0", s);
  }
  // Job 6000: three watchdog aborts, then the faulting rank's late core.
  for (int rank = 0; rank < 4; ++rank) {
    json s = {{"launcher", "slurm"}, {"job_id", "6000"}, {"host", "m" + std::to_string(rank)},
              {"rank", std::to_string(rank)}, {"time", at(6, rank == 0 ? 40 : rank)}};
    if (rank > 0) s["peer_failure"] = "nccl-watchdog";
    add(rank == 0 ? "null_deref-O0" : "abort_assert-O0", s);
  }
  std::string db = dir + "/d.db";
  ASSERT_EQ(Coroner("scan " + dir + " --db " + db).status, 0);
  auto r = Coroner("epi --db " + db + " --json");
  ASSERT_EQ(r.status, 0) << r.err;
  json e = json::parse(r.out);
  ASSERT_EQ(e["cores"], add.cores);
  std::string null_deref;
  for (const auto& c : e["clusters"])
    if (c["syndrome"] == "null-deref") null_deref = c["id"];
  // "launcher job": cores, root rank, collateral.
  std::map<std::string, std::vector<std::tuple<int, int, int>>> incidents;
  for (const auto& i : e["incidents"]) {
    EXPECT_EQ(i["root"]["cluster"], null_deref) << i.dump();
    incidents[i["launcher"].get<std::string>() + " " + i["job"].get<std::string>()].emplace_back(
        i["cores"].get<int>(), i["root"]["rank"].get<int>(), i["collateral"].get<int>());
  }
  using Found = std::vector<std::tuple<int, int, int>>;
  EXPECT_EQ(incidents["slurm 1234 step 0 on cluster east"], (Found{{2, 0, 1}}));
  EXPECT_EQ(incidents["slurm 1234 step 0 on cluster west"], (Found{{2, 0, 1}}));
  EXPECT_EQ(incidents["torchrun 900 step 0"], (Found{{2, 0, 1}}));
  EXPECT_EQ(incidents["slurm 900 step 0"], (Found{{2, 0, 1}}));
  EXPECT_EQ(incidents["slurm 777 step 0"], (Found{{2, 0, 1}}));
  EXPECT_EQ(incidents["slurm 777 step 0 elastic restart 1"], (Found{{2, 0, 1}}));
  EXPECT_EQ(incidents["jax 10.0.0.1:1234"], (Found{{2, 0, 1}, {2, 0, 1}}));
  EXPECT_EQ(incidents["slurm 5000 step 0"], (Found{{8, 0, 7}}));
  EXPECT_EQ(incidents["slurm 6000"], (Found{{4, 0, 3}}));
  EXPECT_EQ(incidents.size(), 9u) << e["incidents"].dump();
  for (const auto& i : e["incidents"])
    if (i["job"] == "5000 step 0") {
      EXPECT_EQ(i["root"]["host"], "n0");
      EXPECT_EQ(i["first_crash"], at(5, 14 * 60));
      EXPECT_FALSE(i["alike"].get<bool>());
    }
  // 14 two-core incidents of one observation... counted: 8 listed pairs,
  // job 5000's impostors (two, alone) and incident, job 6000.
  EXPECT_EQ(e["incident_count"], 8 + 2 + 1 + 1);
}

// The training fleet: six jobs of 32 ranks whose rank 0 ran on the host
// with the failing GPU, their 31 other ranks giving up after it on other
// hosts; five jobs whose 16 ranks all hit one bug at once. Each job is one
// incident; the collateral ranks bring no finding and no host verdict; the
// bad GPU's host is named; the alike jobs say so.
TEST(Epi, TrainingFleetCountsIncidentsNotRanks) {
  Scenario scenario = TrainingScenario();
  const Scanned& s = Scan(scenario);
  const json& r = s.report;
  const PlantedPopulation &bad = scenario.populations[0], &alike = scenario.populations[1];
  uint64_t collateral_cores = s.fleet.per_population.at(bad.name + " (collateral ranks)");
  EXPECT_EQ(collateral_cores, bad.count * static_cast<uint64_t>(bad.ranks - 1));
  EXPECT_EQ(s.fleet.per_population.at(alike.name), alike.count * static_cast<uint64_t>(alike.ranks));
  EXPECT_EQ(r["incident_count"], bad.count + alike.count + scenario.populations[2].count + scenario.populations[3].count);
  EXPECT_EQ(CheckVerdictsAgree(r), std::set<std::string>{"eus-node-05"});
  auto signatures = Signatures(s);
  const json& gpu = ClusterOf(r, signatures.at(bad.name));
  const json& collateral = ClusterOf(r, signatures.at(bad.name + " (collateral ranks)"));
  const json& every = ClusterOf(r, signatures.at(alike.name));
  size_t bad_jobs = 0, alike_jobs = 0;
  for (const auto& i : r["incidents"]) {
    if (i["root"]["cluster"] == gpu["id"]) {
      ++bad_jobs;
      EXPECT_EQ(i["cores"], bad.ranks);
      EXPECT_EQ(i["collateral"], bad.ranks - 1);
      EXPECT_EQ(i["root"]["host"], "eus-node-05");
      EXPECT_EQ(i["root"]["rank"], 0);
    } else {
      ++alike_jobs;
      EXPECT_EQ(i["root"]["cluster"], every["id"]);
      EXPECT_EQ(i["cores"], alike.ranks);
      EXPECT_TRUE(i["alike"].get<bool>());
    }
  }
  EXPECT_EQ(bad_jobs, bad.count);
  EXPECT_EQ(alike_jobs, alike.count);
  EXPECT_EQ(gpu["incidents"], bad.count);
  EXPECT_EQ(every["incidents"], alike.count);
  EXPECT_EQ(collateral["count"], collateral_cores);
  EXPECT_TRUE(collateral["findings"].empty()) << collateral["findings"].dump();
  EXPECT_EQ(collateral["collateral_of"], gpu["id"]);
  EXPECT_EQ(collateral["collateral_reading"],
            "collateral of " + gpu["id"].get<std::string>() + " (rank 0 on host eus-node-05 died first)");
  // The same as a fact, from epi run here.
  auto here = EpiHere(s);
  ASSERT_TRUE(here);
  for (const auto& c : here->clusters) {
    if (c.signature != signatures.at(bad.name + " (collateral ranks)")) {
      EXPECT_FALSE(c.collateral) << c.id;
      continue;
    }
    ASSERT_TRUE(c.collateral);
    EXPECT_EQ(c.collateral->of, gpu["id"]);
    EXPECT_EQ(c.collateral->root_rank, 0);
    EXPECT_EQ(c.collateral->root_host, "eus-node-05");
  }
  // The alike jobs' onset is their first job's day, not the day the most
  // ranks crashed.
  EXPECT_EQ(every["onset"], every["first_seen"]);
  std::string reading = gpu["gpu_events"]["reading"];
  EXPECT_NE(reading.find("same GPU repeatedly"), std::string::npos) << reading;
}

class Cleanup : public ::testing::Environment {
 public:
  void TearDown() override { RemoveAll(Work()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

}  // namespace
}  // namespace coroner::testing

namespace coroner::testing {
namespace {

// One bug whose pointer is sometimes garbage and sometimes NULL: the same
// load in bad_pointer.c's `load`, run with and without a pointer argument
// (kernel cores, or gdb's). Its cores sign as bad-pointer or null-deref
// (gdb reads the same faulting pc in both), and epi makes one population of
// them with both syndromes counted; a NULL dereference elsewhere (null_deref.c's
// walk) stays a population of its own, and the dataset's signatures stay
// as the cores said.
TEST(Epi, APointerFaultIsOnePopulationWhateverItsPointerHeld) {
  std::string dir = Work() + "/pointer-faults";
  fs::create_directories(dir);
  const std::string bin = ZooDir() + "/bin/bad_pointer-O2";
  std::vector<std::string> cores;
  for (int i = 0; i < 5; ++i) {
    std::string arg = i < 2 ? "0" : "";
    std::string core = dir + "/bp-" + std::to_string(i) + ".core";
    if (!fs::exists(core)) {
      auto r = coroner::testing::Run("bash " + std::string(std::getenv("CORONER_SOURCE_DIR")) + "/tests/fixtures/make_core.sh " + bin +
                   " " + core + (arg.empty() ? "" : " " + arg) + " > /dev/null 2>&1");
      ASSERT_EQ(r.status, 0);
    }
    cores.push_back(core);
  }
  // gdb: the NULL and the garbage cores faulted at the same instruction
  // (the same function and offset: the loads are at other addresses).
  auto pc = [&](const std::string& core) {
    auto r = coroner::testing::Run("gdb -nx -batch -ex 'info symbol $pc' " + bin + " " + core + " 2>/dev/null | grep section");
    return r.out;
  };
  ASSERT_FALSE(pc(cores[0]).empty());
  ASSERT_EQ(pc(cores[0]), pc(cores[4]));
  std::string db = dir + "/d.db";
  fs::remove(db);
  std::string inputs;
  for (const auto& c : cores) inputs += c + " ";
  inputs += ZooDir() + "/cores/null_deref-O2.core";
  ASSERT_EQ(Coroner("scan --db " + db + " " + inputs).status, 0);
  auto stored = Coroner("query --json --db " + db + " \"SELECT signature, count(*) AS n FROM cores GROUP BY 1 ORDER BY 1\"");
  EXPECT_EQ(nlohmann::json::parse(stored.out),
            nlohmann::json::parse(R"([{"signature": "bad-pointer | load | main", "n": 3},
                                      {"signature": "null-deref | load | main", "n": 2},
                                      {"signature": "null-deref | walk | main", "n": 1}])"));
  auto e = Coroner("epi --json --db " + db);
  ASSERT_EQ(e.status, 0) << e.err;
  std::map<std::string, nlohmann::json> by_signature;
  const nlohmann::json report = nlohmann::json::parse(e.out);
  for (const auto& c : report["clusters"]) by_signature[c["signature"].get<std::string>()] = c;
  ASSERT_EQ(by_signature.size(), 2u) << e.out.substr(0, 2000);
  const auto& load = by_signature["bad-pointer | load | main"];
  EXPECT_EQ(load["count"], 5);
  EXPECT_EQ(load["syndrome"], "bad-pointer");
  EXPECT_EQ(load["syndromes"], nlohmann::json::parse(R"({"bad-pointer": 3, "null-deref": 2})"));
  const auto& walk = by_signature["null-deref | walk | main"];
  EXPECT_EQ(walk["count"], 1);
  EXPECT_TRUE(walk["syndromes"].is_null());
  auto text = Coroner("epi --db " + db);
  EXPECT_NE(text.out.find("syndromes: bad-pointer 3, null-deref 2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("null-deref | walk | main  1 core ("), std::string::npos) << text.out;
}

}  // namespace
}  // namespace coroner::testing

namespace coroner::testing {
namespace {

// P(X >= k) for X hypergeometric: n draws from `all`, `with` of them marked.
// Written here, apart from epi's statistics, as the test's own oracle.
double HypergeometricUpper(uint64_t k, uint64_t n, uint64_t with, uint64_t all) {
  auto log_choose = [](double a, double b) { return std::lgamma(a + 1) - std::lgamma(b + 1) - std::lgamma(a - b + 1); };
  double total = 0;
  for (uint64_t x = k; x <= std::min(n, with); ++x) {
    if (n - x > all - with) continue;
    total += std::exp(log_choose(double(with), double(x)) + log_choose(double(all - with), double(n - x)) -
                      log_choose(double(all), double(n)));
  }
  return std::min(1.0, total);
}

// Without an inventory, each cluster is judged against a reference that
// leaves out the other clusters' own causes: on every demo fleet that
// plants causes on attributes, the planted causes are found and the
// background populations get no finding (p_adj < 0.01), as with the
// inventory.
TEST(Epi, WithoutAnInventoryNoPopulationBorrowsAnothersCause) {
  for (const Scenario& scenario : {DemoScenario(), GpuScenario(), RegionScenario(), ExposureScenario()}) {
    SCOPED_TRACE(scenario.name);
    const Scanned& s = Scan(scenario);
    auto signatures = Signatures(s);
    for (const auto& p : scenario.populations) {
      const json& cluster = ClusterOf(s.cases, signatures.at(p.name));
      if (p.cause_attribute.empty()) {
        for (const auto& f : cluster["findings"])
          EXPECT_GE(f["p_adjusted"].get<double>(), 0.01) << p.name << ": " << f.dump();
      } else if (p.cause_attribute != HardwareErrorsKey(7)) {
        bool found = false;
        for (const auto& f : cluster["findings"])
          found |= f["attribute"] == p.cause_attribute && f["value"] == p.cause_value;
        EXPECT_TRUE(found) << p.name << ": " << cluster["findings"].dump();
      }
    }
  }
}

// The demo fleet's background return-to-null cluster on the kernel the
// kernel's own cluster left short: recomputed from the dataset, against all
// the other crashes (the old reference) it is significant; against the
// reference without that cluster it is not, and epi reports no finding.
TEST(Epi, TheReferenceLeavesOutTheKernelsOwnCluster) {
  const Scanned& s = Scan(DemoScenario());
  auto count = [&](const std::string& where) {
    auto q = Coroner("query --json --db " + s.db + " \"SELECT count(*) AS n FROM cores_with_attributes c WHERE status = 'ok' AND " + where + "\"");
    EXPECT_EQ(q.status, 0) << q.err;
    return json::parse(q.out)[0]["n"].get<uint64_t>();
  };
  const std::string kernel = "c.kernel = '6.1.0-25-cloud-amd64'";
  const std::string background = "c.syndrome = 'return-to-null'";
  const std::string kernels_own = "c.signature = 'null-deref | checksum | summarize | main'";
  uint64_t n = count(background), both = count(background + " AND " + kernel);
  uint64_t all = count("1"), with = count(kernel);
  uint64_t own = count(kernels_own), own_with = count(kernels_own + " AND " + kernel);
  ASSERT_GT(n, 0u);
  ASSERT_GT(own, 0u);
  EXPECT_EQ(own_with, 0u);  // the kernel's own cluster is on the other kernel only
  double old_p = HypergeometricUpper(both, n, with, all);
  double new_p = HypergeometricUpper(both, n, with - own_with, all - own);
  EXPECT_LT(old_p, 0.01) << both << " of " << n << " against " << with << " of " << all;
  EXPECT_GT(new_p, 0.05) << both << " of " << n << " against " << with - own_with << " of " << all - own;
  const json& c1 = ClusterOf(s.cases, "return-to-null");
  for (const auto& f : c1["findings"]) EXPECT_NE(f["attribute"], "kernel") << f.dump();
  // The kernel's own cluster keeps its cause.
  const json& c3 = ClusterOf(s.cases, "null-deref | checksum | summarize | main");
  bool kernel_cause = false;
  for (const auto& f : c3["findings"])
    kernel_cause |= f["attribute"] == "kernel" && f["value"] == "6.8.0-1021-azure" && f["p_adjusted"].get<double>() < 1e-6;
  EXPECT_TRUE(kernel_cause) << c3["findings"].dump();
}

}  // namespace
}  // namespace coroner::testing

namespace coroner::testing {
namespace {

// Without an inventory, the fleet-wide release the demo's population began
// with is named from the crashes themselves: none of its crashes among the
// M the fleet had before the release first appeared, against its share of
// the crashes after (recomputed here: (1 - s)^M). No population that began
// before a change, or without one, is said to begin with one.
TEST(Epi, WithoutAnInventoryTheCrashClockNamesTheRelease) {
  for (const Scenario& scenario : {DemoScenario(), GpuScenario(), RegionScenario(), ExposureScenario()}) {
    SCOPED_TRACE(scenario.name);
    const Scanned& s = Scan(scenario);
    auto signatures = Signatures(s);
    for (const auto& p : scenario.populations) {
      const json& cluster = ClusterOf(s.cases, signatures.at(p.name));
      const json& began = cluster["began_with"];
      if (!p.onset_cause) {
        // A kernel a population alone runs on may be what it began with; a background never is.
        if (p.cause_attribute.empty()) {
          EXPECT_TRUE(began.is_null()) << p.name << ": " << began.dump();
        }
        continue;
      }
      ASSERT_FALSE(began.is_null()) << p.name;
      EXPECT_EQ(began["attribute"], p.cause_attribute);
      EXPECT_EQ(began["value"], p.cause_value);
      EXPECT_EQ(began["clock"], "crashes");
      EXPECT_EQ(began["crashes_before"], 0);
      // The crashes before the value's first appearance, and the cluster's share after, from the dataset.
      auto q = Coroner("query --json --db " + s.db + " \"SELECT min(time) AS t FROM cores_with_attributes WHERE status = 'ok' AND \\\"" +
                       p.cause_attribute + "\\\" = '" + p.cause_value + "'\"");
      ASSERT_EQ(q.status, 0) << q.err;
      std::string appeared = json::parse(q.out)[0]["t"];
      auto n = [&](const std::string& where) {
        auto r = Coroner("query --json --db " + s.db + " \"SELECT count(*) AS n FROM cores WHERE status = 'ok' AND " + where + "\"");
        return json::parse(r.out)[0]["n"].get<uint64_t>();
      };
      uint64_t before = n("time < '" + appeared + "'");
      uint64_t mine_after = n("time >= '" + appeared + "' AND signature = '" + signatures.at(p.name) + "'");
      uint64_t after = n("time >= '" + appeared + "'");
      EXPECT_EQ(began["other_crashes_before"], before);
      EXPECT_EQ(began["crashes_after"], mine_after);
      double share = static_cast<double>(mine_after) / static_cast<double>(after);
      EXPECT_NEAR(std::log(began["p_value"].get<double>()), static_cast<double>(before) * std::log(1 - share), 1e-6);
      EXPECT_NE(began["reading"].get<std::string>().find("no inventory: judged against the other crashes"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace coroner::testing

namespace coroner::testing {
namespace {

// The demo fleet over many seeds, without its inventory (sidecars only):
// each seed deals the same populations to other hosts, days and values.
// Every planted cause is found on every seed, and a background population
// has a finding at adjusted p < 0.01 on no more seeds than that level
// allows (1% of 50: at most one). Against all the other crashes (the old
// reference) 63 background findings came out of these seeds.
TEST(Epi, OverManySeedsTheBackgroundBorrowsNothing) {
#if defined(__SANITIZE_ADDRESS__)
  const int kSeeds = 5;  // the sanitizers check the code; the statistics are checked without them
#else
  const int kSeeds = 50;
#endif
  size_t background_findings = 0, background_values = 0, seeds_with_findings = 0;
  std::vector<std::string> missed;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Scenario scenario = DemoScenario();
    scenario.seed = 1000 + static_cast<uint64_t>(seed);
    std::string dir = Work() + "/seeds/" + std::to_string(seed);
    fs::remove_all(dir);
    auto fleet = GenerateFleet(scenario, ZooDir() + "/cores", dir + "/fleet");
    ASSERT_TRUE(fleet.ok()) << fleet.error().message;
    ScanOptions scan;
    scan.inputs = {fleet->cores_dir};
    scan.db = dir + "/d.db";
    scan.jobs = 2;
    auto summary = RunScan(scan);
    ASSERT_TRUE(summary.ok()) << summary.error().message;
    auto ds = Dataset::OpenReadOnly(scan.db);
    ASSERT_TRUE(ds.ok());
    auto result = RunEpidemiology(*ds, EpiOptions{});
    ASSERT_TRUE(result.ok()) << result.error().message;
    // Each population's cluster: the one whose cores are its zoo program's.
    std::map<std::string, const Cluster*> of;
    for (const auto& p : scenario.populations) {
      std::string program = p.core.substr(0, p.core.find('-'));
      for (const auto& c : result->clusters) {
        auto q = ds->Query("SELECT count(*) FROM cores WHERE signature = '" + c.signature + "' AND exe LIKE '%/" +
                           p.core + "'");
        if (q.ok() && q->rows[0][0].integer == static_cast<int64_t>(c.count)) of[p.name] = &c;
      }
      ASSERT_TRUE(of.count(p.name)) << "seed " << seed << ": no cluster for " << p.name;
    }
    bool background_found = false;
    for (const auto& p : scenario.populations) {
      const Cluster& c = *of[p.name];
      if (p.cause_attribute.empty()) {
        // Its tested values: one per value of every attribute its cores carry.
        auto q = ds->Query("SELECT count(DISTINCT a.key || '=' || a.value) FROM attributes a JOIN cores c ON c.id = a.core "
                           "WHERE c.signature = '" + c.signature + "'");
        background_values += static_cast<size_t>(q->rows[0][0].integer);
        for (const auto& f : c.findings)
          if (f.p_adjusted < 0.01) {
            ++background_findings;
            background_found = true;
            std::printf("seed %d: background %s: %s = %s, p_adj %.2g\n", seed, p.name.c_str(), f.attribute.c_str(),
                        f.value.c_str(), f.p_adjusted);
          }
        continue;
      }
      // A cause on a key the sidecars do not give (the machine under a VM:
      // the inventory's) cannot be named without the inventory.
      auto given = ds->Query("SELECT count(*) FROM attributes WHERE key = '" + p.cause_attribute + "'");
      if (given.ok() && given->rows[0][0].integer == 0) continue;
      bool found = false;
      for (const auto& f : c.findings) found |= f.attribute == p.cause_attribute && f.value == p.cause_value;
      found |= c.began_with && c.began_with->attribute == p.cause_attribute && c.began_with->value == p.cause_value;
      if (!found) missed.push_back("seed " + std::to_string(seed) + ": " + p.name);
    }
    seeds_with_findings += background_found;
    fs::remove_all(dir);
  }
  EXPECT_TRUE(missed.empty()) << ::testing::PrintToString(missed);
  EXPECT_LE(seeds_with_findings, 1u) << background_findings << " background findings on " << seeds_with_findings
                                     << " of " << kSeeds << " seeds";
  std::printf("%zu background findings over %zu background values in %d seeds\n", background_findings,
              background_values, kSeeds);
}

}  // namespace
}  // namespace coroner::testing
