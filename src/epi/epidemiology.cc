#include "epi/epidemiology.h"

#include "dataset/attribute_keys.h"


#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>
#include <unordered_map>

#include "dataset/timestamps.h"
#include "diagnose/diagnosis.h"
#include "epi/exposure.h"
#include "epi/statistics.h"
#include "processor/signature.h"
#include "text/string_map.h"

namespace coroner {
namespace {

constexpr int64_t kDay = kSecondsPerDay;

// Keys that are per-core facts, not populations a cluster can sit on.
// The core's own hardware evidence (possible_bit_flips, impossible_state,
// gpu_state) is not tested either: it describes how a crash looks, which the
// signature already separates, and would only explain the host a cluster
// is on away. The hardware verdicts weigh it per host.
std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

struct Threshold {
  int64_t seconds;
  const char* name;  // the cumulative attribute value
};
constexpr Threshold kUptime[] = {{3600, "<1h"}, {6 * 3600, "<6h"}, {kDay, "<1d"}, {2 * kDay, "<2d"}, {7 * kDay, "<7d"}};
constexpr Threshold kCpuTime[] = {{10, "<10s"}, {60, "<1m"}, {600, "<10m"}, {3600, "<1h"}};

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
};

std::string Condition(const std::string& where) { return where.empty() ? "1" : "(" + where + ")"; }

// The parts of a core's job key, as its attributes name them (in any
// order): launcher, job_cluster, job_id, job_step, job_restart,
// elastic_restart. Slurm's job 1234 on two clusters, a torchrun run named
// "900 step 0" and Slurm's job 900 step 0, two elastic restarts of one
// Slurm job: each is a job of its own.
enum JobPart : size_t { kPartLauncher, kPartCluster, kPartId, kPartStep, kPartRestart, kPartElastic, kJobParts };
using JobParts = std::array<std::string, kJobParts>;

// The parts as one key, each length-prefixed: no value can run into the next.
std::string JobIdentityKey(const JobParts& p) {
  std::string key;
  for (size_t i = 0; i < p.size(); ++i) {
    // A missing restart count is restart 0.
    std::string_view v = (i == kPartRestart || i == kPartElastic) && p[i] == "0" ? "" : std::string_view(p[i]);
    key += std::to_string(v.size()) + ":";
    key += v;
  }
  return key;
}

// "48213", "48213 step 0", "48213 step 0 restart 1 on cluster west"; empty
// without a job id. The launcher is shown beside it.
std::string JobKey(const JobParts& p) {
  if (p[kPartId].empty()) return "";
  std::string key = p[kPartId];
  if (!p[kPartStep].empty()) key += " step " + p[kPartStep];
  if (!p[kPartRestart].empty() && p[kPartRestart] != "0") key += " restart " + p[kPartRestart];
  if (!p[kPartElastic].empty() && p[kPartElastic] != "0") key += " elastic restart " + p[kPartElastic];
  if (!p[kPartCluster].empty()) key += " on cluster " + p[kPartCluster];
  return key;
}

// ---------------------------------------------------------------------------
// Stage 1, load: the population's cores, their cluster keys and features.

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
  std::vector<std::string> cluster_keys, cluster_syndromes;  // by Crash::cluster
  std::vector<std::string> cluster_labels;  // by Crash::cluster: the rules' label that made it, or empty
  std::vector<std::string> job_keys;                         // by Crash::job
  uint32_t k_exe = 0, k_build = 0;

  std::pair<const uint32_t*, const uint32_t*> FeaturesOf(size_t i) const { return feature_lists.Of(i); }
};

// The SQL condition of the population (status ok, not a log line's twin,
// --where, no exclusion rule) and the expression of a core's label.
struct PopulationQuery {
  std::string unlinked, population, label;
};

PopulationQuery MakePopulationQuery(Dataset& dataset, const EpiOptions& options) {
  PopulationQuery q;
  // A log line linked to the core of the same crash is that core's event.
  // Most datasets have no such link: asked once (the key's index), not
  // once per core.
  auto linked = dataset.Query("SELECT 1 FROM attributes WHERE key = 'same_crash_as' LIMIT 1");
  q.unlinked = linked.ok() && linked->rows.empty()
                   ? "1"
                   : "NOT EXISTS (SELECT 1 FROM attributes x WHERE x.core = cores.id AND x.key = 'same_crash_as')";
  q.population = "status = 'ok' AND " + q.unlinked + " AND " + Condition(options.where);
  q.label = "NULL";
  for (const auto& rule : options.rules.rules) {
    std::string cond = Condition(rule.where);
    if (rule.kind == Rule::Kind::kExclude) {
      q.population += " AND NOT ifnull(" + cond + ", 0)";
    } else {
      std::string quoted = "'";
      for (char c : rule.name) quoted += c == '\'' ? std::string("''") : std::string(1, c);
      q.label = q.label == "NULL" ? "CASE" : q.label.substr(0, q.label.size() - 4);
      q.label += " WHEN " + cond + " THEN " + quoted + "' END";
    }
  }
  return q;
}

// Signatures made again with the rules' extra skip-list, from the frames of
// each crashing thread (in the order the unwinder found them) that the
// processor made its signature from (SignatureFrames); empty without one.
Expected<std::unordered_map<int64_t, std::string>> Resign(Dataset& dataset, const std::string& population,
                                                          const Rules& rules) {
  std::unordered_map<int64_t, std::string> resigned;
  if (rules.skip.empty() && rules.skip_prefixes.empty()) return resigned;
  SkipList skip = SkipList::Default();
  skip.exact.insert(skip.exact.end(), rules.skip.begin(), rules.skip.end());
  skip.prefixes.insert(skip.prefixes.end(), rules.skip_prefixes.begin(), rules.skip_prefixes.end());
  int64_t current = -1;
  std::string syndrome;
  bool reraised = false;
  std::vector<StoredFrame> frames;
  auto flush = [&]() {
    if (current >= 0) resigned[current] = MakeSignature(syndrome, SignatureFrames(frames, reraised), skip);
    frames.clear();
  };
  auto f = dataset.ForEachRow(
      "SELECT f.core, c.syndrome, c.real_signal IS NOT NULL, f.function, f.module, f.trust FROM frames f JOIN threads "
      "t ON t.core = f.core AND t.thread = f.thread AND t.crashing = 1 JOIN cores c ON c.id = f.core WHERE f.core IN "
      "(SELECT id FROM cores WHERE " + population + ") ORDER BY f.core, f.\"index\"",
      [&](const QueryRow& r) {
        if (r.Integer(0) != current) {
          flush();
          current = r.Integer(0);
          syndrome = std::string(r.IsNull(1) ? "unknown" : r.Text(1));
          reraised = r.Integer(2) != 0;
        }
        std::optional<FrameTrust> trust = FrameTrustFromName(r.Text(5));
        frames.push_back({std::string(r.Text(3)), std::string(r.Text(4)), trust.value_or(FrameTrust::kCfi)});
        return true;
      });
  if (!f.ok()) return MakeError(f.error().kind, "reading frames: " + f.error().message);
  flush();
  return resigned;
}

// The cores: each one's cluster key (its label, its signature made again,
// or its signature) and the features its row gives (uptime and CPU-time
// buckets, build-id, executable), into `derived`.
// The columns ReadCores selects, in the SELECT's order: each is read by its
// name, never by a position counted by hand.
namespace Col {
enum : int { kId, kTime, kUptime, kCpuTime, kSyndrome, kSignature, kExe, kBuildId, kLabel, kPid };
}

