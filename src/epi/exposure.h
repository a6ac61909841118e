// The population at risk, from an inventory's placements: each row is a
// host running, with its columns' values, from valid_from to valid_to; the
// host-days with a value are the time the rows with that value cover. A
// cluster's crashes are compared with this, not only with the other crashes:
// a region with three times the hosts has three times the crashes, and a
// test against the other crashes alone takes that for a finding whenever
// another cluster sits elsewhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dataset/metadata.h"

namespace coroner {

class Exposure {
 public:
  // Rows are clipped to [begin, end) (seconds since the epoch); a row
  // without a bound extends to it. Overlapping rows of one host count once
  // (the earlier-starting row keeps the overlap).
  Exposure(const Inventory& inventory, int64_t begin, int64_t end);

  // Whether the inventory gives `key` (one of its columns, or `host`).
  bool Describes(const std::string& key) const { return keys_.count(key) > 0; }
  // Host-days in [from, to): all of them, one host's, or those with key = value.
  double Days(int64_t from, int64_t to) const;
  double HostDays(const std::string& host, int64_t from, int64_t to) const;
  double Days(const std::string& key, const std::string& value, int64_t from, int64_t to) const;
  // Hosts with any time in [from, to).
  size_t Hosts(int64_t from, int64_t to) const;
  // Whether a row of `host` covers time t.
  bool Placed(const std::string& host, int64_t t) const;

 private:
  struct Span {
    int64_t from, to;
  };
  static double Overlap(const Span& s, int64_t from, int64_t to);
  std::vector<Span> spans_;                                             // one per kept row
  std::unordered_map<std::string, std::vector<uint32_t>> by_feature_;  // "key\0value" -> spans_
  std::unordered_map<std::string, std::vector<uint32_t>> by_host_;     // -> spans_, by start
  std::unordered_set<std::string> keys_;
};

}  // namespace coroner
