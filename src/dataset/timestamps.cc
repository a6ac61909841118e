#include "dataset/timestamps.h"

#include <cctype>
#include <ctime>

namespace coroner {
namespace {

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool Digits(const std::string& s, size_t at, size_t n, int* out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::optional<int64_t> ParseIso8601(const std::string& s) {
  int y, mo, d, h = 0, mi = 0, sec = 0;
  if (!Digits(s, 0, 4, &y) || s.size() < 10 || s[4] != '-' || !Digits(s, 5, 2, &mo) || s[7] != '-' ||
      !Digits(s, 8, 2, &d)) {
    return std::nullopt;
  }
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1]) return std::nullopt;
  size_t at = 10;
  int64_t zone = 0;
  if (at < s.size()) {
    if (s[at] != 'T' && s[at] != 't' && s[at] != ' ') return std::nullopt;
    if (!Digits(s, at + 1, 2, &h) || at + 3 >= s.size() || s[at + 3] != ':' || !Digits(s, at + 4, 2, &mi)) {
      return std::nullopt;
    }
    at += 6;
    if (at < s.size() && s[at] == ':') {
      if (!Digits(s, at + 1, 2, &sec)) return std::nullopt;
      at += 3;
      if (at < s.size() && (s[at] == '.' || s[at] == ',')) {
        ++at;
        size_t from = at;
        while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) ++at;
        if (at == from) return std::nullopt;
      }
    }
    if (h > 23 || mi > 59 || sec > 60) return std::nullopt;
    if (at < s.size()) {
      if ((s[at] == 'Z' || s[at] == 'z') && at + 1 == s.size()) {
        at = s.size();
      } else if (s[at] == '+' || s[at] == '-') {
        int zh, zm = 0;
        if (!Digits(s, at + 1, 2, &zh)) return std::nullopt;
        size_t next = at + 3;
        if (next < s.size() && s[next] == ':') ++next;
        if (next < s.size() && !Digits(s, next, 2, &zm)) return std::nullopt;
        if (next < s.size()) next += 2;
        if (next != s.size() || zh > 23 || zm > 59) return std::nullopt;
        zone = (s[at] == '+' ? 1 : -1) * (zh * 3600 + zm * 60);
        at = s.size();
      } else {
        return std::nullopt;
      }
    }
  }
  return DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * kSecondsPerDay + h * 3600 + mi * 60 + sec -
         zone;
}

std::string FormatIso8601(int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return "";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string FormatDay(int64_t day) { return FormatIso8601(day * kSecondsPerDay).substr(0, 10); }

}  // namespace coroner

namespace coroner {

std::optional<int64_t> ParseTimeArgument(const std::string& text, int64_t now) {
  if (text == "now") return now;
  if (text == "today" || text == "yesterday" || text == "tomorrow") {
    int64_t midnight = DayOf(now) * 86400;
    return text == "today" ? midnight : text == "yesterday" ? midnight - 86400 : midnight + 86400;
  }
  if (!text.empty() && text[0] == '@') {
    int64_t v = 0;
    size_t i = 1;
    for (; i < text.size() && i < 19 && std::isdigit(static_cast<unsigned char>(text[i])); ++i) v = v * 10 + (text[i] - '0');
    if (i == 1 || i != text.size()) return std::nullopt;
    return v;
  }
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    // -5min, +2h, -1d: seconds from now in systemd.time(7)'s units.
    size_t i = 1;
    int64_t n = 0;
    for (; i < text.size() && i < 10 && std::isdigit(static_cast<unsigned char>(text[i])); ++i) n = n * 10 + (text[i] - '0');
    if (i == 1) return std::nullopt;
    const std::string unit = text.substr(i);
    static const std::pair<const char*, int64_t> kUnits[] = {
        {"s", 1}, {"sec", 1}, {"m", 60}, {"min", 60}, {"h", 3600}, {"hour", 3600}, {"d", 86400}, {"day", 86400},
        {"days", 86400}, {"w", 604800}, {"week", 604800}, {"weeks", 604800}};
    for (const auto& [name, seconds] : kUnits)
      if (unit == name) return text[0] == '-' ? now - n * seconds : now + n * seconds;
    return std::nullopt;
  }
  return ParseIso8601(text);
}

}  // namespace coroner
