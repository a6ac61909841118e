#include "text/text.h"

#include <algorithm>

namespace coroner {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// The length of the sequence at s[i] when it is printable text, or 0: a
// well-formed sequence other than an ASCII control (tab is kept).
size_t SequenceLength(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return (c >= 0x20 && c != 0x7f) || c == '\t' ? 1 : 0;
  return WellFormedUtf8Length(s, i);
}

// A C1 control character (U+0080 to U+009F, C2 80 to C2 9F) at s[i]: as
// able as C0's to drive a terminal (C2 9B is CSI, C2 9D is OSC); returns
// its code point, or 0.
unsigned char C1At(std::string_view s, size_t i) {
  if (i + 1 >= s.size() || static_cast<unsigned char>(s[i]) != 0xc2) return 0;
  auto next = static_cast<unsigned char>(s[i + 1]);
  return next >= 0x80 && next <= 0x9f ? next : 0;
}

bool IsValid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    // Printable ASCII, most of any text, one comparison a byte.
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      ++i;
      continue;
    }
    size_t len = SequenceLength(s, i);
    if (len == 0 || C1At(s, i)) return false;
    i += len;
  }
  return true;
}

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

// `s` made valid UTF-8, each control character (C0, DEL, and C1 as its
// code point, 0x80 to 0x9f) passed to `control`.
template <class OnControl>
std::string Rewrite(std::string_view s, OnControl control) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (IsControl(c)) {
      control(c, out);
      ++i;
      continue;
    }
    if (unsigned char c1 = C1At(s, i)) {
      control(c1, out);
      i += 2;
      continue;
    }
    size_t len = SequenceLength(s, i);
    if (len) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

}  // namespace

// The ranges are RFC 3629's table: the second byte's range depends on the
// first, which excludes overlong forms (C0, C1, E0 80-9F, F0 80-8F),
// surrogates (ED A0-BF) and code points past U+10FFFF (F4 90-BF, F5-FF).
size_t WellFormedUtf8Length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  return len;
}

std::string ValidUtf8(std::string_view s) {
  if (IsValid(s)) return std::string(s);  // most text: one check and one copy
  return Rewrite(s, [](unsigned char c, std::string& out) {
    if (c == '\t') out += '\t';
    else out += kReplacement;
  });
}

std::string ValidUtf8KeepingControls(std::string_view s) {
  return Rewrite(s, [](unsigned char c, std::string& out) {
    if (c >= 0x80) out += '\xc2';  // a C1 character stays the sequence it was
    out += static_cast<char>(c);
  });
}

std::string EscapedLine(std::string_view s) {
  return Rewrite(s, [](unsigned char c, std::string& out) {
    static constexpr char kHex[] = "0123456789abcdef";
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += "\\x", out += kHex[c >> 4], out += kHex[c & 15];
    }
  });
}

std::string ValidUtf8(std::string&& s) { return IsValid(s) ? std::move(s) : ValidUtf8(std::string_view(s)); }

// Line breaks and other control characters as spaces: Markdown prose, a
// table cell and a code span are each one line.
static std::string OneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return ValidUtf8(std::move(out));
}

std::string MarkdownEscape(std::string_view text) {
  std::string line = OneLine(text);
  std::string out;
  out.reserve(line.size());
  for (char c : line) {
    switch (c) {
      case '\\': case '`': case '*': case '_': case '[': case ']': case '<': case '>': case '|': case '#':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

std::string MarkdownProse(std::string_view text) {
  if (std::count(text.begin(), text.end(), '`') % 2 != 0) return MarkdownEscape(text);
  std::string out;
  bool code = false;
  size_t from = 0;
  while (from <= text.size()) {
    size_t tick = text.find('`', from);
    std::string_view part = text.substr(from, tick == std::string_view::npos ? std::string_view::npos : tick - from);
    out += code ? MarkdownCode(part) : MarkdownEscape(part);
    if (tick == std::string_view::npos) break;
    code = !code;
    from = tick + 1;
  }
  return out;
}

std::string MarkdownCode(std::string_view text) {
  std::string body = OneLine(text);
  size_t longest = 0, run = 0;
  for (char c : body) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string fence(longest + 1, '`');
  // A span that begins or ends with a backtick needs a space between it
  // and the fence; CommonMark strips one such space on each side.
  bool pad = !body.empty() && (body.front() == '`' || body.back() == '`' || body.front() == ' ');
  std::string sp = pad ? " " : "";
  return fence + sp + body + sp + fence;
}

std::string MarkdownFenced(std::string_view text) {
  // Line by line, keeping the line breaks that ValidUtf8 would replace.
  std::string s;
  for (size_t from = 0; from <= text.size();) {
    size_t nl = std::min(text.find('\n', from), text.size());
    s += ValidUtf8(text.substr(from, nl - from));
    if (nl < text.size()) s += '\n';
    from = nl + 1;
  }
  for (size_t at; (at = s.find("```")) != std::string::npos;) s.replace(at, 3, "'''");
  for (size_t at; (at = s.find("~~~")) != std::string::npos;) s.replace(at, 3, "'''");
  return s;
}

std::string Basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos || path.size() == 1 ? path : path.substr(slash + 1));
}

}  // namespace coroner
