// ISO-8601 timestamps as the sidecar metadata and inventories write them,
// and the one form the dataset stores ("2026-10-14T03:12:00Z", UTC).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace coroner {

// Seconds since the epoch for "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS[.frac]]"
// with "Z", "+HH:MM", "-HH:MM" or no zone (taken as UTC); a space may stand
// for the "T". nullopt for anything else, including out-of-range fields.
std::optional<int64_t> ParseIso8601(const std::string& text);

// "YYYY-MM-DDTHH:MM:SSZ".
std::string FormatIso8601(int64_t seconds);

}  // namespace coroner
