#include "text/json_writer.h"

#include <charconv>
#include <cmath>

#include "text/text.h"

namespace coroner {

void JsonWriter::Comma() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
  }
}

void JsonWriter::Open(char c) {
  Comma();
  out_ += c;
  first_.push_back(true);
}

void JsonWriter::Close(char c) {
  out_ += c;
  first_.pop_back();
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  Comma();
  Quote(key);
  out_ += ':';
  after_key_ = true;
  return *this;
}

void JsonWriter::String(std::string_view s) {
  Comma();
  Quote(s);
}

namespace {

bool ValidUtf8Already(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return ValidUtf8KeepingControls(s) == s;
  return true;
}

}  // namespace

void JsonWriter::Quote(std::string_view s) {
  std::string repaired;
  if (!ValidUtf8Already(s)) s = repaired = ValidUtf8KeepingControls(s);
  out_ += '"';
  static const char kHex[] = "0123456789abcdef";
  // Runs of bytes that need no escape are appended whole.
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out_.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\b': out_ += "\\b"; break;
      case '\f': out_ += "\\f"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default:
        out_ += "\\u00";
        out_ += kHex[c >> 4];
        out_ += kHex[c & 15];
    }
  }
  out_.append(s.data() + run, s.size() - run);
  out_ += '"';
}

void JsonWriter::Int(int64_t v) {
  Comma();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
}

void JsonWriter::Double(double v) {
  if (!std::isfinite(v)) return Null();
  Comma();
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 3);
  out_.append(buf, r.ptr);
}

void JsonWriter::UInt(uint64_t v) {
  Comma();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
}

void JsonWriter::Bool(bool v) {
  Comma();
  out_ += v ? "true" : "false";
}

void JsonWriter::Null() {
  Comma();
  out_ += "null";
}

}  // namespace coroner
