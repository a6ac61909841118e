// A hash map from strings that is searched with a std::string_view, so that
// a lookup of a name read from a dataset row or a log line builds no string
// (heterogeneous lookup). epi's loops see tens of millions of such names.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace coroner {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

}  // namespace coroner
