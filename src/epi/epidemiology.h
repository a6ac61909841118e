// The epidemiology of a dataset: which crashes are the same crash
// (clusters: one signature, grouped under its syndrome), when each began,
// and which attribute values each is over-represented on (findings, with
// Fisher's exact test and Benjamini-Hochberg over every test made).
//
// The input is a dataset `coroner scan` wrote; rules, a row filter and
// hardware events from kernel logs refine it. With an inventory of the
// hosts' placements, a value the inventory gives is tested against the
// population at risk (crashes per host-day with it vs without, an exact
// Poisson rate test) instead of the other crashes. Release, kernel and
// build values are tested within the cluster's active window: a crash that
// began after a fleet-wide rollout is on the new release by the calendar.
// Everything is computed in memory from two streamed queries, so a million
// cores take seconds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "dataset/dataset.h"
#include "dataset/metadata.h"
#include "epi/change_onset.h"
#include "epi/hardware_verdicts.h"
#include "epi/kernel_log.h"
#include "epi/readings.h"
#include "epi/rules.h"
#include "base/expected.h"

namespace coroner {

constexpr int kEpiJsonVersion = 1;

struct EpiOptions {
  std::string where;                     // an SQL condition over `cores`; empty for all
  Rules rules;                           // labels and exclusions, applied before clustering
  std::vector<HardwareEvent> hardware;   // from --kernel-log
  const Inventory* inventory = nullptr;  // --inventory: the population at risk
  int hardware_window_days = 7;          // "host had hardware errors in the N days before"
  int64_t incident_window_seconds = 900; // a job's crashes within this of its first are one incident
  size_t min_cluster_for_tests = 3;      // smaller clusters get no findings
  double report_p_adjusted = 0.05;       // findings kept in the result
  size_t max_findings = 20;              // per cluster
};

struct Finding {
  std::string attribute, value;
  uint64_t count = 0;          // cores of the cluster with the value (in the window, when there is one)
  uint64_t in_cluster = 0;     // every core of the cluster with the value
  double share = 0;            // count / cluster cores
  double baseline_share = 0;   // share of the reference's cores with the value
  // Fisher's reference: the crashes the cluster is compared with (the
  // others, less those of clusters that are causes on this attribute or
  // sit on one host or machine), and those clusters' ids.
  uint64_t reference = 0;
  std::vector<std::string> left_out;
  double lift = 0;             // share / baseline_share
  double p_value = 1;          // Fisher: the cluster against the other crashes (within `window_*` when set)
  double p_adjusted = 1;       // Benjamini-Hochberg, of p_rate when there is one, else of p_value
  // Against the population at risk, when the inventory gives the attribute:
  // the cluster's crashes per host-day with the value and without it, over
  // the cluster's active window, and the exact one-sided Poisson test.
  bool rated = false;
  double host_days = 0;        // with the value
  double rate = 0, rate_without = 0;
  double p_rate = 1;
  std::string window_from, window_to;  // days the test was restricted to, when it was
  std::optional<FindingReading> reading;  // the JSON's `flag`, in words
  bool suspect_hardware = false;  // the reading calls the hosts it names suspect hardware
  // The cluster's strongest finding, when it accounts for this one: tested
  // again within and outside that finding's value (Cochran-Mantel-Haenszel,
  // one-sided), this one is no longer significant. Empty when not explained.
  std::string explained_by_attribute, explained_by_value;
  double p_stratified = 1;     // that test's p, when it was made
};

struct Cluster {
  std::string id;              // "c1", "c2", ... by size
  std::string syndrome, signature;  // its cores' commonest
  // Each syndrome's cores, when they have several: one pointer fault whose
  // pointer was NULL in some cores and garbage in others (the same frames,
  // the same faulting instruction). Empty when they agree.
  std::map<std::string, uint64_t> syndromes;
  std::string label;           // the rule's label, when a rule named it
  uint64_t count = 0;
  double share = 0;
  std::string first_seen, last_seen, onset;  // days "YYYY-MM-DD"; empty without times
  // With an inventory: the change (release, kernel, driver, image) whose
  // arrival on the hosts the cluster began with, when one did.
  std::optional<ChangeOnset> began_with;
  std::map<std::string, uint64_t> daily;     // days with crashes only
  std::vector<Finding> findings;             // by p_adjusted, smallest first
  std::vector<uint64_t> uptime_histogram;    // over UptimeBucketNames(); cores with an uptime
  std::map<std::string, uint64_t> hosts;     // cores per host
  std::string example;                       // one core's path
  // With an inventory, over the cluster's active window: the hosts at risk,
  // their host-days, and those of each host the cluster crashed on.
  bool exposed = false;
  uint64_t hosts_at_risk = 0;
  double host_days = 0;
  std::map<std::string, double> host_days_per_host;
  GpuEvents gpu_events;  // the GPUs and CPUs its crashes ran on (kernel log lines joined to them)
  // Incidents: the crash events its cores belong to (a job's ranks that
  // died together are one); the statistics count one observation each.
  uint64_t incidents = 0;
  // When every core of it is collateral of other crashes (a rank that gave
  // up because another died): the cluster most of their incidents' first
  // crashes are in, and one of those first crashes, its rank and host.
  struct Collateral {
    std::string of;                    // that cluster's id
    std::optional<int64_t> root_rank;
    std::string root_host;             // empty when the core has none
  };
  std::optional<Collateral> collateral;
};

// One crash event of a distributed job: the cores of one job (job id, step
// and restart) whose crash times lie within the incident window of the
// first. Only incidents of two or more cores are listed.
struct Incident {
  std::string job;              // "48213 step 0", "48213 step 0 restart 1"
  std::string launcher;
  uint64_t cores = 0;
  std::string first_crash;      // the root's time; empty when untimed
  // The root: the first crash (on a tie within a second, one that is not an
  // abort, an exception or a signal from outside).
  std::string root_path, root_host, root_signature, root_cluster;
  std::optional<int64_t> root_rank;
  uint64_t collateral = 0;      // cores that gave up after it, or because of it
  bool alike = false;           // every rank crashed alike: deterministic, not one bad node
  // A hang: every rank was stopped from outside (a watchdog, the
  // scheduler, a snapshot) and none crashed first. The ranks that waited
  // elsewhere than the largest group are the odd ranks, the root the
  // first of them; none when no group stands out.
  enum class Kind { kCrash, kHang };
  Kind kind = Kind::kCrash;
  struct Rank {
    std::optional<int64_t> rank;
    std::string host;
    std::string where;  // its thread's frames, innermost first: "read | read_shard | load_batch"
  };
  std::vector<Rank> odd_ranks;  // at most 16 listed
  uint64_t odd_count = 0;
  uint64_t waiting = 0;         // ranks in the largest group
  std::string waiting_where;
};

struct EpiResult {
  uint64_t cores = 0;          // the population the clusters partition
  uint64_t excluded = 0;       // removed by exclusion rules
  uint64_t errors = 0;         // rows that could not be analyzed (status 'error'), not in the population
  uint64_t untimed = 0;        // cores without a crash time
  uint64_t tests = 0;          // tests in the BH family (Fisher, or Poisson per host-day)
  uint64_t untestable = 0;     // tests left out of it: they could never be significant (Tarone)
  std::optional<int64_t> first_day, last_day;  // days since the epoch (UTC); none without times
  std::vector<Cluster> clusters;  // largest first
  std::vector<HostVerdict> hosts;  // hosts with hardware evidence, highest score first
  std::vector<Incident> incidents; // of two or more cores, by first crash
  uint64_t incident_count = 0;     // every incident, one-core ones too: the observations
  uint64_t joined_lines = 0;       // kernel log lines joined to the core of their crash
  std::vector<std::string> warnings;
};

// The disjoint uptime buckets of the histograms: "<1h", "1h-6h", ...
const std::vector<std::string>& UptimeBucketNames();

Expected<EpiResult> RunEpidemiology(Dataset& dataset, const EpiOptions& options);

}  // namespace coroner