Status ReadCores(Dataset& dataset, const PopulationQuery& query,
                 const std::unordered_map<int64_t, std::string>& resigned, Population& pop, FlatLists& derived) {
  Features& features = pop.features;
  std::unordered_map<std::string, uint32_t> cluster_ids;
  std::vector<StringMap<uint64_t>> syndrome_votes;
  uint32_t k_uptime = features.Key("uptime_bucket"), k_cpu = features.Key("cpu_time_bucket");
  pop.k_build = features.Key("build_id");
  pop.k_exe = features.Key("exe");
  std::vector<uint32_t> uptime_features, cpu_features;
  for (const auto& t : kUptime) uptime_features.push_back(features.Feature(k_uptime, t.name));
  uptime_features.push_back(features.Feature(k_uptime, ">=7d"));
  for (const auto& t : kCpuTime) cpu_features.push_back(features.Feature(k_cpu, t.name));
  cpu_features.push_back(features.Feature(k_cpu, ">=1h"));
  std::string key;
  auto rows = dataset.ForEachRow(
      "SELECT id, time, uptime, cpu_time, syndrome, signature, exe, build_id, " + query.label +
          ", pid FROM cores WHERE " + query.population + " ORDER BY id",  // in Col's order
      [&](const QueryRow& r) {
        Crash c;
        c.id = r.Integer(Col::kId);
        if (!r.IsNull(Col::kTime)) c.time = ParseIso8601(std::string(r.Text(Col::kTime)));
        if (!r.IsNull(Col::kUptime)) c.uptime = r.Integer(Col::kUptime);
        if (!r.IsNull(Col::kPid)) c.pid = static_cast<int>(r.Integer(Col::kPid));
        std::string_view syndrome = r.IsNull(Col::kSyndrome) ? "unknown" : r.Text(Col::kSyndrome);
        auto again = resigned.find(c.id);
        if (!r.IsNull(Col::kLabel)) key.assign("label: ").append(r.Text(Col::kLabel));
        else if (again != resigned.end()) key = again->second;
        else key = r.IsNull(Col::kSignature) ? syndrome : r.Text(Col::kSignature);
        auto [it, added] = cluster_ids.try_emplace(key, static_cast<uint32_t>(pop.cluster_keys.size()));
        if (added) {
          pop.cluster_keys.push_back(key);
          pop.cluster_labels.emplace_back(r.IsNull(Col::kLabel) ? std::string_view() : r.Text(Col::kLabel));
          syndrome_votes.emplace_back();
        }
        c.cluster = it->second;
        auto& votes = syndrome_votes[c.cluster];
        auto vote = votes.find(syndrome);
        if (vote == votes.end()) vote = votes.emplace(syndrome, 0).first;
        ++vote->second;
        std::optional<Syndrome> label = SyndromeFromName(syndrome);
        c.external = label == Syndrome::kExternalSignal;
        c.passive = c.external || label == Syndrome::kAbort || label == Syndrome::kAbortAssert ||
                    label == Syndrome::kUncaughtException;
        // The buckets are cumulative: an uptime of 30 min is <1h, <6h, ...
        if (c.uptime) {
          for (size_t b = 0; b < std::size(kUptime); ++b)
            if (*c.uptime < kUptime[b].seconds) derived.values.push_back(uptime_features[b]);
          if (*c.uptime >= kUptime[std::size(kUptime) - 1].seconds) derived.values.push_back(uptime_features.back());
        }
        if (!r.IsNull(Col::kCpuTime)) {
          double cpu = r.Real(Col::kCpuTime);
          for (size_t b = 0; b < std::size(kCpuTime); ++b)
            if (cpu < static_cast<double>(kCpuTime[b].seconds)) derived.values.push_back(cpu_features[b]);
          if (cpu >= 3600) derived.values.push_back(cpu_features.back());
        }
        if (!r.IsNull(Col::kBuildId)) derived.values.push_back(features.Feature(pop.k_build, r.Text(Col::kBuildId)));
        if (!r.IsNull(Col::kExe)) derived.values.push_back(features.Feature(pop.k_exe, r.Text(Col::kExe)));
        derived.Close();
        pop.crashes.push_back(c);
        return true;
      });
  if (!rows.ok()) return MakeError(rows.error().kind, "reading cores: " + rows.error().message);
  // A cluster's syndrome is the one most of its cores have.
  pop.cluster_syndromes.resize(pop.cluster_keys.size());
  for (size_t i = 0; i < pop.cluster_keys.size(); ++i) {
    uint64_t best = 0;
    for (const auto& [s, n] : syndrome_votes[i])
      if (n > best || (n == best && s < pop.cluster_syndromes[i])) best = n, pop.cluster_syndromes[i] = s;
  }
  return Ok{};
}

// The attributes, merged into the crashes by id (both are in id order),
// with the row's own features and `hw_errors_Nd` from the kernel logs.
Status ReadAttributes(Dataset& dataset, const EpiOptions& options, FlatLists derived, Population& pop) {
  Features& features = pop.features;
  std::vector<Crash>& crashes = pop.crashes;
  std::vector<KeyRole> roles;  // by key id
  size_t at = 0;
  FlatLists attrs;
  attrs.offsets.reserve(crashes.size() + 1);
  std::unordered_map<size_t, JobParts> job_parts;  // only the cores of jobs pay for them
  auto a = dataset.ForEachRow(
      "SELECT core, key, value FROM attributes WHERE value IS NOT NULL ORDER BY core", [&](const QueryRow& r) {
        int64_t core = r.Integer(0);
        while (at < crashes.size() && crashes[at].id < core) {
          attrs.Close();
          ++at;
        }
        if (at == crashes.size()) return false;
        if (crashes[at].id != core) return true;
        uint32_t key = features.Key(r.Text(1));
        while (roles.size() <= key) roles.push_back(RoleOfKey(features.keys[roles.size()]));
        std::string_view value = r.Text(2);
        Crash& crash = crashes[at];
        switch (roles[key]) {
          case KeyRole::kBitFlip: crash.bit_flip = true; return true;
          // systemd-coredump's pid (its xattr or file name) is the kernel's,
          // as the kernel log prints it; the core's own pid is the one
          // inside the process's pid namespace.
          case KeyRole::kPid:
            if (auto pid = ParseInt(value); pid && *pid > 0 && *pid < (1 << 30)) crash.pid = static_cast<int>(*pid);
            return true;
          case KeyRole::kImpossibleState: crash.impossible_state = true; return true;
          case KeyRole::kJobId: job_parts[at][kPartId] = value; return true;
          case KeyRole::kJobStep: job_parts[at][kPartStep] = value; return true;
          case KeyRole::kJobRestart: job_parts[at][kPartRestart] = value; return true;
          case KeyRole::kJobCluster: job_parts[at][kPartCluster] = value; return true;
          case KeyRole::kElasticRestart: job_parts[at][kPartElastic] = value; return true;
          case KeyRole::kRank: crash.rank = ParseInt(value); return true;
          case KeyRole::kPeerFailure: crash.peer_failure = true; return true;
          case KeyRole::kUntested: return true;
          case KeyRole::kHost: crash.host = features.Feature(key, value); break;
          case KeyRole::kMachine: crash.machine = features.Feature(key, value); break;
          case KeyRole::kLauncher:
            crash.launcher = features.Feature(key, value);
            job_parts[at][kPartLauncher] = value;
            break;
          case KeyRole::kWorldSize:
            if (auto n = ParseInt(value); n && *n > 0) crash.world_size = n;
            break;
          case KeyRole::kJobNode: crash.job_node = features.Feature(key, value); break;
          case KeyRole::kTested: break;
        }
        attrs.values.push_back(features.Feature(key, value));
        return true;
      });
  if (!a.ok()) return MakeError(a.error().kind, "reading attributes: " + a.error().message);
  while (attrs.offsets.size() < crashes.size() + 1) attrs.Close();
  std::unordered_map<std::string, uint32_t> job_ids;
  // In core order: the jobs' numbering, and so the incidents' order on a
  // tie, does not depend on a hash.
  std::vector<std::pair<size_t, JobParts>> jobs(std::make_move_iterator(job_parts.begin()),
                                                std::make_move_iterator(job_parts.end()));
  std::sort(jobs.begin(), jobs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [i, parts] : jobs) {
    if (parts[kPartId].empty()) continue;
    auto [it, added] = job_ids.try_emplace(JobIdentityKey(parts), static_cast<uint32_t>(pop.job_keys.size()));
    if (added) pop.job_keys.push_back(JobKey(parts));
    crashes[i].job = it->second;
  }
  // Hardware events: per host, sorted times (an unknown time counts for
  // every crash on the host).
  std::unordered_map<std::string, std::vector<int64_t>> events;
  std::unordered_map<std::string, bool> untimed;
  for (const auto& e : options.hardware) {
    if (!IsHardwareError(e)) continue;
    if (e.time) events[e.host].push_back(*e.time);
    else untimed[e.host] = true;
  }
  for (auto& [h, t] : events) std::sort(t.begin(), t.end());
  uint32_t k_hw = features.Key(HardwareErrorsKey(options.hardware_window_days));
  int64_t window = options.hardware_window_days * kDay;
  FlatLists& out = pop.feature_lists;
  out.offsets.reserve(crashes.size() + 1);
  out.values.reserve(derived.values.size() + attrs.values.size() + (options.hardware.empty() ? 0 : crashes.size()));
  for (size_t i = 0; i < crashes.size(); ++i) {
    auto [own, own_end] = derived.Of(i);
    out.values.insert(out.values.end(), own, own_end);
    // One value per core per attribute: a sidecar or systemd-coredump's
    // xattrs may name `exe` or `build_id` too, which the core's row gives
    // already (and the core's own value wins).
    auto [from, to] = attrs.Of(i);
    for (const uint32_t* f = from; f != to; ++f) {
      uint32_t key = features.features[*f].first;
      bool from_core = (key == pop.k_exe || key == pop.k_build) &&
                       std::any_of(own, own_end, [&](uint32_t d) { return features.features[d].first == key; });
      if (!from_core) out.values.push_back(*f);
    }
    if (!options.hardware.empty() && crashes[i].host != UINT32_MAX) {
      const std::string& host = features.features[crashes[i].host].second;
      bool hit = untimed.count(host) > 0;
      auto it = events.find(host);
      if (!hit && it != events.end() && crashes[i].time) {
        auto lo = std::lower_bound(it->second.begin(), it->second.end(), *crashes[i].time - window);
        hit = lo != it->second.end() && *lo <= *crashes[i].time;
      }
      // Only "yes" is tested: "no" would be the same test, mirrored.
      if (hit) out.values.push_back(features.Feature(k_hw, "yes"));
    }
    out.Close();
  }
  return Ok{};
}

