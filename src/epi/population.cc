// Stage 1 of RunEpidemiology, load: the population query (rules and
// --where), the cores and their cluster keys, the attributes as interned
// features, the jobs' keys.
#include "epi/epi_stages.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>
#include <unordered_map>

#include "dataset/attribute_keys.h"
#include "dataset/timestamps.h"
#include "diagnose/diagnosis.h"
#include "epi/exposure.h"
#include "epi/statistics.h"
#include "processor/signature.h"
#include "text/string_map.h"

namespace coroner::epi_stages {

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

std::string JobKey(const JobParts& p) {
  if (p[kPartId].empty()) return "";
  std::string key = p[kPartId];
  if (!p[kPartStep].empty()) key += " step " + p[kPartStep];
  if (!p[kPartRestart].empty() && p[kPartRestart] != "0") key += " restart " + p[kPartRestart];
  if (!p[kPartElastic].empty() && p[kPartElastic] != "0") key += " elastic restart " + p[kPartElastic];
  if (!p[kPartCluster].empty()) key += " on cluster " + p[kPartCluster];
  return key;
}

namespace {

// ---------------------------------------------------------------------------
// Stage 1, load: the population's cores, their cluster keys and features.


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
// each core's signed thread (in the order the unwinder found them: the
// dataset keeps that thread's alone) that the processor made its signature
// from (SignatureFrames); empty without one.
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
      "SELECT f.core, c.syndrome, c.real_signal IS NOT NULL AND t.crashing = 1, f.function, f.module, f.trust FROM "
      "frames f JOIN threads t ON t.core = f.core AND t.thread = f.thread JOIN cores c ON c.id = f.core WHERE f.core IN "
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

// The syndromes of a fault through a pointer: one bug whose pointer is
// sometimes NULL and sometimes garbage gets either from the same
// instruction, and is one population.
bool PointerFault(std::string_view syndrome) {
  std::optional<Syndrome> s = SyndromeFromName(syndrome);
  return s == Syndrome::kNullDeref || s == Syndrome::kBadPointer || s == Syndrome::kWriteToReadonly;
}

// Where each pointer fault of the population faulted: the crashing
// thread's first frame, as its module's file name and offset (the same
// instruction of the same build), by core id.
Expected<std::unordered_map<int64_t, std::string>> PointerFaultSites(Dataset& dataset, const std::string& population) {
  std::unordered_map<int64_t, std::string> sites;
  auto f = dataset.ForEachRow(
      "SELECT f.core, f.module, f.build_id, f.offset FROM frames f JOIN threads t ON t.core = f.core AND "
      "t.thread = f.thread AND t.crashing = 1 WHERE f.\"index\" = 0 AND f.offset IS NOT NULL AND f.core IN "
      "(SELECT id FROM cores WHERE syndrome IN ('null-deref', 'bad-pointer', 'write-to-readonly') AND " +
          population + ")",
      [&](const QueryRow& r) {
        std::string_view module = r.Text(1);
        sites[r.Integer(0)] = std::string(module.substr(module.rfind('/') + 1)) + "@" + std::string(r.Text(2)) +
                              "+" + std::to_string(r.Integer(3));
        return true;
      });
  if (!f.ok()) return MakeError(f.error().kind, "reading crash sites: " + f.error().message);
  return sites;
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
  std::unordered_map<std::string, uint32_t> cluster_ids, wait_ids;
  std::vector<StringMap<uint64_t>> syndrome_votes, signature_votes;
  auto sites = PointerFaultSites(dataset, query.population);
  if (!sites.ok()) return sites.error();
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
        // A pointer fault groups by its frames and the instruction that
        // faulted, whatever the pointer held: its signature is its cores'
        // commonest (the dataset's are unchanged).
        std::string signature = key;
        auto site = sites->find(c.id);
        if (r.IsNull(Col::kLabel) && PointerFault(syndrome) && site != sites->end() && key.starts_with(syndrome)) {
          std::string frames = key.substr(syndrome.size());
          key.assign("pointer-fault").append(frames).append(" @ ").append(site->second);
        }
        auto [it, added] = cluster_ids.try_emplace(key, static_cast<uint32_t>(pop.cluster_keys.size()));
        if (added) {
          pop.cluster_keys.push_back(signature);
          pop.cluster_labels.emplace_back(r.IsNull(Col::kLabel) ? std::string_view() : r.Text(Col::kLabel));
          syndrome_votes.emplace_back();
          signature_votes.emplace_back();
        }
        c.cluster = it->second;
        for (auto [votes, value] : {std::pair{&syndrome_votes[c.cluster], std::string_view(syndrome)},
                                    std::pair{&signature_votes[c.cluster], std::string_view(signature)}}) {
          auto vote = votes->find(value);
          if (vote == votes->end()) vote = votes->emplace(value, 0).first;
          ++vote->second;
        }
        std::optional<Syndrome> label = SyndromeFromName(syndrome);
        c.external = label == Syndrome::kExternalSignal;
        c.stopped = c.external || label == Syndrome::kSnapshot || label == Syndrome::kDeadlock;
        if (c.stopped) {
          // Where it waited: its signature's frames, without the syndrome
          // (a snapshot and a killed core of the same wait are alike).
          std::string_view sig = r.IsNull(Col::kSignature) ? std::string_view() : r.Text(Col::kSignature);
          size_t bar = sig.find(" | ");
          std::string where(bar == std::string_view::npos ? std::string_view() : sig.substr(bar + 3));
          auto [w, fresh] = wait_ids.try_emplace(where, static_cast<uint32_t>(pop.wait_keys.size()));
          if (fresh) pop.wait_keys.push_back(where);
          c.wait = w->second;
        }
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
  // A cluster's syndrome and signature are the ones most of its cores
  // have; its syndromes are counted when there are several.
  pop.cluster_syndromes.resize(pop.cluster_keys.size());
  pop.cluster_syndrome_counts.resize(pop.cluster_keys.size());
  auto majority = [](const StringMap<uint64_t>& votes, std::string& out) {
    uint64_t best = 0;
    for (const auto& [s, n] : votes)
      if (n > best || (n == best && s < out)) best = n, out = s;
  };
  for (size_t i = 0; i < pop.cluster_keys.size(); ++i) {
    majority(syndrome_votes[i], pop.cluster_syndromes[i]);
    if (signature_votes[i].size() > 1) {
      pop.cluster_keys[i].clear();
      majority(signature_votes[i], pop.cluster_keys[i]);
    }
    if (syndrome_votes[i].size() > 1)
      for (const auto& [s, n] : syndrome_votes[i]) pop.cluster_syndrome_counts[i][std::string(s)] = n;
  }
  return Ok{};
}

// Each job's key, numbered in core order (the jobs' numbering, and so the
// incidents' order on a tie, does not depend on a hash).
void NumberJobs(std::unordered_map<size_t, JobParts> job_parts, Population& pop) {
  std::unordered_map<std::string, uint32_t> job_ids;
  std::vector<std::pair<size_t, JobParts>> jobs(std::make_move_iterator(job_parts.begin()),
                                                std::make_move_iterator(job_parts.end()));
  std::sort(jobs.begin(), jobs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [i, parts] : jobs) {
    if (parts[kPartId].empty()) continue;
    auto [it, added] = job_ids.try_emplace(JobIdentityKey(parts), static_cast<uint32_t>(pop.job_keys.size()));
    if (added) pop.job_keys.push_back(JobKey(parts));
    pop.crashes[i].job = it->second;
  }
}

// Each host's hardware errors: their times, sorted, and the hosts with an
// error of unknown time (which counts for every crash on the host).
struct HostErrors {
  std::unordered_map<std::string, std::vector<int64_t>> times;
  std::unordered_map<std::string, bool> untimed;
  int64_t window = 0;

