// JsonWriter: compact JSON written straight into a string, in the order the
// calls come, with nlohmann::json's spelling (the analyze JSON's bytes did
// not change when its report moved from building a json tree to this):
// no spaces, strings escaped as `dump()` escapes them (\" \\ \b \f \n \r \t,
// other control characters as \u00xx, everything else as UTF-8), a string
// that is not valid UTF-8 written valid (U+FFFD) rather than refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coroner {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }

  // The next value's key, in an object.
  JsonWriter& Key(std::string_view key);

  void String(std::string_view s);
  void Int(int64_t v);
  void UInt(uint64_t v);
  // A measurement, with three decimals; null when it is not finite.
  void Double(double v);
  void Bool(bool v);
  void Null();
  // A value or null.
  void StringOrNull(const std::optional<std::string>& s) { s ? String(*s) : Null(); }

 private:
  void Comma();
  void Quote(std::string_view s);
  void Open(char c);
  void Close(char c);

  std::string& out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace coroner
