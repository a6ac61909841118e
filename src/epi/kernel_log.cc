#include "epi/kernel_log.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>

#include "dataset/timestamps.h"

namespace coroner {
namespace {

constexpr size_t kMaxLine = 64 * 1024;
constexpr uint64_t kMaxFile = 1ull << 30;
constexpr size_t kMaxEvents = 200000;  // kept per log; the rest are counted

bool Has(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

std::optional<uint64_t> ParseHex(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

std::optional<int> Int(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// The run of characters from `at` that are in `set` (digits, hex digits).
std::string_view Run(std::string_view s, size_t at, std::string_view set) {
  if (at >= s.size()) return {};
  size_t end = at;
  while (end < s.size() && set.find(s[end]) != std::string_view::npos) ++end;
  return s.substr(at, end - at);
}
constexpr std::string_view kDigits = "0123456789";
constexpr std::string_view kHexDigits = "0123456789abcdefABCDEFx";

// The word after `key` ("ip " -> the number after it), or empty.
std::string_view After(std::string_view s, std::string_view key, std::string_view set) {
  size_t at = s.find(key);
  return at == std::string_view::npos ? std::string_view() : Run(s, at + key.size(), set);
}

// "NAME[PID]" ending at `close` (the ']'): the name runs back to the
// message's start, a ": " or a kernel timestamp ("[  12.34] "), since a
// task's name may hold spaces ("Web Content").
bool NamePid(std::string_view msg, size_t close, HardwareEvent& e) {
  if (close == std::string_view::npos || close >= msg.size() || msg[close] != ']') return false;
  size_t open = msg.rfind('[', close);
  if (open == std::string_view::npos) return false;
  auto pid = Int(msg.substr(open + 1, close - open - 1));
  if (!pid) return false;
  std::string_view name = msg.substr(0, open);
  if (size_t colon = name.rfind(": "); colon != std::string_view::npos) name.remove_prefix(colon + 2);
  if (size_t stamp = name.rfind("] "); stamp != std::string_view::npos) name.remove_prefix(stamp + 2);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  if (name.empty() || name.size() > 64) return false;
  e.pid = *pid;
  e.comm = std::string(name);
  return true;
}

// " in LIB[BASE+SIZE]" and " likely on CPU C (core K, socket S)", read
// from the end: the kernel prints the crashing file's name before its own
// suffix, and a name may hold any text, "likely on CPU 63 (...)" too. The
// CPU counts only as the line's very end, in the kernel's exact form.
void LibraryAndCpu(std::string_view msg, HardwareEvent& e) {
  while (!msg.empty() && (msg.back() == ' ' || msg.back() == '\r' || msg.back() == '\n')) msg.remove_suffix(1);
  constexpr std::string_view kLikely = " likely on CPU ";
  if (size_t at = msg.rfind(kLikely); at != std::string_view::npos) {
    std::string_view tail = msg.substr(at + kLikely.size());
    std::string_view cpu = Run(tail, 0, kDigits);
    std::string_view rest = tail.substr(cpu.size());
    std::string_view core, socket;
    if (rest.rfind(" (core ", 0) == 0) {
      core = Run(rest, 7, kDigits);
      rest = rest.substr(7 + core.size());
      if (rest.rfind(", socket ", 0) == 0) {
        socket = Run(rest, 9, kDigits);
        rest = rest.substr(9 + socket.size());
      }
    }
    if (rest == ")" && !cpu.empty() && !core.empty() && !socket.empty()) {
      e.cpu = Int(cpu);
      e.core = Int(core);
      e.socket = Int(socket);
      msg = msg.substr(0, at);
    }
  }
  // What is left ends in "[BASE+SIZE]" when the kernel named a file.
  if (msg.empty() || msg.back() != ']') return;
  size_t open = msg.rfind('[');
  if (open == std::string_view::npos) return;
  size_t in = msg.rfind(" in ", open);
  if (in != std::string_view::npos && open - in - 4 <= 255) e.library = std::string(msg.substr(in + 4, open - in - 4));
}

// "0000:3b:00" of an Xid line ("Xid (PCI:0000:3b:00)"), "0000:03:00.0" of an amdgpu line.
std::string PciAddress(std::string_view msg, std::string_view after) {
  size_t at = msg.find(after);
  if (at == std::string_view::npos) return {};
  std::string_view id = Run(msg, at + after.size(), "0123456789abcdefABCDEF:.");
  while (!id.empty() && (id.back() == ':' || id.back() == '.')) id.remove_suffix(1);
  return id.size() >= 7 ? std::string(id) : std::string();
}

// EDAC's error reports: a count of corrected (CE) or uncorrected (UE)
// errors, or an error named as one.
bool IsEdacError(std::string_view msg) {
  if (Has(msg, " CE ") || Has(msg, " UE ") || Has(msg, "ERROR")) return true;
  return Has(msg, " error") && !Has(msg, "error reporting");
}

// The lines amdgpu prints under a page fault: its status register and
// fields (GCVM_L2_PROTECTION_FAULT_STATUS, Faulty UTCL2 client ID,
// MORE_FAULTS, WALKER_ERROR, PERMISSION_FAULTS, MAPPING_ERROR, RW), MI300's
// "cookie node_id N fault from die AID0.XCD1", the address, and the process
// when the driver prints it apart (" Process ...", amdgpu-dkms's " for
// process ... )").
bool IsPageFaultDecode(std::string_view msg) {
  for (std::string_view field : {"PROTECTION_FAULT_STATUS", "Faulty UTCL2 client ID", "MORE_FAULTS", "WALKER_ERROR",
                                 "PERMISSION_FAULTS", "MAPPING_ERROR", "cookie node_id", "fault from die",
                                 "in page starting at address "})
    if (Has(msg, field)) return true;
  size_t colon = msg.find_last_of(':');
  std::string_view rest = msg.substr(colon == std::string_view::npos ? 0 : colon + 1);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  return rest.rfind("RW: ", 0) == 0;
}

// "NAME pid N thread NAME pid M" after "for process " or " Process ".
void ProcessOfPageFault(std::string_view rest, HardwareEvent& e) {
  e.comm = std::string(rest.substr(0, std::min(rest.find(" pid "), size_t{64})));
  e.pid = Int(After(rest, " pid ", kDigits));
  if (!e.pid || e.pid == 0) e.pid.reset(), e.comm.clear();  // "for process  pid 0": the kernel did not know
}

// What one line format makes of a message: not its line (the next format
// is asked), or its line, with the event it reports or none (a driver's
// start-up and status lines are its own, and no event).
struct LineMatch {
  bool matched = false;
  std::optional<HardwareEvent> event;
};
LineMatch NotMine() { return {}; }
LineMatch Event(HardwareEvent e) { return {true, std::move(e)}; }
LineMatch NoEvent() { return {true, std::nullopt}; }

// "comm[pid]: segfault at ADDR ip ... error N in lib[...] likely on CPU N".
LineMatch ReadSegfault(std::string_view msg) {
  size_t at = msg.find("]: segfault at ");
  if (at == std::string_view::npos) return NotMine();
  HardwareEvent e;
  e.kind = EventKind::kSegfault;
  NamePid(msg, at, e);
  std::string_view rest = msg.substr(at);
  e.address = ParseHex(After(rest, "segfault at ", kHexDigits));
  e.detail = "segfault, error " + std::string(After(rest, " error ", kHexDigits));
  LibraryAndCpu(rest, e);
  return Event(std::move(e));
}

// "traps: comm[pid] general protection fault ip:... sp:... error:0".
LineMatch ReadTrap(std::string_view msg) {
  size_t at = msg.find("traps: ");
  if (at == std::string_view::npos || !Has(msg, " ip:")) return NotMine();
  HardwareEvent e;
  e.kind = EventKind::kTrap;
  std::string_view rest = msg.substr(at + 7);
  size_t close = rest.find("] ");
  NamePid(rest, close, e);
  if (close != std::string_view::npos) {
    std::string_view what = rest.substr(close + 2);
    e.detail = std::string(what.substr(0, std::min(what.find(" ip:"), size_t{80})));
  }
  e.address = ParseHex(After(rest, " ip:", kHexDigits));
  LibraryAndCpu(rest.substr(std::min(rest.size(), rest.find(" error:"))), e);
  return Event(std::move(e));
}

// The machine's CPU count, printed at boot: "smp: Brought up 2 nodes, 64
// CPUs".
LineMatch ReadCpuCount(std::string_view msg) {
  size_t at = msg.find("smp: Brought up ");
  if (at == std::string_view::npos) return NotMine();
  std::string_view rest = msg.substr(at);
  size_t comma = rest.find(", ");
  if (comma == std::string_view::npos) return NotMine();
  std::string_view n = Run(rest, comma + 2, kDigits);
  if (n.empty() || rest.substr(comma + 2 + n.size()).rfind(" CPU", 0) != 0) return NotMine();
  HardwareEvent e;
  e.kind = EventKind::kCpuCount;
  e.cpu = Int(n);
  return e.cpu ? Event(std::move(e)) : NotMine();
}

// EDAC reports an error with its count and class ("1 CE memory read
// error", "UE", "HANDLING MCE MEMORY ERROR"); its other lines are the
// driver's start-up ("EDAC MC: Ver: 3.0.0", "Giving out device ...").
LineMatch ReadEdac(std::string_view msg) {
  if (!Has(msg, "EDAC")) return NotMine();
  if (!IsEdacError(msg)) return NoEvent();
  HardwareEvent e;
  e.kind = EventKind::kEdac;
  return Event(std::move(e));
}

// "Memory failure: 0xPFN: ...": the page the kernel took away.
LineMatch ReadMemoryFailure(std::string_view msg) {
  if (!Has(msg, "Memory failure: ")) return NotMine();
  HardwareEvent e;
  e.kind = EventKind::kMemoryFailure;
  if (auto pfn = ParseHex(After(msg, "Memory failure: ", kHexDigits)); pfn && *pfn < (1ull << 52)) e.address = *pfn << 12;
  return Event(std::move(e));
}

// A machine check is reported as one ("[Hardware Error]: ... Machine
// Check", "Machine check events logged"); the mce driver's other lines
// are boot and thermal information ("mce: CPU0: Thermal monitoring
// enabled (TM1)", "mce: CPU supports 32 MCE banks").
LineMatch ReadMachineCheck(std::string_view msg) {
  if (!(Has(msg, "Machine check") || Has(msg, "Hardware Error") || Has(msg, "machine check") ||
        Has(msg, "Machine Check")))
    return NotMine();
  HardwareEvent e;
  e.kind = EventKind::kMce;
  if (size_t at = msg.find("CPU"); at != std::string_view::npos)
    e.cpu = Int(Run(msg, at + 3 + (at + 3 < msg.size() && msg[at + 3] == ' '), kDigits));
  e.bank = Int(After(msg, "Bank ", kDigits));
  return Event(std::move(e));
}

// NVIDIA's "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., text".
LineMatch ReadXid(std::string_view msg) {
  size_t at = msg.find("Xid (");
  if (at == std::string_view::npos) return NotMine();
  HardwareEvent e;
  e.kind = EventKind::kGpuXid;
  e.gpu = PciAddress(msg, "Xid (PCI:");
  std::string_view rest = msg.substr(at);
  size_t colon = rest.find("): ");
  if (colon != std::string_view::npos) {
    rest.remove_prefix(colon + 3);
    e.xid = Int(Run(rest, 0, kDigits));
    e.pid = Int(After(rest, "pid=", kDigits));
    if (size_t n = rest.find("name="); n != std::string_view::npos) {
      std::string_view name = rest.substr(n + 5);
      name = name.substr(0, std::min(name.find(','), size_t{64}));
      if (name != "<unknown>") e.comm = std::string(name);
    }
    // The text after the fields the driver prints first.
    std::string_view text = rest;
    for (std::string_view field : {"pid=", "name="})
      if (size_t f = text.find(field); f != std::string_view::npos) {
        size_t comma = text.find(", ", f);
        text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 2);
      }
    if (e.xid && text.size() == rest.size()) text.remove_prefix(std::min(text.size(), Run(text, 0, kDigits).size() + 2));
    e.detail = std::string(text.substr(0, 120));
  }
  return Event(std::move(e));
}

// ROCr's "comm[pid]: Memory access fault by GPU node-N (Agent handle: ...)
// on address 0x.... Reason: ...".
LineMatch ReadRocrFault(std::string_view msg) {
  size_t at = msg.find("Memory access fault by GPU");
  if (at == std::string_view::npos) return NotMine();
  HardwareEvent e;
  e.kind = EventKind::kGpuMemoryFault;
  NamePid(msg, at >= 2 ? msg.rfind(']', at) : std::string_view::npos, e);
  std::string_view rest = msg.substr(std::min(msg.size(), at + 27));
  e.gpu = std::string(rest.substr(0, std::min(rest.find(' '), size_t{32})));
  e.address = ParseHex(After(rest, "on address ", kHexDigits));
  if (size_t r = rest.find("Reason: "); r != std::string_view::npos) e.detail = std::string(rest.substr(r + 8, 120));
  return Event(std::move(e));
}

// amdgpu's page faults, resets and RAS reports. Anything else amdgpu says
// (start-up, "RAS INFO", ring timeouts of a hung kernel, the words "fault"
// or "ERROR" in a status) is no hardware error on its own.
LineMatch ReadAmdgpu(std::string_view msg) {
  if (!Has(msg, "amdgpu")) return NotMine();
  HardwareEvent e;
  e.gpu = PciAddress(msg, "amdgpu ");
  if (Has(msg, "page fault (")) {
    e.kind = EventKind::kGpuPageFault;
    e.detail = "page fault";
    if (size_t p = msg.find("for process "); p != std::string_view::npos) ProcessOfPageFault(msg.substr(p + 12), e);
    return Event(std::move(e));
  }
  // A page fault's status lines, met without their fault (a log cut
  // before it): they describe that fault, not the hardware.
  if (IsPageFaultDecode(msg)) return NoEvent();
  if (Has(msg, "GPU reset")) {
    e.kind = EventKind::kGpuReset;
    return Event(std::move(e));
  }
  // RAS: ECC errors the GPU corrected or could not, pages retired for
  // them, and the CPER records newer drivers write for each.
  if (Has(msg, "correctable hardware error") || Has(msg, "bad page") || Has(msg, "Bad page") ||
      Has(msg, "retired page") || Has(msg, "CPER")) {
    e.kind = EventKind::kGpuRas;
    return Event(std::move(e));
  }
  return NotMine();
}

// The line formats, asked in this order: the first that takes a message
// decides it.
constexpr LineMatch (*kLineFormats[])(std::string_view) = {
    ReadSegfault, ReadTrap, ReadCpuCount, ReadEdac, ReadMemoryFailure, ReadMachineCheck, ReadXid, ReadRocrFault,
    ReadAmdgpu,
};

// The event a kernel (or journal) message is, or nullopt. Fields the
// message does not name stay empty.
std::optional<HardwareEvent> Classify(std::string_view msg) {
  for (auto read : kLineFormats)
    if (LineMatch m = read(msg); m.matched) return std::move(m.event);
  return std::nullopt;
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

// Parses a log one line at a time, keeping only the events (at
// most kMaxEvents), so that memory follows the events, not the log's size.
class KernelLogParser {
 public:
  KernelLogParser(std::string default_host, int year) : default_host_(std::move(default_host)), year_(year) {}

  void Line(std::string_view line) {
    if (line.size() > kMaxLine) line = line.substr(0, kMaxLine);
    ++log_.lines;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Parsed p = ParseLine(line, year_);
    std::string host = p.host.empty() ? default_host_ : p.host;
    if (FollowsPageFault(p.message, host)) return;
    std::optional<HardwareEvent> e = Classify(p.message);
    if (!e) return;
    if (log_.events.size() >= kMaxEvents) {
      ++dropped_;
      return;
    }
    e->host = std::move(host);
    e->time = p.time;
    e->line = std::string(line.substr(0, 300));
    if (!e->time) ++untimed_;
    if (e->kind == EventKind::kGpuPageFault) last_page_fault_[e->host] = log_.events.size();
    log_.events.push_back(std::move(*e));
  }

  // The lines amdgpu prints after a page fault, which belong to it: the
  // process (" Process NAME pid N thread NAME pid M", on kernels that do
  // not print it on the fault's line) and the address.
  bool FollowsPageFault(std::string_view msg, const std::string& host) {
    size_t process_at = msg.find(" Process ");
    if (process_at == std::string_view::npos && !Has(msg, "page fault (")) process_at = msg.find(" for process ");
    bool process = process_at != std::string_view::npos && Has(msg, " pid ") && Has(msg, " thread ");
    bool page = Has(msg, "in page starting at address ");
    bool decode = Has(msg, "amdgpu") && IsPageFaultDecode(msg);
    if (!process && !page && !decode) return false;
    auto it = last_page_fault_.find(host);
    if (it == last_page_fault_.end()) return decode;  // a status line without its fault: no event either
    HardwareEvent& fault = log_.events[it->second];
    if (std::string gpu = PciAddress(msg, "amdgpu "); !gpu.empty() && gpu != fault.gpu) return decode;
    if (process && !fault.pid) {
      std::string_view rest = msg.substr(process_at);
      rest.remove_prefix(rest.find("rocess ") + 7);
      ProcessOfPageFault(rest, fault);
    }
    if (page && !fault.address) fault.address = ParseHex(After(msg, "in page starting at address ", kHexDigits));
    return true;
  }

  KernelLog Finish() {
    if (untimed_)
      log_.warnings.push_back(std::to_string(untimed_) +
                              " kernel log events have no wall-clock time (raw dmesg); they count for every crash on "
                              "their host");
    if (dropped_)
      log_.warnings.push_back(std::to_string(dropped_) + " kernel log events past the first " +
                              std::to_string(kMaxEvents) + " were not kept");
    return std::move(log_);
  }

 private:
  std::string default_host_;
  int year_;
  KernelLog log_;
  size_t untimed_ = 0, dropped_ = 0;
  std::map<std::string, size_t> last_page_fault_;  // host -> its last amdgpu page fault's event
};

}  // namespace

bool IsHardwareXid(int xid) {
  static const int kHardware[] = {48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 123, 140};
  return std::find(std::begin(kHardware), std::end(kHardware), xid) != std::end(kHardware);
}

bool IsHardwareError(const HardwareEvent& e) {
  switch (e.kind) {
    case EventKind::kGpuXid: return !e.xid || IsHardwareXid(*e.xid);
    case EventKind::kMce:
    case EventKind::kEdac:
    case EventKind::kMemoryFailure:
    case EventKind::kGpuRas: return true;
    case EventKind::kSegfault:
    case EventKind::kTrap:
    case EventKind::kGpuPageFault:
    case EventKind::kGpuReset:
    case EventKind::kGpuMemoryFault:
    case EventKind::kCpuCount: return false;
  }
  return false;
}

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kSegfault: return "segfault";
    case EventKind::kTrap: return "trap";
    case EventKind::kMce: return "mce";
    case EventKind::kMemoryFailure: return "memory-failure";
    case EventKind::kEdac: return "edac";
    case EventKind::kGpuXid: return "gpu-xid";
    case EventKind::kGpuPageFault: return "gpu-amdgpu";
    case EventKind::kGpuReset: return "gpu-reset";
    case EventKind::kGpuRas: return "gpu-ras";
    case EventKind::kGpuMemoryFault: return "gpu-memory-fault";
    case EventKind::kCpuCount: return "cpu-count";
  }
  return "segfault";
}

bool IsGpuEvent(EventKind kind) {
  return kind == EventKind::kGpuXid || kind == EventKind::kGpuPageFault || kind == EventKind::kGpuReset ||
         kind == EventKind::kGpuRas || kind == EventKind::kGpuMemoryFault;
}

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
