// Evidence from kernel logs (`coroner epi --kernel-log FILE...`), one event
// per line that says something about a crash or the hardware under it:
//  - the kernel's own lines about a crashing process: `segfault at ADDR ip
//    IP sp SP error N in LIB[BASE+SIZE] likely on CPU C (core K, socket S)`
//    (the CPU part since Linux 6.1) and `traps: PROG[PID] general protection
//    fault ip:... sp:... error:0 in LIB[...]` (and the other traps);
//  - hardware errors: machine checks, `Memory failure:`, EDAC;
//  - GPU errors: NVIDIA `NVRM: Xid (PCI:...): N, pid=..., name=...` (older
//    drivers print no pid), amdgpu page faults (the process on the same line
//    or on a following ` Process NAME pid N thread ...` line, the address on
//    an `in page starting at address` line), `GPU reset`, uncorrectable RAS
//    errors, and ROCr's `Memory access fault by GPU node-N` from a process's
//    output in the journal.
// Hardware and GPU errors are per-host events `epi` tests like any
// attribute ("host had hardware errors in the 7 days before the crash");
// every event with a pid is joined to the core of the same crash (host,
// pid, time) by epi's hardware verdicts (epi/hardware_verdicts.h).
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

#include "base/expected.h"

namespace coroner {

// What a kernel log line reports.
enum class EventKind {
  kSegfault, kTrap,                // the kernel's lines about a crashing process
  kMce, kMemoryFailure, kEdac,     // the machine
  kGpuXid, kGpuPageFault, kGpuReset, kGpuRas, kGpuMemoryFault,  // a GPU (kGpuPageFault: amdgpu's)
  kCpuCount,                       // the boot's "smp: Brought up N nodes, M CPUs": `cpu` is M
};
// "segfault", "trap", "mce", "memory-failure", "edac", "gpu-xid",
// "gpu-amdgpu", "gpu-reset", "gpu-ras", "gpu-memory-fault", "cpu-count".
std::string_view EventKindName(EventKind kind);
bool IsGpuEvent(EventKind kind);

struct HardwareEvent {
  std::string host;
  std::optional<int64_t> time;  // seconds since the epoch; nullopt when the line has none
  EventKind kind = EventKind::kSegfault;
  std::string line;             // the log line, cut to 300 bytes
  // What the line names, when it does.
  std::optional<int> pid;
  std::string comm;             // the process's name
  std::optional<int> cpu, core, socket;  // "likely on CPU C (core K, socket S)"; "CPU N: Machine Check"
  std::optional<int> bank;      // a machine check's bank
  std::string gpu;              // "0000:3b:00" (Xid), "0000:03:00.0" (amdgpu), "node-2" (ROCr)
  std::optional<int> xid;       // the Xid code
  std::optional<uint64_t> address;  // the fault address (segfault, GPU page fault, memory failure's pfn << 12)
  std::string library;          // "libc.so.6" of "in libc.so.6[7f...+1b000]"
  std::string detail;           // "general protection fault", "GPU has fallen off the bus", ...
};

// True for the events that are errors of the machine or its GPUs: machine
// checks, memory failures, EDAC, RAS, Xid codes NVIDIA documents as the
// GPU's own faults (ECC, the bus, NVLink, the GSP: 48, 63, 64, 74, 79, 92,
// 94, 95, ...; an Xid without a code too) and amdgpu's RAS reports (ECC
// errors corrected or not, retired bad pages, CPER records). Not: the
// kernel's account of a crash (segfault, traps), a GPU page fault or MMU
// fault (Xid 31, amdgpu page faults with the status lines under them, ROCr's
// memory access fault: the program's bad address far more often than the
// GPU), a reset, and the drivers' boot and information lines (mce's thermal
// and bank lines, EDAC's version and devices, amdgpu's start-up and "RAS
// INFO", a ring timeout): an mce line counts only as a machine check or
// hardware error, an EDAC line only with an error count (CE, UE) or error.
bool IsHardwareError(const HardwareEvent& e);
bool IsHardwareXid(int xid);

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