Expected<Population> LoadPopulation(Dataset& dataset, const EpiOptions& options, EpiResult& result) {
  PopulationQuery query = MakePopulationQuery(dataset, options);
  auto q = dataset.Query("SELECT (SELECT count(*) FROM cores WHERE status <> 'ok' AND " + Condition(options.where) +
                         "), (SELECT count(*) FROM cores WHERE status = 'ok' AND " + query.unlinked + " AND " +
                         Condition(options.where) + ")");
  if (!q.ok()) return MakeError(q.error().kind, "--where: " + q.error().message);
  result.errors = static_cast<uint64_t>(q->rows[0][0].integer);
  uint64_t selected = static_cast<uint64_t>(q->rows[0][1].integer);
  auto resigned = Resign(dataset, query.population, options.rules);
  if (!resigned.ok()) return resigned.error();
  Population pop;
  // Sized once: ten million crashes grown by doubling would hold two
  // copies at the last step.
  pop.crashes.reserve(selected);
  FlatLists derived;  // per crash, features from the core row
  derived.offsets.reserve(selected + 1);
  if (auto r = ReadCores(dataset, query, *resigned, pop, derived); !r.ok()) return r.error();
  result.cores = pop.crashes.size();
  result.excluded = selected - std::min<uint64_t>(selected, result.cores);
  if (auto r = ReadAttributes(dataset, options, std::move(derived), pop); !r.ok()) return r.error();
  return pop;
}

// ---------------------------------------------------------------------------
// Stage 2, incidents: one crash of a distributed job leaves a core on every
// rank; the ranks that gave up after it are not independent observations
// (pseudo-replication). An incident is a job's cores (its launcher, cluster,
// job id, step and restarts) within the incident window of its first
// crash, each rank at most once and no more ranks than the world size: a
// core claiming a rank the incident holds already (a copied or forged
// environment, a second run under the same id) cuts it at its largest
// pause (SplitIntoIncidents), so an early impostor neither becomes the
// root nor splits the job's incident. A core
// without a job is an incident of its own, and so is a core found on
// another host than its scheduler names (where the job's other cores are
// found on theirs). Another executable is no
// contradiction: one job may run several programs (Slurm's --multi-prog,
// heterogeneous jobs, a parameter server beside its workers). Its root is the first crash that faulted on its own (not a
// rank that gave up because a peer did, nor one killed from outside, when
// the incident has another); within a second of it, one that is not an
// abort, an exception or a signal from outside wins, then the lowest rank.
// The others are collateral when they gave up because a peer did
// (peer_failure), were killed from outside, or crashed after the root.
// When every core crashed alike (one cluster), the incident is alike:
// deterministic, no collateral. The statistics count the root, and the
// cores that are neither collateral nor alike.

struct Incidents {
  struct One {
    std::vector<uint32_t> crashes;  // in time order, untimed last
    uint32_t root = 0;
    bool alike = false;
    uint64_t collateral = 0;
  };
  static constexpr uint32_t kAlone = UINT32_MAX;
  std::vector<One> list;            // the jobs' incidents: a core without a job is one alone, not listed
  uint64_t alone = 0;               // cores without a job, or contradicting theirs
  std::vector<uint32_t> of;         // per crash: its incident in `list`, or kAlone
  std::vector<uint8_t> counted;     // per crash: an observation of the statistics
  std::vector<uint8_t> collateral;  // per crash
};

constexpr int64_t kClockPrecision = 1;  // seconds: crash times from mtime or sidecars
constexpr size_t kMaxListedIncidents = 1000;  // in EpiResult::incidents (all are counted)

void JudgeIncident(const std::vector<Crash>& crashes, Incidents::One& inc, Incidents& out) {
  // A rank that gave up because a peer did, or was killed, yields the root
  // to a crash of its own kind: a big faulting rank's core may be written
  // long after its peers' watchdogs fired.
  auto yields = [&](uint32_t i) { return crashes[i].peer_failure || crashes[i].external; };
  bool any_own = !std::all_of(inc.crashes.begin(), inc.crashes.end(), yields);
  auto candidate = [&](uint32_t i) { return !any_own || !yields(i); };
  auto better_root = [&](uint32_t a, uint32_t b) {
    const Crash &x = crashes[a], &y = crashes[b];
    if (x.passive != y.passive) return !x.passive;
    if (x.rank.has_value() != y.rank.has_value()) return x.rank.has_value();
    if (x.rank && *x.rank != *y.rank) return *x.rank < *y.rank;
    return a < b;
  };
  inc.root = *std::find_if(inc.crashes.begin(), inc.crashes.end(), candidate);
  const Crash& first = crashes[inc.root];
  for (uint32_t i : inc.crashes) {
    if (!candidate(i)) continue;
    const Crash& c = crashes[i];
    bool tie = first.time ? c.time && *c.time - *first.time <= kClockPrecision : !c.time;
    if (tie && better_root(i, inc.root)) inc.root = i;
  }
  const Crash& root = crashes[inc.root];
  inc.alike = inc.crashes.size() >= 2 && std::all_of(inc.crashes.begin(), inc.crashes.end(), [&](uint32_t i) {
                return crashes[i].cluster == root.cluster;
              });
  for (uint32_t i : inc.crashes) {
    if (i == inc.root) continue;
    const Crash& c = crashes[i];
    bool after = c.time && root.time && *c.time > *root.time;
    if (inc.alike) {
      out.counted[i] = 0;
    } else if (c.peer_failure || c.external || after) {
      out.collateral[i] = 1;
      out.counted[i] = 0;
      ++inc.collateral;
    }
  }
}

