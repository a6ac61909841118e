// ISO-8601 timestamps as the sidecar metadata and inventories write them,
// and the one form the dataset stores ("2026-10-14T03:12:00Z", UTC).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace coroner {

inline constexpr int64_t kSecondsPerDay = 86400;

// Seconds since the epoch for "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS[.frac]]"
// with "Z", "+HH:MM", "-HH:MM" or no zone (taken as UTC); a space may stand
// for the "T". nullopt for anything else, including out-of-range fields.
std::optional<int64_t> ParseIso8601(const std::string& text);

// "YYYY-MM-DDTHH:MM:SSZ".
std::string FormatIso8601(int64_t seconds);

// A point in time as users give one to --since and --until, after
// systemd.time(7): ISO 8601 or "YYYY-MM-DD[ HH:MM[:SS]]" (UTC unless it
// names a zone), "now", "today", "yesterday", "tomorrow" (UTC midnights),
// "@SECONDS" since the epoch, or "-5min", "+2h", "-1d", "-1w" from `now`.
std::optional<int64_t> ParseTimeArgument(const std::string& text, int64_t now);

// A UTC day as days since the epoch, and as "YYYY-MM-DD".
inline int64_t DayOf(int64_t seconds) {
  return seconds >= 0 ? seconds / kSecondsPerDay : (seconds - kSecondsPerDay + 1) / kSecondsPerDay;
}
std::string FormatDay(int64_t day);

}  // namespace coroner
