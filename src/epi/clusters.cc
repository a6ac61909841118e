// Stages 3 and 4 of RunEpidemiology: the calendar (the days covered, the
// population at risk, each value's first crash) and the clusters (their
// days, onsets, hosts, uptimes and exposure).
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
// Stage 3, the calendar: the days the dataset covers, the population at risk
// on them, and when each value appeared.

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
    cl.syndromes = pop.cluster_syndrome_counts[k];
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

}  // namespace coroner::epi_stages
