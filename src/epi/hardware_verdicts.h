// Hardware verdicts: which hosts and GPUs a crash population points at.
//
// A bad machine shows itself by crashing in ways software rarely does
// together: several unrelated crash signatures on one host, register states
// compiled code cannot produce, pointers one bit away from good ones, one
// CPU that the kernel's segfault lines name far more often than chance, and
// machine checks. A bad GPU shows itself by its own errors (Xid 48, 79, RAS)
// preceding the runtime's aborts, again and again on the same device; an
// application's GPU bug faults on every GPU it runs on.
//
// The kernel logs' lines are joined to the cores of the same crash by host,
// pid and time; lines that match no core stay the host's events.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/metadata.h"
#include "epi/kernel_log.h"

namespace coroner {

// What epi knows of one crash for the verdicts. A fleet has millions: the
// host and machine are views of names the caller keeps for the call.
struct CrashFacts {
  std::string_view host;             // empty when the core has none
  std::optional<int64_t> time, uptime;
  std::optional<int> pid;
  size_t cluster = 0;                // its cluster's rank in EpiResult::clusters
  bool bit_flip = false;             // the core's possible_bit_flips attribute
  bool impossible_state = false;     // the core's impossible_state attribute
  bool gpu_fault = false;            // syndrome gpu-fault
  // An observation of its own: false for a rank that died because another
  // did (epi's incidents), whose host is not to blame for it.
  bool counted = true;
  std::string_view machine;          // the physical machine its sidecar names (used when the inventory does not)
};

// A cluster's finding that points at machines, flagged "suspect hardware":
// one host or machine (attribute `host`, `machine`, ...), or the hosts whose
// hardware errors preceded its crashes (`hw_errors_7d` = "yes"). A verdict
// takes it as evidence, so that the cluster and the hosts never disagree.
struct SuspectFinding {
  size_t cluster = 0;   // rank
  std::string attribute, value, flag;
  double p_adjusted = 1;
  uint64_t count = 0;   // the cluster's crashes with the value
  bool after_hardware_errors = false;  // the hosts with hardware errors before, not one host or machine
};

struct VerdictOptions {
  // Each host's physical machine over time (its `machine` column), may be
  // null: a GPU is then the machine's, whichever VM used it, and evidence
  // that several VMs of one machine share is the machine's.
  const Inventory* inventory = nullptr;
  int hardware_window_days = 7;        // as EpiOptions: the `hw_errors_Nd` findings' window
  std::vector<SuspectFinding> findings;
};

struct HostVerdict {
  // A host, or a physical machine (the inventory's `machine` column, or a
  // sidecar's) when the evidence is shared by several VMs placed on it: a
  // GPU passed through to whichever VM runs there, register corruption in
  // every VM it hosts. Its VMs then have no rows of their own for it.
  std::string host;
  bool machine = false;
  std::vector<std::string> vms;       // for a machine: the VMs its evidence came from
  double score = 0;
  std::string verdict;                // plain English, when the score reaches kSuspectScore; else empty
  std::vector<std::string> evidence;  // each piece, in words
  uint64_t crashes = 0;
  std::map<int, uint64_t> cpus;       // the kernel's segfault and trap lines per CPU
};

// The GPUs a cluster's crashes ran on, from the GPU lines joined to them.
struct GpuEvents {
  uint64_t cores = 0;                 // crashes with a GPU line joined
  std::map<std::string, uint64_t> gpus;  // "HOST GPU" -> crashes; "MACHINE GPU" when the inventory names the machine
  std::map<std::string, uint64_t> cpus;  // "host CPU N" -> crashes (from segfault lines)
  std::string reading;                // "same GPU repeatedly ...", "different GPUs ..."; empty with too few
};

struct HardwareVerdicts {
  std::vector<HostVerdict> hosts;     // hosts with any evidence, by score, highest first
  std::vector<GpuEvents> clusters;    // one per cluster, by rank
  uint64_t joined_lines = 0;          // kernel log lines joined to a core
};

// The score at which a host is called suspect hardware.
constexpr double kSuspectScore = 4;
// A verdict from crashes alone (no machine check, EDAC, memory failure or
// GPU error record in the host's log) needs the support epi's findings
// need: this many crashes, on this many days (UTC) or more.
constexpr uint64_t kMinVerdictCrashes = 5;
constexpr size_t kMinVerdictDays = 2;

// Seconds around a crash within which a line of its pid is its line.
constexpr int64_t kJoinSeconds = 10;

// The verdicts, in stages: each crash's own kernel lines are joined to it;
// each cluster's GPUs are read; the evidence of each physical machine that
// two or more of its VMs share is judged first; then each host's, without
// what a machine's verdict took.
HardwareVerdicts JudgeHardware(const std::vector<CrashFacts>& crashes, const std::vector<HardwareEvent>& events,
                               size_t clusters, const VerdictOptions& options = {});

}  // namespace coroner
