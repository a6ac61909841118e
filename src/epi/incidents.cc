// Stages 2 and 11 of RunEpidemiology: the incidents of distributed jobs
// (which cores are observations), and the listed incidents and collateral
// clusters in the result.
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

namespace {

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


constexpr int64_t kClockPrecision = 1;  // seconds: crash times from mtime or sidecars
constexpr size_t kMaxListedIncidents = 1000;  // in EpiResult::incidents (all are counted)
constexpr size_t kMaxListedOddRanks = 16;     // a hang's, in Incident::odd_ranks (all are counted)

// A hang: every rank was stopped from outside (a watchdog's or the
// scheduler's signal, a snapshot), none crashed first, but those that gave
// up because a peer did: the scheduler signals a job's ranks one by one,
// and a rank whose peer died first may find its connection closed and
// abort on its own (peer_failure) before its own signal comes. The
// stopped ranks are grouped by where they waited; the largest group, when
// one is larger than every other, is the ranks waiting for a peer, and
// the others are the odd ranks, where the hang began: the root is the
// first of them (lowest rank). The ranks that gave up say nothing of
// where the hang began and take no part in the grouping. Every core but
// the root's is collateral: a hang is one observation.
bool IsHang(const std::vector<Crash>& crashes, const Incidents::One& inc) {
  size_t stopped = 0;
  for (uint32_t i : inc.crashes) {
    if (crashes[i].stopped) ++stopped;
    else if (!crashes[i].peer_failure) return false;
  }
  return stopped >= 2;
}

void JudgeHang(const std::vector<Crash>& crashes, Incidents::One& inc, Incidents& out) {
  inc.hang = true;
  std::map<uint32_t, std::vector<uint32_t>> groups;
  for (uint32_t i : inc.crashes)
    if (crashes[i].stopped) groups[crashes[i].wait].push_back(i);
  size_t largest = 0, with_largest = 0;
  for (const auto& [where, members] : groups) largest = std::max(largest, members.size());
  for (const auto& [where, members] : groups) with_largest += members.size() == largest;
  if (groups.size() >= 2 && with_largest == 1) {
    for (const auto& [where, members] : groups) {
      if (members.size() == largest) {
        inc.waiting = static_cast<uint32_t>(members.size());
        inc.waiting_where = where;
      } else {
        inc.odd.insert(inc.odd.end(), members.begin(), members.end());
      }
    }
    auto lower_rank = [&](uint32_t a, uint32_t b) {
      const Crash &x = crashes[a], &y = crashes[b];
      if (x.rank.has_value() != y.rank.has_value()) return x.rank.has_value();
      if (x.rank && *x.rank != *y.rank) return *x.rank < *y.rank;
      return a < b;
    };
    std::sort(inc.odd.begin(), inc.odd.end(), lower_rank);
    inc.root = inc.odd.front();
  } else {
    inc.root = *std::find_if(inc.crashes.begin(), inc.crashes.end(), [&](uint32_t i) { return crashes[i].stopped; });
  }
  for (uint32_t i : inc.crashes) {
    out.hang[i] = 1;
    if (i == inc.root) continue;
    out.collateral[i] = 1;
    out.counted[i] = 0;
    ++inc.collateral;
  }
}

void JudgeIncident(const std::vector<Crash>& crashes, Incidents::One& inc, Incidents& out) {
  if (IsHang(crashes, inc)) return JudgeHang(crashes, inc, out);
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

}  // namespace

Incidents FindIncidents(const Population& pop, const EpiOptions& options) {
  Incidents out;
  const auto& crashes = pop.crashes;
  uint32_t n = static_cast<uint32_t>(crashes.size());
  out.of.assign(n, Incidents::kAlone);
  out.counted.assign(n, 1);
  out.collateral.assign(n, 0);
  out.hang.assign(n, 0);
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
    if (inc->hang) {
      out.kind = Incident::Kind::kHang;
      out.odd_count = inc->odd.size();
      for (uint32_t i : inc->odd) {
        if (out.odd_ranks.size() >= kMaxListedOddRanks) break;
        const Crash& c = pop.crashes[i];
        out.odd_ranks.push_back({c.rank, host_of(c), c.wait == UINT32_MAX ? std::string() : pop.wait_keys[c.wait]});
      }
      out.waiting = inc->waiting;
      if (inc->waiting_where != UINT32_MAX) out.waiting_where = pop.wait_keys[inc->waiting_where];
    }
    auto q = dataset.Query("SELECT path FROM cores WHERE id = " + std::to_string(root.id));
    if (q.ok() && !q->rows.empty()) out.root_path = q->rows[0][0].text;
    result.incidents.push_back(std::move(out));
  }
}

// One example core per cluster, for the reader to open.

}  // namespace coroner::epi_stages
