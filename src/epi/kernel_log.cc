#include "epi/kernel_log.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "dataset/timestamps.h"

namespace coroner {
namespace {

constexpr size_t kMaxLine = 64 * 1024;
constexpr uint64_t kMaxFile = 1ull << 30;
constexpr size_t kMaxEvents = 200000;  // kept per log; the rest are counted

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

namespace {

// Parses a log one line at a time, keeping only the hardware events (at
// most kMaxEvents), so that memory follows the events, not the log's size.
class KernelLogParser {
 public:
  KernelLogParser(std::string default_host, int year) : default_host_(std::move(default_host)), year_(year) {}

  void Line(std::string_view line) {
    if (line.size() > kMaxLine) line = line.substr(0, kMaxLine);
    ++log_.lines;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Parsed p = ParseLine(line, year_);
    const char* kind = HardwareKind(p.message);
    if (!kind) return;
    if (log_.events.size() >= kMaxEvents) {
      ++dropped_;
      return;
    }
    HardwareEvent e;
    e.host = p.host.empty() ? default_host_ : p.host;
    e.time = p.time;
    e.kind = kind;
    e.line = std::string(line.substr(0, 300));
    if (!e.time) ++untimed_;
    log_.events.push_back(std::move(e));
  }

  KernelLog Finish() {
    if (untimed_)
      log_.warnings.push_back(std::to_string(untimed_) +
                              " hardware events have no wall-clock time (raw dmesg); they count for every crash on "
                              "their host");
    if (dropped_)
      log_.warnings.push_back(std::to_string(dropped_) + " hardware events past the first " +
                              std::to_string(kMaxEvents) + " were not kept");
    return std::move(log_);
  }

 private:
  std::string default_host_;
  int year_;
  KernelLog log_;
  size_t untimed_ = 0, dropped_ = 0;
};

}  // namespace

KernelLog ParseKernelLog(const std::string& text, const std::string& default_host, int year) {
  KernelLogParser parser(default_host, year);
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    parser.Line(std::string_view(text.data() + at, end - at));
    at = end + 1;
  }
  return parser.Finish();
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
  // Read in blocks and parsed line by line: only a partial line is carried
  // from one block to the next (a line is cut at kMaxLine anyway).
  KernelLogParser parser(host, year);
  std::string pending;
  std::vector<char> buf(1 << 16);
  uint64_t total = 0;
  bool cut = false;
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    std::string_view block(buf.data(), static_cast<size_t>(in.gcount()));
    total += block.size();
    for (size_t nl; (nl = block.find('\n')) != std::string_view::npos;) {
      if (pending.empty()) {
        parser.Line(block.substr(0, nl));
      } else {
        pending.append(block.substr(0, std::min(nl, kMaxLine)));
        parser.Line(pending);
        pending.clear();
      }
      block.remove_prefix(nl + 1);
    }
    if (pending.size() < kMaxLine) pending.append(block.substr(0, kMaxLine - pending.size()));
    if (total >= kMaxFile) {
      cut = true;
      break;
    }
  }
  if (!pending.empty()) parser.Line(pending);
  KernelLog log = parser.Finish();
  if (forced)
    for (auto& e : log.events) e.host = host;
  if (cut) log.warnings.push_back(path + ": only the first 1 GiB was read");
  return log;
}

}  // namespace coroner
