#include "epi/kernel_log.h"

#include <cstring>
#include <fstream>

#include "dataset/timestamps.h"

namespace coroner {
namespace {

constexpr size_t kMaxLine = 64 * 1024;
constexpr uint64_t kMaxFile = 1ull << 30;

// The kind of hardware report a kernel message is, or nullptr.
const char* HardwareKind(std::string_view msg) {
  auto has = [&](const char* s) { return msg.find(s) != std::string_view::npos; };
  if (has("EDAC")) return "edac";
  if (has("mce:") || has("Machine check") || has("Hardware Error") || has("machine check")) return "mce";
  if (has("NVRM: Xid") || has("Xid (PCI:")) return "gpu-xid";
  if (has("amdgpu") && (has("fault") || has("error") || has("ERROR") || has("timeout") || has("GPU reset") ||
                        has("RAS")))
    return "gpu-amdgpu";
  return nullptr;
}

int Month(std::string_view m) {
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i)
    if (m == kMonths[i]) return i + 1;
  return 0;
}

std::string_view Token(std::string_view& rest) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  size_t end = rest.find(' ');
  std::string_view t = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return t;
}

// "Oct", "14", "03:12:00" and a year as seconds since the epoch.
std::optional<int64_t> SyslogTime(std::string_view mon, std::string_view day, std::string_view hms, int year) {
  int m = Month(mon), d = 0;
  if (!m || day.empty() || day.size() > 2 || hms.size() != 8) return std::nullopt;
  for (char c : day) {
    if (c < '0' || c > '9') return std::nullopt;
    d = d * 10 + (c - '0');
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%.8s", year, m, d, hms.data());
  return ParseIso8601(buf);
}

struct Parsed {
  std::optional<int64_t> time;
  std::string host;  // empty when the line has no host field
  std::string_view message;
};

Parsed ParseLine(std::string_view line, int year) {
  Parsed p;
  p.message = line;
  std::string_view rest = line;
  if (line.size() > 1 && line[0] == '[') {  // dmesg: "[  12.345]" or "[Wed Oct 14 03:12:00 2026]"
    size_t close = line.find(']');
    if (close == std::string_view::npos) return p;
    std::string_view inside = line.substr(1, close - 1);
    p.message = line.substr(close + 1);
    std::string_view r = inside;
    std::string_view wday = Token(r), mon = Token(r), day = Token(r), hms = Token(r), yr = Token(r);
    if (!wday.empty() && Month(mon) && yr.size() == 4) {
      int y = 0;
      for (char c : yr) y = y * 10 + (c >= '0' && c <= '9' ? c - '0' : 0);
      p.time = SyslogTime(mon, day, hms, y);
    }
    return p;
  }
  std::string_view first = Token(rest);
  if (first.size() >= 19 && first[4] == '-' && first[10] == 'T') {  // short-iso / RFC 3339
    std::string iso(first);
    size_t n = iso.size();
    if (n >= 5 && (iso[n - 5] == '+' || iso[n - 5] == '-') && iso.find(':', n - 5) == std::string::npos)
      iso.insert(n - 2, ":");  // "+0000" -> "+00:00"
    p.time = ParseIso8601(iso);
    if (p.time) {
      p.host = std::string(Token(rest));
      p.message = rest;
    }
    return p;
  }
  if (Month(first)) {  // classic syslog
    std::string_view day = Token(rest), hms = Token(rest);
    p.time = SyslogTime(first, day, hms, year);
    if (p.time) {
      p.host = std::string(Token(rest));
      p.message = rest;
    }
  }
  return p;
}

}  // namespace

KernelLog ParseKernelLog(const std::string& text, const std::string& default_host, int year) {
  KernelLog log;
  size_t untimed = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, std::min(end - at, kMaxLine));
    at = end + 1;
    ++log.lines;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Parsed p = ParseLine(line, year);
    const char* kind = HardwareKind(p.message);
    if (!kind) continue;
    HardwareEvent e;
    e.host = p.host.empty() ? default_host : p.host;
    e.time = p.time;
    e.kind = kind;
    e.line = std::string(line.substr(0, 300));
    if (!e.time) ++untimed;
    log.events.push_back(std::move(e));
  }
  if (untimed)
    log.warnings.push_back(std::to_string(untimed) +
                           " hardware events have no wall-clock time (raw dmesg); they count for every crash on their "
                           "host");
  return log;
}

Expected<KernelLog> LoadKernelLog(const std::string& spec, int year) {
  std::string path = spec, host;
  size_t eq = spec.find('=');
  bool forced = false;
  if (eq != std::string::npos && eq > 0) {
    host = spec.substr(0, eq);
    path = spec.substr(eq + 1);
    forced = true;
  } else {
    std::string base = path.substr(path.rfind('/') + 1);
    host = base.substr(0, base.find('.'));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(ErrorKind::kIo, "--kernel-log: cannot open " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  bool cut = false;
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() >= kMaxFile) {
      cut = true;
      break;
    }
  }
  KernelLog log = ParseKernelLog(text, host, year);
  if (forced)
    for (auto& e : log.events) e.host = host;
  if (cut) log.warnings.push_back(path + ": only the first 1 GiB was read");
  return log;
}

}  // namespace coroner