  HostErrors(const std::vector<HardwareEvent>& hardware, int window_days) : window(window_days * kDay) {
    for (const auto& e : hardware) {
      if (!IsHardwareError(e)) continue;
      if (e.time) times[e.host].push_back(*e.time);
      else untimed[e.host] = true;
    }
    for (auto& [h, t] : times) std::sort(t.begin(), t.end());
  }
  // Whether `host` logged one within the window before `time`.
  bool Before(const std::string& host, std::optional<int64_t> time) const {
    if (untimed.count(host)) return true;
    auto it = times.find(host);
    if (it == times.end() || !time) return false;
    auto lo = std::lower_bound(it->second.begin(), it->second.end(), *time - window);
    return lo != it->second.end() && *lo <= *time;
  }
};

// Each crash's features: the row's own (derived), its attributes (a
// sidecar's `exe` or `build_id` left out where the core's row gives it),
// and `hw_errors_Nd`.
void MergeFeatures(const EpiOptions& options, const FlatLists& derived, const FlatLists& attrs, Population& pop) {
  Features& features = pop.features;
  const std::vector<Crash>& crashes = pop.crashes;
  const HostErrors errors(options.hardware, options.hardware_window_days);
  uint32_t k_hw = features.Key(HardwareErrorsKey(options.hardware_window_days));
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
    // Only "yes" is tested: "no" would be the same test, mirrored.
    if (!options.hardware.empty() && crashes[i].host != UINT32_MAX &&
        errors.Before(features.features[crashes[i].host].second, crashes[i].time))
      out.values.push_back(features.Feature(k_hw, "yes"));
    out.Close();
  }
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
  NumberJobs(std::move(job_parts), pop);
  MergeFeatures(options, derived, attrs, pop);
  return Ok{};
}
}  // namespace

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

}  // namespace coroner::epi_stages
