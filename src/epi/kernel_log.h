// Hardware evidence from kernel logs (`coroner epi --kernel-log FILE...`):
// machine-check and EDAC reports and GPU error reports (NVIDIA Xid, amdgpu
// faults) become per-host events that `epi` tests like any attribute
// ("host had hardware errors in the 7 days before the crash").
//
// Accepted line forms: journalctl's short-iso ("2026-10-14T03:12:00+0000
// host kernel: ..."), RFC 3339 syslog, classic syslog ("Oct 14 03:12:00
// host kernel: ..."; the year is taken from the file's newest crash
// context, see ParseKernelLog), and `dmesg -T` ("[Wed Oct 14 03:12:00
// 2026] ..."). Raw `dmesg` lines ("[12345.678901] ...") have no wall-clock
// time: their events count as "at an unknown time" for the file's host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "source/expected.h"

namespace coroner {

struct HardwareEvent {
  std::string host;
  std::optional<int64_t> time;  // seconds since the epoch; nullopt when the line has none
  std::string kind;             // "mce", "edac", "gpu-xid", "gpu-amdgpu"
  std::string line;             // the log line, cut to 300 bytes
};

struct KernelLog {
  std::vector<HardwareEvent> events;
  std::vector<std::string> warnings;
  size_t lines = 0;
};

// `default_host` is used for lines without a host field (dmesg). `year` is
// the year for syslog lines that carry none.
KernelLog ParseKernelLog(const std::string& text, const std::string& default_host, int year);

// Reads "FILE" (host from the syslog field, else the file name up to its
// first '.') or "HOST=FILE". Lines are capped at 64 KiB, the file at 1 GiB.
Expected<KernelLog> LoadKernelLog(const std::string& spec, int year);

}  // namespace coroner