// A host name's first label: "gpu-01.cluster.local" is "gpu-01".
std::string_view ShortHost(std::string_view host) { return host.substr(0, host.find('.')); }

// The largest of a list of gaps over a range, the later one on a tie: a
// segment tree, so that a job of a million cores splits in n log n.
class LargestGap {
 public:
  explicit LargestGap(std::vector<int64_t> gaps) : n_(gaps.size()), tree_(2 * gaps.size()) {
    for (size_t i = 0; i < n_; ++i) tree_[n_ + i] = {gaps[i], i};
    for (size_t i = n_; i-- > 1;) tree_[i] = std::max(tree_[2 * i], tree_[2 * i + 1]);
  }
  // The index of the largest gap in [lo, hi].
  size_t In(size_t lo, size_t hi) const {
    std::pair<int64_t, size_t> best{INT64_MIN, hi};
    for (size_t l = lo + n_, r = hi + n_ + 1; l < r; l /= 2, r /= 2) {
      if (l & 1) best = std::max(best, tree_[l++]);
      if (r & 1) best = std::max(best, tree_[--r]);
    }
    return best.second;
  }

 private:
  size_t n_;
  std::vector<std::pair<int64_t, size_t>> tree_;
};

// A job's cores (in time order, untimed last) cut into incidents, as
// [from, to) ranges of `seq`. An incident ends where the window from its
// first crash does; and where a core would hold a rank twice, or more
// ranks than its world size, the incident is cut at the largest pause
// between its crashes since that rank's earlier core (since its start): a
// job's ranks crash together, and an impostor or an earlier run stands
// apart in time.
std::vector<std::pair<size_t, size_t>> SplitIntoIncidents(const std::vector<Crash>& crashes,
                                                          const std::vector<uint32_t>& seq, int64_t window) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t m = seq.size();
  if (m == 0) return out;
  std::vector<int64_t> gaps(m, 0);
  std::vector<size_t> ranked(m + 1, 0);  // ranked[j]: cores with a rank among seq[0, j)
  for (size_t j = 0; j < m; ++j) {
    const Crash& c = crashes[seq[j]];
    if (j > 0 && c.time && crashes[seq[j - 1]].time) gaps[j] = *c.time - *crashes[seq[j - 1]].time;
    ranked[j + 1] = ranked[j] + c.rank.has_value();
  }
  LargestGap largest(std::move(gaps));
  std::unordered_map<int64_t, size_t> last_at;  // a rank's latest core in seq
  if (crashes[seq[0]].rank) last_at[*crashes[seq[0]].rank] = 0;
  size_t begin = 0;
  for (size_t j = 1; j < m; ++j) {
    const Crash& c = crashes[seq[j]];
    const Crash& first = crashes[seq[begin]];
    bool together = first.time ? c.time && *c.time - *first.time <= window : !c.time;
    if (!together) {
      out.emplace_back(begin, j);
      begin = j;
    } else if (c.rank) {
      std::optional<size_t> since;
      if (auto it = last_at.find(*c.rank); it != last_at.end() && it->second >= begin) since = it->second;
      else if (c.world_size && static_cast<int64_t>(ranked[j] - ranked[begin]) >= *c.world_size) since = begin;
      if (since) {
        size_t cut = largest.In(*since + 1, j);
        out.emplace_back(begin, cut);
        begin = cut;
      }
    }
    if (c.rank) last_at[*c.rank] = j;
  }
  out.emplace_back(begin, m);
  return out;
}

Incidents FindIncidents(const Population& pop, const EpiOptions& options) {
  Incidents out;
  const auto& crashes = pop.crashes;
  uint32_t n = static_cast<uint32_t>(crashes.size());
  out.of.assign(n, Incidents::kAlone);
  out.counted.assign(n, 1);
  out.collateral.assign(n, 0);
  std::map<uint32_t, std::vector<uint32_t>> by_job;
  for (uint32_t i = 0; i < n; ++i)
    if (crashes[i].job != UINT32_MAX) by_job[crashes[i].job].push_back(i);
  auto earlier = [&](uint32_t a, uint32_t b) {
    const Crash &x = crashes[a], &y = crashes[b];
    if (x.time.has_value() != y.time.has_value()) return x.time.has_value();
    if (x.time && *x.time != *y.time) return *x.time < *y.time;
    return a < b;
  };
  const auto& names = pop.features.features;
  for (auto& [key, list] : by_job) {
    // A site may name its nodes for the scheduler otherwise than their
    // hosts (Slurm's NodeName and NodeHostname, a container's HOSTNAME):
    // a host is foreign only where most of the job's cores are found on
    // the node their scheduler names.
    auto known = [&](const Crash& c) { return c.host != UINT32_MAX && c.job_node != UINT32_MAX; };
    auto foreign = [&](const Crash& c) {
      return ShortHost(names[c.host].second) != ShortHost(names[c.job_node].second);
    };
    size_t named = 0, on_their_node = 0;
    for (uint32_t i : list)
      if (known(crashes[i])) ++named, on_their_node += !foreign(crashes[i]);
    bool hosts_agree = on_their_node * 2 > named;
    auto contradicts = [&](const Crash& c) { return hosts_agree && known(c) && foreign(c); };
    std::sort(list.begin(), list.end(), earlier);
    std::vector<uint32_t> seq;
    for (uint32_t i : list)
      if (!contradicts(crashes[i])) seq.push_back(i);
    for (const auto& [from, to] : SplitIntoIncidents(crashes, seq, options.incident_window_seconds)) {
      Incidents::One inc;
      inc.crashes.assign(seq.begin() + static_cast<std::ptrdiff_t>(from), seq.begin() + static_cast<std::ptrdiff_t>(to));
      for (uint32_t i : inc.crashes) out.of[i] = static_cast<uint32_t>(out.list.size());
      out.list.push_back(std::move(inc));
    }
  }
  for (uint32_t i = 0; i < n; ++i) out.alone += out.of[i] == Incidents::kAlone;
  for (auto& inc : out.list) JudgeIncident(crashes, inc, out);
  return out;
}

// ---------------------------------------------------------------------------
// Stage 3, the calendar: the days the dataset covers, the population at risk
// on them, and when each value appeared.

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

