#include "report/value_printer.h"

#include "core/byte_view.h"
#include "text/text.h"

#include <locale.h>
#include <wctype.h>

#include <fmt/format.h>
#include <fmt/printf.h>

#include <algorithm>
#include <cstring>
#include <span>

namespace coroner {
namespace {

constexpr size_t kPrintElements = 200;   // gdb's default `print elements`
constexpr size_t kRepeatThreshold = 10;  // gdb's `print repeats`: longer runs are folded

// One character as gdb escapes it inside `quote` ('\'' or '"').
std::string EscapeChar(unsigned char c, char quote) {
  switch (c) {
    case '\a': return "\\a";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\v': return "\\v";
    case '\\': return "\\\\";
    default: break;
  }
  if (c == static_cast<unsigned char>(quote)) return std::string("\\") + quote;
  if (c >= 0x20 && c < 0x7f) return std::string(1, static_cast<char>(c));
  return fmt::format("\\{:03o}", c);
}

// Whether a well-formed UTF-8 sequence of 2 to 4 bytes is a character a
// UTF-8 locale calls printable (iswprint), as gdb asks before it prints one
// as itself: an unassigned code point or a control character is escaped.
bool PrintableUtf8(std::span<const unsigned char> seq) {
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  if (!utf8) return true;
  uint32_t cp = seq[0] & (seq.size() == 2 ? 0x1f : seq.size() == 3 ? 0x0f : 0x07);
  for (size_t k = 1; k < seq.size(); ++k) cp = (cp << 6) | (seq[k] & 0x3f);
  return iswprint_l(static_cast<wint_t>(cp), utf8) != 0;
}

// gdb's form of a run of characters: quoted segments and folded repeats.
// As gdb's printstr, it goes by groups of one character repeated (a valid
// UTF-8 sequence is one character, any other high byte another): a group
// longer than `print repeats` is folded, and groups are taken while fewer
// than `print elements` characters were, the last one whole. "..." when
// there was more (or `truncated` says the run was cut).
std::string CharSequence(std::span<const unsigned char> chars, bool truncated) {
  // The length in bytes of the character at i: a well-formed UTF-8
  // sequence (RFC 3629's, as iconv takes it: F4 BC 88 82, past U+10FFFF,
  // is four invalid bytes, each a character of its own), else one byte.
  const std::string_view bytes(reinterpret_cast<const char*>(chars.data()), chars.size());
  auto width = [&](size_t i) -> size_t { return std::max<size_t>(1, WellFormedUtf8Length(bytes, i)); };
  auto text = [&](size_t i, size_t len) {
    // A valid UTF-8 sequence of a printable character prints as itself
    // (gdb in a UTF-8 locale); any other byte escaped for the string's
    // double quotes.
    if (len > 1 && PrintableUtf8(chars.subspan(i, len))) return std::string(reinterpret_cast<const char*>(&chars[i]), len);
    std::string escaped;
    for (size_t k = 0; k < len; ++k) escaped += EscapeChar(chars[i + k], '"');
    return escaped;
  };
  std::string out, segment;
  auto flush = [&] {
    if (segment.empty()) return;
    if (!out.empty()) out += ", ";
    out += '"' + segment + '"';
    segment.clear();
  };
  size_t printed = 0, i = 0;
  while (i < chars.size() && printed < kPrintElements) {
    size_t len = width(i), run = 1;
    while (i + (run + 1) * len <= chars.size() &&
           std::equal(&chars[i], &chars[i] + len, &chars[i + run * len]) && width(i + run * len) == len)
      ++run;
    if (run > kRepeatThreshold) {
      flush();
      if (!out.empty()) out += ", ";
      out += fmt::format("'{}' <repeats {} times>", text(i, len), run);
    } else {
      for (size_t k = 0; k < run; ++k) segment += text(i, len);
    }
    i += run * len;
    printed += run;
  }
  flush();
  if (out.empty()) out = "\"\"";
  if (truncated || i < chars.size()) out += "...";
  return out;
}

std::string Chars(const Value& v) {
  return CharSequence(std::span(reinterpret_cast<const unsigned char*>(v.text.data()), v.text.size()), v.truncated);
}

// gdb's `print elements` over an array's elements: a folded run counts as
// the repeat threshold, a plain element as one; what is left becomes "...".
std::string Elements(const std::vector<Value>& elements) {
  std::vector<std::string> items;
  items.reserve(elements.size());
  for (const auto& e : elements) items.push_back(PrintValue(e));
  std::string out = "{";
  size_t printed = 0, i = 0;
  while (i < items.size() && printed < kPrintElements) {
    size_t run = 1;
    while (i + run < items.size() && items[i + run] == items[i]) ++run;
    if (i) out += ", ";
    if (run > kRepeatThreshold) {
      out += fmt::format("{} <repeats {} times>", items[i], run);
      i += run;
      printed += kRepeatThreshold;
    } else {
      out += items[i];
      ++i;
      ++printed;
    }
  }
  if (i < items.size()) out += "...";
  return out + "}";
}

}  // namespace

std::string PrintValue(const Value& v) {
  using Kind = Value::Kind;
  switch (v.kind) {
    case Kind::kOptimizedOut: return "<optimized out>";
    case Kind::kSigned: return std::to_string(static_cast<int64_t>(v.bits));
    case Kind::kUnsigned: return std::to_string(v.bits);
    case Kind::kBool: return v.bits ? "true" : "false";
    case Kind::kChar:
      return fmt::format("{} '{}'", static_cast<int64_t>(v.bits), EscapeChar(static_cast<unsigned char>(v.bits), '\''));
    case Kind::kFloat: {
      float f;
      uint32_t u = static_cast<uint32_t>(v.bits);
      std::memcpy(&f, &u, 4);
      return fmt::sprintf("%.9g", f);
    }
    case Kind::kDouble: {
      double d;
      std::memcpy(&d, &v.bits, 8);
      return fmt::sprintf("%.17g", d);
    }
    case Kind::kPointer: {
      std::string out = ShownWord(v.bits);
      if (!v.text.empty()) out += v.offset == 0 ? " <" + v.text + ">" : fmt::format(" <{}+{}>", v.text, v.offset);
      for (const auto& pointee : v.children) out += " " + PrintValue(pointee);
      return out;
    }
    case Kind::kReference: return "@" + ShownWord(v.bits);
    case Kind::kEnumerator: return v.text;
    case Kind::kStruct: {
      if (v.children.empty()) return "{<No data fields>}";
      std::string out = "{";
      for (size_t i = 0; i < v.children.size(); ++i) {
        out += (i ? ", " : "") + v.children[i].name + " = " + PrintValue(v.children[i]);
      }
      return out + "}";
    }
    case Kind::kArray: return Elements(v.children);
    case Kind::kChars: return Chars(v);
    case Kind::kUnreadable: return "<error: Cannot access memory at address " + ShownWord(v.bits) + ">";
    case Kind::kTooDeep: return "{...}";
    case Kind::kHidden: return std::string(kHiddenEnvironment);
  }
  return "?";
}

}  // namespace coroner
