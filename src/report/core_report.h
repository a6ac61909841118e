// The per-core report: the JSON contract of `coroner analyze --json`
// (docs/analyze-json.md) and the readable text summary. Both are built from
// the Core snapshot only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/core.h"

namespace coroner {

// Version of the analyze JSON document; bump on any incompatible change.
constexpr int kAnalyzeJsonVersion = 1;

nlohmann::ordered_json CoreToJson(const Core& core, const std::string& path);

// A JSON object for an input that could not be analyzed at all.
nlohmann::ordered_json ErrorToJson(const std::string& path, const Error& error);

std::string CoreToText(const Core& core, const std::string& path);

}  // namespace coroner
