#include "epi/exposure.h"

#include "dataset/timestamps.h"

#include <algorithm>

namespace coroner {
namespace {

constexpr double kDaySeconds = static_cast<double>(kSecondsPerDay);

std::string FeatureKey(const std::string& key, const std::string& value) {
  std::string k = key;
  k += '\0';
  k += value;
  return k;
}

}  // namespace

Exposure::Exposure(const Inventory& inventory, int64_t begin, int64_t end) {
  // Rows by host, by start, then clipped so a host is never counted twice
  // for the same second.
  std::map<std::string, std::vector<const Inventory::Row*>> hosts;
  for (const auto& row : inventory.rows()) hosts[row.host].push_back(&row);
  keys_.insert("host");
  for (auto& [host, rows] : hosts) {
    std::stable_sort(rows.begin(), rows.end(), [&](const Inventory::Row* a, const Inventory::Row* b) {
      return a->valid_from.value_or(begin) < b->valid_from.value_or(begin);
    });
    int64_t covered = begin;
    for (const Inventory::Row* row : rows) {
      Span s{std::max({row->valid_from.value_or(begin), begin, covered}), std::min(row->valid_to.value_or(end), end)};
      for (const auto& [k, v] : row->columns) keys_.emplace(k);
      if (s.from >= s.to) continue;
      covered = s.to;
      auto id = static_cast<uint32_t>(spans_.size());
      spans_.push_back(s);
      by_host_[host].push_back(id);
      // One value per key and row, the first, as the scan's join takes it
      // (a column named `host` or a repeated column adds nothing).
      std::unordered_set<std::string> seen = {"host"};
      by_feature_[FeatureKey("host", host)].push_back(id);
      for (const auto& [k, v] : row->columns)
        if (seen.emplace(k).second) by_feature_[FeatureKey(std::string(k), v)].push_back(id);
    }
  }
}

double Exposure::Overlap(const Span& s, int64_t from, int64_t to) {
  int64_t a = std::max(s.from, from), b = std::min(s.to, to);
  return a < b ? static_cast<double>(b - a) / kDaySeconds : 0.0;
}

double Exposure::Days(int64_t from, int64_t to) const {
  double days = 0;
  for (const auto& s : spans_) days += Overlap(s, from, to);
  return days;
}

double Exposure::HostDays(const std::string& host, int64_t from, int64_t to) const {
  auto it = by_host_.find(host);
  double days = 0;
  if (it != by_host_.end())
    for (uint32_t i : it->second) days += Overlap(spans_[i], from, to);
  return days;
}

double Exposure::Days(const std::string& key, const std::string& value, int64_t from, int64_t to) const {
  auto it = by_feature_.find(FeatureKey(key, value));
  double days = 0;
  if (it != by_feature_.end())
    for (uint32_t i : it->second) days += Overlap(spans_[i], from, to);
  return days;
}

size_t Exposure::Hosts(int64_t from, int64_t to) const {
  size_t n = 0;
  for (const auto& [host, spans] : by_host_)
    n += std::any_of(spans.begin(), spans.end(), [&](uint32_t i) { return Overlap(spans_[i], from, to) > 0; });
  return n;
}

bool Exposure::Placed(const std::string& host, int64_t t) const {
  auto it = by_host_.find(host);
  if (it == by_host_.end()) return false;
  // The host's spans are disjoint and in time order.
  const auto& ids = it->second;
  auto after = std::upper_bound(ids.begin(), ids.end(), t, [&](int64_t x, uint32_t i) { return x < spans_[i].from; });
  return after != ids.begin() && t < spans_[*std::prev(after)].to;
}

}  // namespace coroner
