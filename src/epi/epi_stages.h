// What the stages of RunEpidemiology share (src/epi/epidemiology.cc runs
// them; population.cc, incidents.cc, clusters.cc and findings.cc hold
// them): the population as flat arrays of interned features, and each
// stage's result as a type of its own, which the next stages read and do
// not change. Internal to epi.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/expected.h"
#include "dataset/dataset.h"
#include "dataset/timestamps.h"
#include "epi/epidemiology.h"
#include "epi/exposure.h"
#include "text/string_map.h"

namespace coroner::epi_stages {

constexpr int64_t kDay = kSecondsPerDay;

// A whole decimal integer, or none.
inline std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

struct Threshold {
  int64_t seconds;
  const char* name;  // the cumulative attribute value
};
inline constexpr Threshold kUptime[] = {{3600, "<1h"}, {6 * 3600, "<6h"}, {kDay, "<1d"}, {2 * kDay, "<2d"}, {7 * kDay, "<7d"}};
inline constexpr Threshold kCpuTime[] = {{10, "<10s"}, {60, "<1m"}, {600, "<10m"}, {3600, "<1h"}};

// Interned attribute values ("key=value" features) and keys. A fleet's
// dataset has tens of millions of attribute rows and a few thousand
// distinct values: a value is found by its key's map without building a
// string (heterogeneous lookup).
struct Features {
  using Index = StringMap<uint32_t>;
  std::vector<std::string> keys;
  Index key_ids;
  std::vector<std::pair<uint32_t, std::string>> features;  // key id, value
  std::vector<Index> values;                               // by key id: value -> feature id

