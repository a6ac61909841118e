// Stages 5 to 9 of RunEpidemiology: the tests, the family (Tarone,
// Benjamini-Hochberg), the findings, their explanations, the onsets that
// come with a change, and each finding's typed reading.
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

// ---------------------------------------------------------------------------
// Stage 5, tests: each value each cluster's cores have, against the other
// crashes (Fisher; within the cluster's window for the calendar's values)
// or, with an inventory, against the host-days at risk.

namespace {

// What a left-out cluster takes from a reference: its counted crashes, and
// each value's, overall and by day (timed crashes only, as the calendar's).
struct Tally {
  uint64_t counted = 0;
  std::vector<int64_t> days;
  std::unordered_map<uint32_t, uint64_t> with;
  std::unordered_map<uint32_t, std::vector<int64_t>> days_with;
};

std::unordered_map<uint32_t, Tally> TallyLeftOut(const Population& pop, const Incidents& incidents,
                                                 const Calendar& cal, const Clusters& clusters,
                                                 const References& left_out) {
  std::unordered_map<uint32_t, Tally> out;
  for (const auto& ranks : left_out)
    for (uint32_t r : ranks) out.try_emplace(r);
  for (auto& [rank, tally] : out) {
    for (uint32_t i : clusters.Of(rank)) {
      if (!incidents.counted[i]) continue;
      ++tally.counted;
      std::optional<int64_t> day;
      if (pop.crashes[i].time) day = std::max(DayOf(*pop.crashes[i].time), cal.min_day);
      if (day) tally.days.push_back(*day);
      auto [from, to] = pop.FeaturesOf(i);
      for (const uint32_t* f = from; f != to; ++f) {
        ++tally.with[*f];
        if (day && cal.windowed[*f]) tally.days_with[*f].push_back(*day);
      }
    }
    std::sort(tally.days.begin(), tally.days.end());
    for (auto& [f, d] : tally.days_with) std::sort(d.begin(), d.end());
  }
  return out;
}

}  // namespace

References ReferencesFrom(const std::vector<Test>& tests, const std::vector<double>& adjusted, const Population& pop) {
  const auto& features = pop.features;
  References by_key(features.keys.size());
  std::vector<uint32_t> everywhere;  // clusters on one host or machine
  for (size_t i = 0; i < tests.size(); ++i) {
    if (adjusted[i] >= kStrongFinding) continue;
    uint32_t key = features.features[tests[i].feature].first;
    auto rank = static_cast<uint32_t>(tests[i].cluster);
    (PlaceOfKey(features.keys[key]) != KeyPlace::kNone ? everywhere : by_key[key]).push_back(rank);
  }
  for (size_t key = 0; key < by_key.size(); ++key) {
    auto& ranks = by_key[key];
    // A bad host's crashes carry the hardware evidence the evidence keys
    // measure (errors in its kernel log, bit flips, impossible states): the
    // reference of those keys keeps them, or every other cluster would
    // look as bad as the host.
    const std::string& name = features.keys[key];
    KeyRole role = RoleOfKey(name);
    bool evidence = name.starts_with("hw_errors_") || role == KeyRole::kBitFlip || role == KeyRole::kImpossibleState;
    if (!evidence) ranks.insert(ranks.end(), everywhere.begin(), everywhere.end());
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  }
  if (std::all_of(by_key.begin(), by_key.end(), [](const auto& r) { return r.empty(); })) by_key.clear();
  return by_key;
}

