// Did a change start a cluster? A release, kernel, driver or image reaches
// the hosts one by one; a crash it brings begins on each host when the host
// gets it. Within the cluster's own active window every crash carries the
// new value (the rollout finished before), so the in-window test cannot see
// such a cause: this one looks at the whole period the dataset covers,
// host-day by host-day, and asks two questions.
//
//  1. Rate: are the cluster's crashes per host-day with the value higher
//     than without it (before the host got it, or on hosts that never did)?
//     The exact conditional test of two Poisson rates (BinomialGreater).
//  2. Lag: did the first crash come as soon after the change as the
//     cluster's own rate once started says it would? With rate r per
//     host-day of the value after the first crash, and E host-days of the
//     value before it, no crash in E happens with probability exp(-r E). A
//     release that reached every host days before a steady crash stream
//     began did not start it (its p_lag is tiny).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "epi/exposure.h"

namespace coroner {

struct ChangeOnset {
  std::string attribute, value;
  uint64_t crashes_before = 0, crashes_after = 0;  // the cluster's placed crashes without and with the value
  double host_days_before = 0, host_days_after = 0;
  double p_value = 1;        // the rate test
  double p_adjusted = 1;     // Bonferroni over every onset test epi made
  double lag_host_days = 0;  // host-days with the value before the first crash with it
  double p_lag = 1;          // exp(-rate after * lag_host_days)
  // Judged without an inventory, against the other crashes (the crash
  // clock): then the host-days are 0, and these count crashes instead.
  bool crash_clock = false;
  uint64_t other_crashes_before = 0;  // the other clusters', before the value first appeared
  uint64_t lag_crashes = 0;           // other crashes with the value before the cluster's first
};

// The smallest p_lag at which the change may still have started the cluster.
constexpr double kMinOnsetLag = 0.01;

// `first_after` is the time of the cluster's first crash with the value;
// [begin, end) the period the dataset covers. nullopt when the exposure has
// no host-day with the value or none without it (nothing changed).
std::optional<ChangeOnset> TestChangeOnset(const Exposure& exposure, const std::string& attribute,
                                           const std::string& value, int64_t begin, int64_t end,
                                           uint64_t crashes_before, uint64_t crashes_after, int64_t first_after);

// Without an inventory, the fleet's other crashes are the clock. Before the
// value's first appearance the fleet had `others_before` crashes of other
// clusters and `mine_before` of this one; from it on, `others_after` and
// `mine_after`. Rate: with the cluster's share of the crashes after,
// s = mine_after / (mine_after + others_after), P(at most mine_before of
// the crashes before are its) — Binomial(others_before + mine_before, s).
// Lag: the wait from the value's first appearance to the cluster's first
// crash with it, in other crashes carrying the value (`lag_crashes`), at
// the cluster's share of the crashes carrying it once begun
// (`mine_with` of `all_with`): P = (1 - share)^lag. Assumes the other
// clusters' crash rate did not change when the value came, which the
// reference (no other cluster's own cause) makes likelier.
struct CrashClock {
  uint64_t others_before = 0, mine_before = 0, others_after = 0, mine_after = 0;
  uint64_t lag_crashes = 0, mine_with = 0, all_with = 0;
};
std::optional<ChangeOnset> TestCrashClockOnset(const std::string& attribute, const std::string& value,
                                               const CrashClock& clock);

}  // namespace coroner
