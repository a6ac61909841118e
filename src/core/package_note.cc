#include "core/package_note.h"

#include <nlohmann/json.hpp>

#include "text/text.h"

namespace coroner {

std::optional<PackageNote> ParsePackageNote(std::string_view json) {
  constexpr size_t kMaxValue = 256;
  if (json.empty()) return std::nullopt;
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto text = [&](const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return std::string();
    std::string v = it->get<std::string>();
    if (v.size() > kMaxValue) v.resize(kMaxValue);
    return ValidUtf8(v);
  };
  PackageNote p{text("type"), text("name"), text("version"), text("architecture"), text("os"), text("osVersion"),
                text("debugInfoUrl")};
  if (p.name.empty()) return std::nullopt;
  return p;
}

}  // namespace coroner