std::vector<Test> MakeTests(const Population& pop, const Incidents& incidents, const Calendar& cal,
                            const Clusters& clusters, const EpiOptions& options, const EpiResult& result,
                            const References& left_out) {
  std::vector<Test> tests;
  const auto& features = pop.features;
  size_t n_features = features.features.size();
  const std::unordered_map<uint32_t, Tally> tallies = TallyLeftOut(pop, incidents, cal, clusters, left_out);
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
      // The reference without the clusters that are causes on this
      // attribute (ReferencesFrom); this cluster stays in its own.
      if (key < left_out.size()) {
        for (uint32_t other : left_out[key]) {
          if (other == rank) continue;
          const Tally& tally = tallies.at(other);
          auto w = tally.with.find(f);
          uint64_t other_with = 0, other_all = 0;
          if (t.window_first != INT64_MIN) {
            auto d = tally.days_with.find(f);
            if (d != tally.days_with.end()) other_with = Calendar::InWindow(d->second, span.first, span.last);
            other_all = Calendar::InWindow(tally.days, span.first, span.last);
          } else {
            other_with = w == tally.with.end() ? 0 : w->second;
            other_all = tally.counted;
          }
          with -= std::min(with, other_with);
          all -= std::min(all, other_all);
          t.left_out.push_back(other);
        }
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
    f.reference = t.all - std::min(t.all, t.n);
    for (uint32_t r : t.left_out) f.left_out.push_back(result.clusters[r].id);
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

namespace {

// Other clusters' crashes that must carry a value for it to be a change of
// the fleet.
constexpr uint64_t kMinOthersWithChange = 3;

// The calendar values a cluster's crashes carry: value -> (crashes, the
// first one's time), over the counted, timed crashes `take` admits (their
// number in `n`) and the values `keep` admits.
template <typename Take, typename Keep>
std::unordered_map<uint32_t, std::pair<uint64_t, int64_t>> CarriedValues(const Population& pop, const Incidents& incidents,
                                                                         const Clusters& clusters, size_t rank,
                                                                         Take take, Keep keep, uint64_t& n) {
  std::unordered_map<uint32_t, std::pair<uint64_t, int64_t>> carried;
  n = 0;
  for (uint32_t i : clusters.Of(rank)) {
    if (!incidents.counted[i] || !pop.crashes[i].time || !take(i)) continue;
    ++n;
    auto [from, to] = pop.FeaturesOf(i);
    for (const uint32_t* f = from; f != to; ++f) {
      if (!keep(*f)) continue;
      auto [it, added] = carried.try_emplace(*f, 0, *pop.crashes[i].time);
      ++it->second.first;
      it->second.second = std::min(it->second.second, *pop.crashes[i].time);
    }
  }
  return carried;
}

// How many of sorted `times` are in [from, to).
uint64_t Between(const std::vector<int64_t>& times, int64_t from, int64_t to) {
  if (from >= to) return 0;
  return static_cast<uint64_t>(std::lower_bound(times.begin(), times.end(), to) -
                               std::lower_bound(times.begin(), times.end(), from));
}

// Without an inventory: each value of a calendar key (a release, a kernel)
// that 90% of a cluster's crashes carry, judged by the other crashes'
// clock (TestCrashClockOnset). The candidates first; then one pass over the
// crashes gathers the times each count needs, which binary searches read.
std::vector<std::pair<size_t, ChangeOnset>> CrashClockOnsets(const Population& pop, const Incidents& incidents,
                                                             const Calendar& cal, const Clusters& clusters,
                                                             const EpiOptions& options) {
  struct Candidate {
    size_t rank;
    uint32_t feature;
    uint64_t mine_with;
    int64_t first_mine;
  };
  std::vector<Candidate> candidates;
  for (size_t rank = 0; rank < clusters.order.size(); ++rank) {
    if (clusters.spans[rank].counted < options.min_cluster_for_tests) continue;
    uint64_t timed = 0;
    auto carried = CarriedValues(
        pop, incidents, clusters, rank, [](uint32_t) { return true; },
        [&](uint32_t f) {
          uint32_t key = pop.features.features[f].first;
          return cal.windowed[f] && key != pop.k_exe && key != pop.k_build;
        },
        timed);
    for (const auto& [f, seen] : carried)
      if (seen.first * 10 >= timed * 9 && cal.first_time[f] != INT64_MAX)
        candidates.push_back({rank, f, seen.first, seen.second});
  }
  if (candidates.empty()) return {};
  std::vector<int64_t> all;  // every counted, timed crash
  std::unordered_map<uint32_t, std::vector<int64_t>> with;     // a candidate value's crashes
  std::unordered_map<uint32_t, std::vector<int64_t>> of_rank;  // a candidate cluster's crashes
  for (const auto& c : candidates) with[c.feature], of_rank[static_cast<uint32_t>(c.rank)];
  std::vector<uint32_t> rank_of_key(clusters.order.size());
  for (size_t rank = 0; rank < clusters.order.size(); ++rank) rank_of_key[clusters.order[rank]] = static_cast<uint32_t>(rank);
  for (size_t i = 0; i < pop.crashes.size(); ++i) {
    if (!incidents.counted[i] || !pop.crashes[i].time) continue;
    const int64_t t = *pop.crashes[i].time;
    all.push_back(t);
    if (auto r = of_rank.find(rank_of_key[pop.crashes[i].cluster]); r != of_rank.end()) r->second.push_back(t);
    auto [from, to] = pop.FeaturesOf(i);
    for (const uint32_t* f = from; f != to; ++f)
      if (auto w = with.find(*f); w != with.end()) w->second.push_back(t);
  }
  std::sort(all.begin(), all.end());
  for (auto& [f, t] : with) std::sort(t.begin(), t.end());
  for (auto& [r, t] : of_rank) std::sort(t.begin(), t.end());
  std::vector<std::pair<size_t, ChangeOnset>> tested;
  for (const auto& c : candidates) {
    const int64_t appeared = cal.first_time[c.feature];
    const auto& mine = of_rank.at(static_cast<uint32_t>(c.rank));
    const auto& carrying = with.at(c.feature);
    CrashClock k;
    k.mine_before = Between(mine, INT64_MIN, appeared);
    k.others_before = Between(all, INT64_MIN, appeared) - k.mine_before;
    k.mine_after = mine.size() - k.mine_before;
    k.others_after = all.size() - k.mine_before - k.others_before - k.mine_after;
    // The cluster carries the value from its first crash with it on.
    k.lag_crashes = Between(carrying, appeared, c.first_mine);
    k.all_with = static_cast<uint64_t>(carrying.end() - std::lower_bound(carrying.begin(), carrying.end(), c.first_mine));
    k.mine_with = c.mine_with;
    // A change of the fleet, which other clusters' crashes carry too; not
    // the cluster's own program or build, which first appears with it.
    if (carrying.size() - c.mine_with < kMinOthersWithChange) continue;
    const auto& feature = pop.features.features[c.feature];
    if (auto o = TestCrashClockOnset(pop.features.keys[feature.first], feature.second, k))
      tested.emplace_back(c.rank, std::move(*o));
  }
  return tested;
}

}  // namespace

void FindChangeOnsets(const Population& pop, const Incidents& incidents, const Calendar& cal, const Clusters& clusters,
                      const EpiOptions& options, EpiResult& result) {
  std::vector<std::pair<size_t, ChangeOnset>> tested;  // cluster rank, test
  if (!cal.exposure) tested = CrashClockOnsets(pop, incidents, cal, clusters, options);
  for (size_t rank = 0; cal.exposure && rank < clusters.order.size(); ++rank) {
    if (clusters.spans[rank].counted < options.min_cluster_for_tests) continue;
    uint64_t n_placed = 0;
    auto carried = CarriedValues(
        pop, incidents, clusters, rank, [&](uint32_t i) { return cal.placed[i] != 0; },
        [&](uint32_t f) { return cal.windowed[f] && cal.rated[f]; }, n_placed);
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

}  // namespace coroner::epi_stages