  uint32_t Key(std::string_view key) {
    if (auto it = key_ids.find(key); it != key_ids.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(keys.size());
    key_ids.emplace(std::string(key), id);
    keys.emplace_back(key);
    values.emplace_back();
    return id;
  }
  uint32_t Feature(uint32_t key, std::string_view value) {
    Index& index = values[key];
    if (auto it = index.find(value); it != index.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(features.size());
    index.emplace(std::string(value), id);
    features.emplace_back(key, std::string(value));
    return id;
  }
  std::optional<uint32_t> Find(std::string_view key, std::string_view value) const {
    auto k = key_ids.find(key);
    if (k == key_ids.end()) return std::nullopt;
    auto f = values[k->second].find(value);
    return f == values[k->second].end() ? std::nullopt : std::optional<uint32_t>(f->second);
  }
};

struct Crash {
  int64_t id = 0;
  std::optional<int64_t> time, uptime;
  uint32_t cluster = 0;
  uint32_t host = UINT32_MAX;  // feature id of host=..., for the heatmap and hardware events
  uint32_t machine = UINT32_MAX;  // feature id of machine=... (or physical_host=...), when a sidecar names it
  std::optional<int> pid;
  bool bit_flip = false, impossible_state = false;  // the core's derived attributes
  // A rank of a distributed job: its job (id, step, restart), its rank, and
  // whether it gave up because a peer did.
  uint32_t job = UINT32_MAX;       // index into Population::job_keys
  uint32_t launcher = UINT32_MAX;  // feature id of launcher=...
  std::optional<int64_t> rank, world_size;
  // The node its scheduler names (feature id of job_node=...): a core found
  // on another host only claims the job (its environment was copied, or lies).
  uint32_t job_node = UINT32_MAX;
  bool peer_failure = false;
  bool passive = false;   // an abort, an exception or a signal from outside: no fault of its own
  bool external = false;  // killed by another process
  // Stopped from outside without a fault of its own (killed by another
  // process, a live snapshot, a deadlock a watchdog ended): a rank of a
  // hang, when all of its incident's are. `wait` is where its thread
  // waited (its signature's frames), an index into Population::wait_keys.
  bool stopped = false;
  uint32_t wait = UINT32_MAX;
};


inline std::string Condition(const std::string& where) { return where.empty() ? "1" : "(" + where + ")"; }

// The parts of a core's job key, as its attributes name them (in any
// order): launcher, job_cluster, job_id, job_step, job_restart,
// elastic_restart. Slurm's job 1234 on two clusters, a torchrun run named
// "900 step 0" and Slurm's job 900 step 0, two elastic restarts of one
// Slurm job: each is a job of its own.
enum JobPart : size_t { kPartLauncher, kPartCluster, kPartId, kPartStep, kPartRestart, kPartElastic, kJobParts };
using JobParts = std::array<std::string, kJobParts>;

// The parts as one key, each length-prefixed: no value can run into the next.
std::string JobIdentityKey(const JobParts& p);

// "48213", "48213 step 0", "48213 step 0 restart 1 on cluster west"; empty
// without a job id. The launcher is shown beside it.
std::string JobKey(const JobParts& p);

// Features of each crash, in crash order, flat: crash i's are
// values[offsets[i] .. offsets[i + 1]). Ten million crashes with a few
// features each cost 4 bytes a feature, not a vector each.
struct FlatLists {
  std::vector<uint32_t> offsets{0}, values;
  void Close() { offsets.push_back(static_cast<uint32_t>(values.size())); }  // ends the next crash's list
  std::pair<const uint32_t*, const uint32_t*> Of(size_t i) const {
    return {values.data() + offsets[i], values.data() + offsets[i + 1]};
  }
};

struct Population {
  Features features;
  std::vector<Crash> crashes;           // in core id order
  FlatLists feature_lists;              // by crash
  std::vector<std::string> cluster_keys, cluster_syndromes;  // by Crash::cluster: its signature, its syndrome
  // by Crash::cluster: each syndrome's cores, when its cores have several
  // (a pointer fault whose pointer was NULL in some, garbage in others)
  std::vector<std::map<std::string, uint64_t>> cluster_syndrome_counts;
  std::vector<std::string> cluster_labels;  // by Crash::cluster: the rules' label that made it, or empty
  std::vector<std::string> job_keys;                         // by Crash::job
  std::vector<std::string> wait_keys;                        // by Crash::wait: "read | read_shard | load_batch"
  uint32_t k_exe = 0, k_build = 0;

  std::pair<const uint32_t*, const uint32_t*> FeaturesOf(size_t i) const { return feature_lists.Of(i); }
};

// Stage 2's result (incidents.cc).
struct Incidents {
  struct One {
    std::vector<uint32_t> crashes;  // in time order, untimed last
    uint32_t root = 0;
    bool alike = false;
    uint64_t collateral = 0;
    // A hang: every rank was stopped from outside or gave up after a peer
    // did. The stopped ranks grouped by where they waited: the largest
    // group waits for a peer, the others (`odd`, the root first) are where
    // the hang began; none when no group stands out.
    bool hang = false;
    std::vector<uint32_t> odd;
    uint32_t waiting = 0;               // crashes in the largest group
    uint32_t waiting_where = UINT32_MAX;  // its wait key
  };
  static constexpr uint32_t kAlone = UINT32_MAX;
  std::vector<One> list;            // the jobs' incidents: a core without a job is one alone, not listed
  uint64_t alone = 0;               // cores without a job, or contradicting theirs
  std::vector<uint32_t> of;         // per crash: its incident in `list`, or kAlone
  std::vector<uint8_t> counted;     // per crash: an observation of the statistics
  std::vector<uint8_t> collateral;  // per crash
  std::vector<uint8_t> hang;        // per crash: a rank of a hang incident
};

// Stage 3's result (clusters.cc).
struct Calendar {
  bool timed = false;
  int64_t min_day = 0, max_day = -1;
  size_t days = 0;
  std::optional<Exposure> exposure;
  std::vector<uint8_t> placed;                   // per crash: in a placement of its host (inventory)
  std::vector<uint8_t> rated, windowed;          // per feature: tested per host-day; within the window
  std::vector<int64_t> all_days;                 // crash days, sorted
  std::unordered_map<uint32_t, std::vector<int64_t>> days_with;  // windowed feature -> its crash days, sorted
  std::vector<uint64_t> total;                   // per feature: crashes with it
  std::vector<int64_t> first_time;               // per feature: its first crash's time
  uint64_t observations = 0;                     // crashes the statistics count (incidents)

  int64_t Begin() const { return min_day * kDay; }
  int64_t End() const { return (max_day + 1) * kDay; }
  // Crashes of a sorted list of days within [first, last].
  static uint64_t InWindow(const std::vector<int64_t>& sorted, int64_t first, int64_t last) {
    return static_cast<uint64_t>(std::upper_bound(sorted.begin(), sorted.end(), last) -
                                 std::lower_bound(sorted.begin(), sorted.end(), first));
  }
};

// Stage 4's result (clusters.cc).
struct Clusters {
  std::vector<std::vector<uint32_t>> members;  // by cluster key id: crash indices
  std::vector<size_t> order;                   // rank -> cluster key id
  struct Span {
    int64_t first = INT64_MAX, last = INT64_MIN;  // days with crashes; first > last when untimed
    int64_t onset = INT64_MIN;
    uint64_t timed = 0, placed = 0;               // observations with a time, in a placement
    uint64_t counted = 0;                         // observations (one per incident, collateral left out)
    bool active() const { return first <= last; }
  };
  std::vector<Span> spans;                     // by rank

  const std::vector<uint32_t>& Of(size_t rank) const { return members[order[rank]]; }
};

// One test of stage 5 (findings.cc).
struct Test {
  size_t cluster;        // rank
  uint32_t feature;
  uint64_t both;         // the cluster's cores with the value (in the window, when there is one)
  uint64_t in_cluster;   // every core of the cluster with the value
  double p;              // the one the family adjusts: p_rate when rated, else fisher
  double fisher;
  double min_p;          // the smallest p this test could give (Tarone)
  uint64_t n = 0, with = 0, all = 0;  // Fisher's table: cluster, value, population
  int64_t window_first = INT64_MIN, window_last = INT64_MIN;  // days, when restricted
  bool rated = false;
  double host_days = 0, rate = 0, rate_without = 0, p_rate = 1;
  std::vector<uint32_t> left_out;  // the clusters (ranks) Fisher's reference left out
};

// The clusters each attribute's reference leaves out, by attribute key
// (Features::keys' index), ranks sorted: a cluster with a strong finding
// on the attribute (its own cause), or on a host or machine (which fixes
// every attribute of its crashes), does not stand in for the others'
// baseline. Empty: every other crash is the reference.
using References = std::vector<std::vector<uint32_t>>;
// The p (adjusted) under which a finding makes its cluster a cause on its
// attribute, for the others' references.
inline constexpr double kStrongFinding = 0.01;
// Rounds of the fixed point: tests, findings, references, tests again.
inline constexpr int kReferenceRounds = 5;

// The stages, in the order RunEpidemiology runs them: each a function of
// the previous ones' results.
Expected<Population> LoadPopulation(Dataset& dataset, const EpiOptions& options, EpiResult& result);
Incidents FindIncidents(const Population& pop, const EpiOptions& options);
Calendar MakeCalendar(const Population& pop, const Incidents& incidents, const EpiOptions& options,
                      EpiResult& result);
Clusters MakeClusters(const Population& pop, const Incidents& incidents, const Calendar& cal,
                      const EpiOptions& options, EpiResult& result);
std::vector<Test> MakeTests(const Population& pop, const Incidents& incidents, const Calendar& cal,
                            const Clusters& clusters, const EpiOptions& options, const EpiResult& result,
                            const References& left_out);
// The references the strong findings among `tests` call for.
References ReferencesFrom(const std::vector<Test>& tests, const std::vector<double>& adjusted, const Population& pop);
std::vector<double> AdjustFamily(const std::vector<Test>& tests, const Population& pop, double alpha,
                                 EpiResult& result);
void AddFindings(const std::vector<Test>& tests, const std::vector<double>& adjusted, const Population& pop,
                 const Calendar& cal, const Clusters& clusters, const EpiOptions& options, EpiResult& result);
void ExplainFindings(const Population& pop, const Incidents& incidents, const Calendar& cal, const Clusters& clusters,
                     const EpiOptions& options, EpiResult& result);
void FindChangeOnsets(const Population& pop, const Incidents& incidents, const Calendar& cal, const Clusters& clusters,
                      const EpiOptions& options, EpiResult& result);
void ReadFindings(const Clusters& clusters, const EpiOptions& options, EpiResult& result);
void DescribeIncidents(Dataset& dataset, const Population& pop, const Incidents& incidents, const Clusters& clusters,
                       EpiResult& result);

}  // namespace coroner::epi_stages