Calendar MakeCalendar(const Population& pop, const Incidents& incidents, const EpiOptions& options,
                      EpiResult& result) {
  Calendar cal;
  const auto& crashes = pop.crashes;
  int64_t min_day = INT64_MAX, max_day = INT64_MIN;
  for (const auto& c : crashes) {
    if (!c.time) {
      ++result.untimed;
      continue;
    }
    int64_t d = DayOf(*c.time);
    min_day = std::min(min_day, d);
    max_day = std::max(max_day, d);
  }
  cal.timed = min_day <= max_day;
  // A dataset spanning more than ten years has a bad clock somewhere; the
  // daily series is capped rather than sized by it.
  if (cal.timed && max_day - min_day > 3660) {
    result.warnings.push_back("crash times span more than ten years; days before " + FormatDay(max_day - 3660) +
                              " are left out of the daily counts");
    min_day = max_day - 3660;
  }
  if (cal.timed) {
    result.first_day = min_day, result.last_day = max_day;
    cal.min_day = min_day, cal.max_day = max_day;
    cal.days = static_cast<size_t>(max_day - min_day + 1);
  }
  // The population at risk: host-days from the inventory over the days the
  // dataset covers, and which crashes fall in a placement of their host.
  const auto& features = pop.features;
  cal.placed.assign(crashes.size(), 0);
  if (options.inventory && cal.timed) {
    cal.exposure.emplace(*options.inventory, cal.Begin(), cal.End());
    for (size_t i = 0; i < crashes.size(); ++i)
      if (crashes[i].time && crashes[i].host != UINT32_MAX)
        cal.placed[i] = cal.exposure->Placed(features.features[crashes[i].host].second, *crashes[i].time);
  }
  size_t n_features = features.features.size();
  cal.rated.assign(n_features, 0);
  cal.windowed.assign(n_features, 0);
  for (size_t f = 0; f < n_features; ++f) {
    const std::string& key = features.keys[features.features[f].first];
    cal.rated[f] = cal.exposure && cal.exposure->Describes(key);
    cal.windowed[f] = IsWindowedKey(key);
  }
  // Crash days, all and per windowed value, sorted: crashes in a window by
  // two binary searches. Feature totals and when each value first appeared.
  // All of the observations only (incidents).
  cal.total.assign(n_features, 0);
  cal.first_time.assign(n_features, INT64_MAX);
  for (size_t i = 0; i < crashes.size(); ++i) {
    if (!incidents.counted[i]) continue;
    ++cal.observations;
    auto [from, to] = pop.FeaturesOf(i);
    for (const uint32_t* f = from; f != to; ++f) {
      ++cal.total[*f];
      if (crashes[i].time) cal.first_time[*f] = std::min(cal.first_time[*f], *crashes[i].time);
    }
    if (!crashes[i].time) continue;
    int64_t d = std::max(DayOf(*crashes[i].time), cal.min_day);
    cal.all_days.push_back(d);
    for (const uint32_t* f = from; f != to; ++f)
      if (cal.windowed[*f]) cal.days_with[*f].push_back(d);
  }
  std::sort(cal.all_days.begin(), cal.all_days.end());
  for (auto& [f, d] : cal.days_with) std::sort(d.begin(), d.end());
  return cal;
}

// ---------------------------------------------------------------------------
// Stage 4, clusters: crashes by cluster, largest first, each with its days,
// onset, hosts, uptimes and population at risk.

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

