#include "epi/change_onset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "epi/statistics.h"

namespace coroner {

std::optional<ChangeOnset> TestChangeOnset(const Exposure& exposure, const std::string& attribute,
                                           const std::string& value, int64_t begin, int64_t end,
                                           uint64_t crashes_before, uint64_t crashes_after, int64_t first_after) {
  double all = exposure.Days(begin, end), with = exposure.Days(attribute, value, begin, end);
  if (!(with > 0) || !(all - with > 0) || crashes_after == 0) return std::nullopt;
  ChangeOnset o;
  o.attribute = attribute;
  o.value = value;
  o.crashes_before = crashes_before;
  o.crashes_after = crashes_after;
  o.host_days_after = with;
  o.host_days_before = all - with;
  o.p_value = BinomialGreater(crashes_after, crashes_before + crashes_after, std::min(1.0, with / all));
  o.lag_host_days = exposure.Days(attribute, value, begin, std::clamp(first_after, begin, end));
  // The rate once the cluster began: the lag's host-days are not part of it.
  double started = with - o.lag_host_days;
  double rate = started > 0 ? static_cast<double>(crashes_after) / started : 0;
  o.p_lag = std::exp(-rate * o.lag_host_days);
  return o;
}

std::optional<ChangeOnset> TestCrashClockOnset(const std::string& attribute, const std::string& value,
                                               const CrashClock& k) {
  if (k.mine_after == 0 || k.others_before == 0 || k.all_with == 0) return std::nullopt;
  ChangeOnset o;
  o.attribute = attribute;
  o.value = value;
  o.crash_clock = true;
  o.crashes_before = k.mine_before;
  o.crashes_after = k.mine_after;
  o.other_crashes_before = k.others_before;
  o.lag_crashes = k.lag_crashes;
  double share = static_cast<double>(k.mine_after) / static_cast<double>(k.mine_after + k.others_after);
  o.p_value = BinomialLess(k.mine_before, k.others_before + k.mine_before, share);
  double share_with = static_cast<double>(k.mine_with) / static_cast<double>(k.all_with);
  o.p_lag = std::pow(1 - std::min(1.0, share_with), static_cast<double>(k.lag_crashes));
  return o;
}

}  // namespace coroner