Clusters MakeClusters(const Population& pop, const Incidents& incidents, const Calendar& cal,
                      const EpiOptions& options, EpiResult& result) {
  Clusters out;
  const auto& crashes = pop.crashes;
  size_t n = pop.cluster_keys.size();
  out.members.resize(n);
  for (size_t i = 0; i < crashes.size(); ++i) out.members[crashes[i].cluster].push_back(static_cast<uint32_t>(i));
  out.order.resize(n);
  std::iota(out.order.begin(), out.order.end(), 0);
  std::sort(out.order.begin(), out.order.end(), [&](size_t a, size_t b) {
    if (out.members[a].size() != out.members[b].size()) return out.members[a].size() > out.members[b].size();
    return pop.cluster_keys[a] < pop.cluster_keys[b];
  });
  out.spans.resize(n);
  std::map<std::pair<int64_t, int64_t>, double> window_days;  // host-days per window, computed once
  std::vector<uint32_t> last_cluster(incidents.list.size(), UINT32_MAX);  // per job incident: the last rank it was counted in
  for (size_t rank = 0; rank < n; ++rank) {
    size_t k = out.order[rank];
    const auto& m = out.members[k];
    Clusters::Span& span = out.spans[rank];
    Cluster cl;
    cl.id = "c" + std::to_string(rank + 1);
    cl.syndrome = pop.cluster_syndromes[k];
    cl.signature = pop.cluster_keys[k];
    cl.label = pop.cluster_labels[k];
    cl.count = m.size();
    cl.share = static_cast<double>(m.size()) / static_cast<double>(crashes.size());
    cl.uptime_histogram.assign(UptimeBucketNames().size(), 0);
    std::vector<uint64_t> daily(cal.days, 0);
    // The onset is a statistic: it counts incidents (each on its first
    // core's day), while the daily counts shown are the cores.
    std::vector<uint64_t> daily_incidents(cal.days, 0);
    uint64_t n_incidents = 0;
    for (uint32_t i : m) {
      const Crash& c = crashes[i];
      uint32_t incident = incidents.of[i];
      bool first_of_incident = incident == Incidents::kAlone || last_cluster[incident] != rank;
      if (incident != Incidents::kAlone) last_cluster[incident] = static_cast<uint32_t>(rank);
      n_incidents += first_of_incident;
      if (first_of_incident && c.time)
        ++daily_incidents[static_cast<size_t>(std::max(DayOf(*c.time), cal.min_day) - cal.min_day)];
      if (incidents.counted[i]) {
        ++span.counted;
        span.timed += c.time.has_value();
        span.placed += cal.placed[i];
      }
      if (c.time) {
        int64_t d = std::max(DayOf(*c.time), cal.min_day);
        ++daily[static_cast<size_t>(d - cal.min_day)];
        span.first = std::min(span.first, d);
        span.last = std::max(span.last, d);
      }
      if (c.uptime) {
        size_t b = 0;
        while (b < std::size(kUptime) && *c.uptime >= kUptime[b].seconds) ++b;
        ++cl.uptime_histogram[b];
      }
      if (c.host != UINT32_MAX) ++cl.hosts[pop.features.features[c.host].second];
    }
    cl.incidents = n_incidents;
    if (span.active()) {
      cl.first_seen = FormatDay(span.first);
      cl.last_seen = FormatDay(span.last);
      for (size_t d = 0; d < cal.days; ++d)
        if (daily[d]) cl.daily[FormatDay(cal.min_day + static_cast<int64_t>(d))] = daily[d];
      auto onset = FindOnset(daily_incidents);
      // The change point cannot precede the first crash.
      span.onset = std::max(onset ? cal.min_day + static_cast<int64_t>(onset->day) : span.first, span.first);
      cl.onset = FormatDay(span.onset);
    }
    if (span.counted >= options.min_cluster_for_tests && cal.exposure && span.active()) {
      int64_t from = span.first * kDay, to = (span.last + 1) * kDay;
      auto [it, added] = window_days.try_emplace({span.first, span.last}, 0.0);
      if (added) it->second = cal.exposure->Days(from, to);
      cl.exposed = true;
      cl.host_days = it->second;
      cl.hosts_at_risk = cal.exposure->Hosts(from, to);
      for (const auto& [h, c] : cl.hosts) cl.host_days_per_host[h] = cal.exposure->HostDays(h, from, to);
    }
    result.clusters.push_back(std::move(cl));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Stage 5, tests: each value each cluster's cores have, against the other
// crashes (Fisher; within the cluster's window for the calendar's values)
// or, with an inventory, against the host-days at risk.

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
};

std::vector<Test> MakeTests(const Population& pop, const Incidents& incidents, const Calendar& cal,
                            const Clusters& clusters, const EpiOptions& options, const EpiResult& result) {
  std::vector<Test> tests;
  const auto& features = pop.features;
  size_t n_features = features.features.size();
  std::vector<uint64_t> counter(n_features, 0), timed_counter(n_features, 0), placed_counter(n_features, 0);
  std::vector<uint32_t> touched;
  uint64_t all_crashes = cal.observations;
  for (size_t rank = 0; rank < clusters.order.size(); ++rank) {
    const Clusters::Span& span = clusters.spans[rank];
    if (span.counted < options.min_cluster_for_tests) continue;
    for (uint32_t i : clusters.Of(rank)) {
      if (!incidents.counted[i]) continue;
      auto [from, to] = pop.FeaturesOf(i);
      for (const uint32_t* f = from; f != to; ++f) {
        if (counter[*f]++ == 0) touched.push_back(*f);
        if (pop.crashes[i].time) ++timed_counter[*f];
        if (cal.placed[i]) ++placed_counter[*f];
      }
    }
    for (uint32_t f : touched) {
      // A program (or build) whose cores are exactly this cluster's is
      // what the cluster is, not something it correlates with: the
      // signature's frames are that program's code.
      uint32_t key = features.features[f].first;
      if ((key == pop.k_exe || key == pop.k_build) && counter[f] == span.counted && cal.total[f] == span.counted)
        continue;
      Test t{rank, f, counter[f], counter[f], 1, 1, 1};
      uint64_t n = span.counted, with = cal.total[f], all = all_crashes;
      if (cal.windowed[f] && span.active()) {
        t.both = timed_counter[f];
        n = span.timed;
        with = Calendar::InWindow(cal.days_with.at(f), span.first, span.last);
        all = Calendar::InWindow(cal.all_days, span.first, span.last);
        t.window_first = span.first, t.window_last = span.last;
      }
      t.n = n, t.with = with, t.all = all;
      t.fisher = t.p = FisherGreater(t.both, n, with, all);
      t.min_p = FisherGreater(std::min(n, with), n, with, all);
      if (cal.rated[f] && span.active() && span.placed > 0) {
        int64_t from = span.first * kDay, to = (span.last + 1) * kDay;
        double at_risk = result.clusters[rank].host_days;
        double with_days = cal.exposure->Days(features.keys[key], features.features[f].second, from, to);
        // A value the inventory never gives in the window (the sidecar
        // says otherwise) has no exposure to compare with: Fisher decides.
        if (with_days > 0 && at_risk > 0) {
          uint64_t a = placed_counter[f];
          double q = std::min(1.0, with_days / at_risk);
          t.rated = true;
          t.host_days = with_days;
          t.rate = static_cast<double>(a) / with_days;
          t.rate_without = at_risk > with_days ? static_cast<double>(span.placed - a) / (at_risk - with_days) : 0;
          t.p = t.p_rate = BinomialGreater(a, span.placed, q);
          t.min_p = BinomialGreater(span.placed, span.placed, q);
          t.window_first = span.first, t.window_last = span.last;
        }
      }
      tests.push_back(t);
    }
    for (uint32_t f : touched) counter[f] = timed_counter[f] = placed_counter[f] = 0;
    touched.clear();
  }
  return tests;
}

// ---------------------------------------------------------------------------
// Stage 6, the family: Tarone's cut, then Benjamini-Hochberg gated per
// attribute of each cluster; the findings worth reporting.

// The adjusted p of each test (1 for those left out of the family).
std::vector<double> AdjustFamily(const std::vector<Test>& tests, const Population& pop, double alpha,
                                 EpiResult& result) {
  // Tarone: a test whose smallest attainable p (every core of the cluster
  // with the value, or every core with the value in the cluster) is above
  // alpha/K can never be significant in a family of K; counting it would only
  // weaken the others. The family is the tests able to reach alpha/K for the
  // smallest K at which at most K tests can; the adjustment runs over those
  // alone.
  std::vector<double> sorted_min;
  for (const auto& t : tests) sorted_min.push_back(t.min_p);
  std::sort(sorted_min.begin(), sorted_min.end());
  // able(K), the tests that can reach alpha/K, falls as K grows; the first
  // K with able(K) <= K exists (K = the number of tests at the latest).
  double cut = -1;
  for (size_t k = 1; k <= sorted_min.size(); ++k) {
    double level = alpha / static_cast<double>(k);
    auto able = static_cast<size_t>(std::upper_bound(sorted_min.begin(), sorted_min.end(), level) - sorted_min.begin());
    if (able <= k) {
      cut = level;
      break;
    }
  }
  std::vector<size_t> family;
  for (size_t i = 0; i < tests.size(); ++i)
    if (tests[i].min_p <= cut) family.push_back(i);
  result.tests = family.size();
  result.untestable = tests.size() - family.size();
  std::vector<double> p(family.size());
  std::vector<size_t> attribute_of(family.size());
  std::map<std::pair<size_t, uint32_t>, size_t> attribute_ids;
  for (size_t i = 0; i < family.size(); ++i) {
    const Test& t = tests[family[i]];
    p[i] = t.p;
    auto key = std::make_pair(t.cluster, pop.features.features[t.feature].first);
    attribute_of[i] = attribute_ids.try_emplace(key, attribute_ids.size()).first->second;
  }
  std::vector<double> family_adjusted = FamilyBenjaminiHochberg(p, attribute_of, alpha);
  std::vector<double> adjusted(tests.size(), 1.0);
  for (size_t i = 0; i < family.size(); ++i) adjusted[family[i]] = family_adjusted[i];
  return adjusted;
}

void AddFindings(const std::vector<Test>& tests, const std::vector<double>& adjusted, const Population& pop,
                 const Calendar& cal, const Clusters& clusters, const EpiOptions& options, EpiResult& result) {
  const auto& features = pop.features;
  for (size_t i = 0; i < tests.size(); ++i) {
    if (adjusted[i] > options.report_p_adjusted) continue;
    const Test& t = tests[i];
    Finding f;
    f.attribute = features.keys[features.features[t.feature].first];
    f.value = features.features[t.feature].second;
    f.count = t.both;
    f.in_cluster = t.in_cluster;
    f.share = t.n ? static_cast<double>(t.both) / static_cast<double>(t.n) : 0;
    f.baseline_share = t.all ? static_cast<double>(t.with) / static_cast<double>(t.all) : 0;
    f.lift = f.baseline_share > 0 ? f.share / f.baseline_share : 0;
    f.p_value = t.fisher;
    f.p_adjusted = adjusted[i];
    f.rated = t.rated;
    f.host_days = t.host_days;
    f.rate = t.rate;
    f.rate_without = t.rate_without;
    f.p_rate = t.p_rate;
    if (t.window_first != INT64_MIN) f.window_from = FormatDay(t.window_first), f.window_to = FormatDay(t.window_last);
    // The first appearance of the value, for "began with".
    int64_t onset = clusters.spans[t.cluster].onset;
    if (cal.first_time[t.feature] != INT64_MAX && onset != INT64_MIN) {
      int64_t appeared = DayOf(cal.first_time[t.feature]);
      if (IsReleaseKey(f.attribute) && f.share >= 0.9 && std::llabs(appeared - onset) <= 1)
        f.reading = reading::BeganWith{};
    }
    result.clusters[t.cluster].findings.push_back(std::move(f));
  }
  for (auto& cl : result.clusters) {
    std::stable_sort(cl.findings.begin(), cl.findings.end(), [](const Finding& a, const Finding& b) {
      if (a.p_adjusted != b.p_adjusted) return a.p_adjusted < b.p_adjusted;
      return a.count > b.count;
    });
    if (cl.findings.size() > options.max_findings) cl.findings.resize(options.max_findings);
  }
}

// ---------------------------------------------------------------------------
// Stage 7, explanations: findings the strongest one of their cluster
// explains (host => sku, a machine => its region). Each later finding is
// tested again in two strata, the cores with the strongest finding's value
// and those without; when that test is not significant at the level
// findings are kept at, the finding is marked as explained by it. Only the
// features the findings name are indexed, so the pass costs their cores,
// not the fleet's.

void ExplainFindings(const Population& pop, const Incidents& incidents, const Calendar& cal, const Clusters& clusters,
                     const EpiOptions& options, EpiResult& result) {
  const auto& features = pop.features;
  std::vector<int32_t> slot(features.features.size(), -1);
  std::vector<uint32_t> needed;
  auto feature_of = [&](const Finding& f) { return *features.Find(f.attribute, f.value); };
  for (const auto& cl : result.clusters)
    if (cl.findings.size() > 1)
      for (const auto& f : cl.findings) {
        uint32_t id = feature_of(f);
        if (slot[id] < 0) slot[id] = static_cast<int32_t>(needed.size()), needed.push_back(id);
      }
  if (needed.empty()) return;
  std::vector<std::vector<uint32_t>> cores_with(needed.size());  // crash indices, ascending
  for (size_t i = 0; i < pop.crashes.size(); ++i) {
    if (!incidents.counted[i]) continue;
    auto [from, to] = pop.FeaturesOf(i);
    for (const uint32_t* f = from; f != to; ++f)
      if (slot[*f] >= 0) cores_with[static_cast<size_t>(slot[*f])].push_back(static_cast<uint32_t>(i));
  }
  for (size_t rank = 0; rank < result.clusters.size(); ++rank) {
    Cluster& cl = result.clusters[rank];
    if (cl.findings.size() < 2) continue;
    uint32_t cluster_key = static_cast<uint32_t>(clusters.order[rank]);
    const Finding& strongest = cl.findings[0];
    const auto& with_s = cores_with[static_cast<size_t>(slot[feature_of(strongest)])];
    uint64_t cluster_with_s = strongest.in_cluster;
    for (size_t j = 1; j < cl.findings.size(); ++j) {
      Finding& f = cl.findings[j];
      const auto& with_f = cores_with[static_cast<size_t>(slot[feature_of(f)])];
      uint64_t cluster_with_f = f.in_cluster;
      // Cores with both values, and those of them in the cluster: the
      // shorter list looked up in the longer.
      const auto& small = with_s.size() < with_f.size() ? with_s : with_f;
      const auto& large = with_s.size() < with_f.size() ? with_f : with_s;
      uint64_t both_values = 0, both_in_cluster = 0;
      for (uint32_t i : small) {
        if (!std::binary_search(large.begin(), large.end(), i)) continue;
        ++both_values;
        both_in_cluster += pop.crashes[i].cluster == cluster_key;
      }
      Stratum in{both_in_cluster, cluster_with_s, both_values, with_s.size()};
      Stratum out{cluster_with_f - both_in_cluster, clusters.spans[rank].counted - cluster_with_s,
                  with_f.size() - both_values, cal.observations - with_s.size()};
      f.p_stratified = MantelHaenszelGreater({in, out});
      // Judged at the finding's own rank in the family: scaled by the
      // factor the adjustment gave its p (one host of the 20 a bad SKU
      // spans is not a second cause because its stratified p is 0.01).
      double own_p = f.rated ? f.p_rate : f.p_value;
      double factor = own_p > 0 ? std::max(1.0, f.p_adjusted / own_p) : 1.0;
      if (f.p_stratified * factor > options.report_p_adjusted) {
        f.explained_by_attribute = strongest.attribute;
        f.explained_by_value = strongest.value;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Stage 8, onsets that come with a change: for each cluster, the values of
// the calendar's attributes (release, kernel, ...) that nearly all of its
// placed crashes carry, tested as the change the cluster began with
// (epi/change_onset.h). Bonferroni over every such test; the strongest that
// passes both questions is the cluster's.

void FindChangeOnsets(const Population& pop, const Incidents& incidents, const Calendar& cal, const Clusters& clusters,
                      const EpiOptions& options, EpiResult& result) {
  if (!cal.exposure) return;
  std::vector<std::pair<size_t, ChangeOnset>> tested;  // cluster rank, test
  for (size_t rank = 0; rank < clusters.order.size(); ++rank) {
    if (clusters.spans[rank].counted < options.min_cluster_for_tests) continue;
    uint64_t n_placed = 0;
    std::unordered_map<uint32_t, std::pair<uint64_t, int64_t>> carried;  // feature -> crashes, first time
    for (uint32_t i : clusters.Of(rank)) {
      if (!cal.placed[i] || !incidents.counted[i]) continue;
      ++n_placed;
      auto [from, to] = pop.FeaturesOf(i);
      for (const uint32_t* f = from; f != to; ++f) {
        if (!cal.windowed[*f] || !cal.rated[*f]) continue;
        auto [it, added] = carried.try_emplace(*f, 0, *pop.crashes[i].time);
        ++it->second.first;
        it->second.second = std::min(it->second.second, *pop.crashes[i].time);
      }
    }
    for (const auto& [f, seen] : carried) {
      if (seen.first * 10 < n_placed * 9) continue;
      const auto& feature = pop.features.features[f];
      auto o = TestChangeOnset(*cal.exposure, pop.features.keys[feature.first], feature.second, cal.Begin(),
                               cal.End(), n_placed - seen.first, seen.first, seen.second);
      if (o) tested.emplace_back(rank, std::move(*o));
    }
  }
  for (auto& [rank, o] : tested) {
    o.p_adjusted = std::min(1.0, o.p_value * static_cast<double>(tested.size()));
    if (o.p_adjusted > options.report_p_adjusted || o.p_lag < kMinOnsetLag) continue;
    auto& best = result.clusters[rank].began_with;
    if (!best || o.p_adjusted < best->p_adjusted ||
        (o.p_adjusted == best->p_adjusted && o.attribute + o.value < best->attribute + best->value))
      best = o;
  }
}

// ---------------------------------------------------------------------------
// Stage 9, readings: the findings' plain-English flags, strongest first;
// the uptime reading goes on the tightest bound the whole cluster is under.

void ReadFindings(const Clusters& clusters, const EpiOptions& options, EpiResult& result) {
  const std::string hw = HardwareErrorsKey(options.hardware_window_days);
  for (size_t rank = 0; rank < result.clusters.size(); ++rank) {
    Cluster& cl = result.clusters[rank];
    bool uptime_flagged = false;
    // "Suspect hardware" is a strong word: it needs at least 5 cores on at
    // least 2 days (3 crashes of one afternoon on one host are not a bad
    // machine). Below that, the plainer readings apply.
    bool hardware_support = clusters.spans[rank].counted >= kMinVerdictCrashes && cl.daily.size() >= kMinVerdictDays;
    uint64_t with_uptime = 0;
    for (auto n : cl.uptime_histogram) with_uptime += n;
    for (auto& f : cl.findings) {
      if (!f.explained_by_attribute.empty()) {
        f.reading = reading::ExplainedBy{f.explained_by_attribute, f.explained_by_value};
        continue;
      }
      if (f.reading || f.p_adjusted > 0.01) continue;
      if (f.attribute == "uptime_bucket") {
        // The buckets are cumulative ("<1h" is in "<6h"): the first one the
        // whole cluster is under is the tightest.
        const Threshold* bound = nullptr;
        for (const auto& t : kUptime)
          if (f.value == t.name) bound = &t;
        if (!uptime_flagged && bound && with_uptime > 0 && f.count == with_uptime) {
          f.reading = reading::NeverUpLonger{bound->seconds};
          uptime_flagged = true;
        }
      } else if (f.attribute == hw && f.value == "yes" && hardware_support) {
        f.reading = reading::OnHostsWithHardwareErrors{f.share, options.hardware_window_days};
        f.suspect_hardware = true;
      } else if (PlaceOfKey(f.attribute) != KeyPlace::kNone && f.share >= 0.5 && hardware_support) {
        f.reading = reading::OnOneMachine{f.share};
        f.suspect_hardware = true;
      } else if (f.share >= 0.999) {
        f.reading = reading::OnlyOn{};
      } else if (f.share >= 0.5 && f.lift >= 1.5) {
        std::optional<double> ratio;
        if (f.rated && f.rate_without > 0) ratio = f.rate / f.rate_without;
        f.reading = reading::MostlyOn{f.share, f.baseline_share, ratio};
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Stage 10, hardware: the hosts' and GPUs' verdicts, from the cores' own
// evidence, the kernel logs' lines joined to them and the findings that
// call machines suspect.

void JudgeClusterHardware(const Population& pop, const Incidents& incidents, const Clusters& clusters,
                          const EpiOptions& options, EpiResult& result) {
  size_t n = clusters.order.size();
  std::vector<size_t> rank_of(n);
  for (size_t rank = 0; rank < n; ++rank) rank_of[clusters.order[rank]] = rank;
  std::vector<CrashFacts> facts;
  facts.reserve(pop.crashes.size());
  for (size_t i = 0; i < pop.crashes.size(); ++i) {
    const Crash& c = pop.crashes[i];
    CrashFacts f;
    f.counted = incidents.counted[i];
    if (c.host != UINT32_MAX) f.host = pop.features.features[c.host].second;
    if (c.machine != UINT32_MAX) f.machine = pop.features.features[c.machine].second;
    f.time = c.time;
    f.uptime = c.uptime;
    f.pid = c.pid;
    f.cluster = rank_of[c.cluster];
    f.bit_flip = c.bit_flip;
    f.impossible_state = c.impossible_state;
    f.gpu_fault = SyndromeFromName(result.clusters[f.cluster].syndrome) == Syndrome::kGpuFault;
    facts.push_back(std::move(f));
  }
  VerdictOptions verdict;
  verdict.inventory = options.inventory;
  verdict.hardware_window_days = options.hardware_window_days;
  for (size_t rank = 0; rank < n; ++rank)
    for (const auto& f : result.clusters[rank].findings)
      if (f.suspect_hardware)
        verdict.findings.push_back({rank, f.attribute, f.value, *f.reading, f.p_adjusted, f.in_cluster});
  HardwareVerdicts hw = JudgeHardware(facts, options.hardware, n, verdict);
  result.hosts = std::move(hw.hosts);
  result.joined_lines = hw.joined_lines;
  for (size_t rank = 0; rank < n; ++rank) result.clusters[rank].gpu_events = std::move(hw.clusters[rank]);
}

// ---------------------------------------------------------------------------
// Stage 11, incidents in words: the listed incidents (two cores or more),
// and the clusters made only of collateral cores.

void DescribeIncidents(Dataset& dataset, const Population& pop, const Incidents& incidents, const Clusters& clusters,
                       EpiResult& result) {
  result.incident_count = incidents.alone + incidents.list.size();
  size_t n = clusters.order.size();
  std::vector<size_t> rank_of(n);
  for (size_t rank = 0; rank < n; ++rank) rank_of[clusters.order[rank]] = rank;
  auto host_of = [&](const Crash& c) { return c.host == UINT32_MAX ? std::string() : pop.features.features[c.host].second; };
  // A cluster of collateral cores only: the cluster their roots are in.
  for (size_t rank = 0; rank < n; ++rank) {
    const auto& m = clusters.Of(rank);
    if (clusters.spans[rank].counted > 0) continue;
    std::map<size_t, std::pair<uint64_t, uint32_t>> roots;  // root's cluster rank -> cores, one root
    for (uint32_t i : m) {
      if (!incidents.collateral[i]) continue;
      uint32_t root = incidents.list[incidents.of[i]].root;
      auto& r = roots[rank_of[pop.crashes[root].cluster]];
      if (r.first++ == 0) r.second = root;
    }
    if (roots.empty()) continue;
    auto top = std::max_element(roots.begin(), roots.end(),
                                [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
    const Crash& root = pop.crashes[top->second.second];
    result.clusters[rank].collateral = Cluster::Collateral{result.clusters[top->first].id, root.rank, host_of(root)};
  }
  std::vector<const Incidents::One*> listed;
  for (const auto& inc : incidents.list)
    if (inc.crashes.size() >= 2) listed.push_back(&inc);
  auto time_of = [&](const Incidents::One* inc) { return pop.crashes[inc->root].time.value_or(INT64_MAX); };
  std::stable_sort(listed.begin(), listed.end(),
                   [&](const auto* a, const auto* b) { return time_of(a) < time_of(b); });
  for (const Incidents::One* inc : listed) {
    if (result.incidents.size() >= kMaxListedIncidents) break;
    const Crash& root = pop.crashes[inc->root];
    Incident out;
    out.job = root.job == UINT32_MAX ? std::string() : pop.job_keys[root.job];
    if (root.launcher != UINT32_MAX) out.launcher = pop.features.features[root.launcher].second;
    out.cores = inc->crashes.size();
    if (root.time) out.first_crash = FormatIso8601(*root.time);
    out.root_host = host_of(root);
    out.root_rank = root.rank;
    const Cluster& cl = result.clusters[rank_of[root.cluster]];
    out.root_cluster = cl.id;
    out.root_signature = cl.signature;
    out.collateral = inc->collateral;
    out.alike = inc->alike;
    auto q = dataset.Query("SELECT path FROM cores WHERE id = " + std::to_string(root.id));
    if (q.ok() && !q->rows.empty()) out.root_path = q->rows[0][0].text;
    result.incidents.push_back(std::move(out));
  }
}

// One example core per cluster, for the reader to open.
void AddExamples(Dataset& dataset, const Population& pop, const Clusters& clusters, EpiResult& result) {
  for (size_t rank = 0; rank < clusters.order.size() && rank <= 200; ++rank) {  // a report lists no more
    int64_t id = pop.crashes[clusters.Of(rank).front()].id;
    auto q = dataset.Query("SELECT path FROM cores WHERE id = " + std::to_string(id));
    if (q.ok() && !q->rows.empty()) result.clusters[rank].example = q->rows[0][0].text;
  }
}

}  // namespace

const std::vector<std::string>& UptimeBucketNames() {
  static const std::vector<std::string> kNames = {"<1h", "1h-6h", "6h-1d", "1d-2d", "2d-7d", ">=7d"};
  return kNames;
}

Expected<EpiResult> RunEpidemiology(Dataset& dataset, const EpiOptions& options) {
  EpiResult result;
  auto population = LoadPopulation(dataset, options, result);
  if (!population.ok()) return population.error();
  const Population& pop = *population;
  if (pop.crashes.empty()) return result;
  Incidents incidents = FindIncidents(pop, options);
  Calendar calendar = MakeCalendar(pop, incidents, options, result);
  Clusters clusters = MakeClusters(pop, incidents, calendar, options, result);
  std::vector<Test> tests = MakeTests(pop, incidents, calendar, clusters, options, result);
  std::vector<double> adjusted = AdjustFamily(tests, pop, options.report_p_adjusted, result);
  AddFindings(tests, adjusted, pop, calendar, clusters, options, result);
  ExplainFindings(pop, incidents, calendar, clusters, options, result);
  FindChangeOnsets(pop, incidents, calendar, clusters, options, result);
  ReadFindings(clusters, options, result);
  JudgeClusterHardware(pop, incidents, clusters, options, result);
  DescribeIncidents(dataset, pop, incidents, clusters, result);
  AddExamples(dataset, pop, clusters, result);
  return result;
}

}  // namespace coroner
