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
#include <variant>
#include <vector>

#include "dataset/metadata.h"
#include "epi/kernel_log.h"
#include "epi/readings.h"

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
  // did (epi's incidents), whose host is not to blame for it, and for every
  // rank of a hang.
  bool counted = true;
  // The odd rank a hang began with (epi's hang incidents, the first of its
  // odd ranks): no crash of its host's, but a hang its host may have caused.
  bool hang_root = false;
  std::string_view machine;          // the physical machine its sidecar names (used when the inventory does not)
};

// A cluster's finding that points at machines, flagged "suspect hardware":
// one host or machine (attribute `host`, `machine`, ...), or the hosts whose
// hardware errors preceded its crashes (reading OnHostsWithHardwareErrors).
// A verdict takes it as evidence, so that the cluster and the hosts never
// disagree.
struct SuspectFinding {
  size_t cluster = 0;   // rank
  std::string attribute, value;
  FindingReading reading;
  double p_adjusted = 1;
  uint64_t count = 0;   // the cluster's crashes with the value
};

// What a verdict rests on, each piece a fact; the words of each, and of the
// verdict, are written once in report/epi_words.cc.
namespace verdict {
// Crashes in several clusters, `own` of which happen (mostly) on this
// host or machine alone.
struct OwnClusters {
  uint64_t crashes = 0;
  size_t clusters = 0;
  uint64_t own = 0;
  bool machine = false;
};
struct ImpossibleStates {     // cores whose registers compiled code cannot produce
  uint64_t cores = 0;
};
struct BitFlips {             // cores with a pointer one bit from a good one
  uint64_t cores = 0;
};
struct FreshFromBoot {        // crashes within an hour of boot, of those with an uptime
  uint64_t fresh = 0, with_uptime = 0;
};
// The kernel's crash lines naming one CPU far more than chance (binomial,
// Bonferroni over the CPUs).
struct CrashLinesOnOneCpu {
  int cpu = 0;
  uint64_t on_cpu = 0, lines = 0, cpus = 0;
  double p = 1;
};
struct MachineError {         // one of the host's MCE, EDAC or memory-failure lines
  EventKind kind = EventKind::kMce;
  std::optional<int> bank, cpu;
  std::optional<int64_t> time;
};
struct MachineErrors {
  uint64_t count = 0;
  std::vector<MachineError> first;  // the first three
};
// A GPU's own error lines, by kind: RAS (xid unset) or an Xid number.
struct GpuErrorKind {
  std::optional<int> xid;
  auto operator<=>(const GpuErrorKind&) const = default;
};
struct GpuErrors {
  std::string gpu;
  std::map<GpuErrorKind, uint64_t> lines;
  uint64_t followed = 0;      // crashes joined to its lines
};
// A cluster's finding (SuspectFinding) that names this host or machine.
struct ClusterFinding {
  size_t cluster = 0;         // rank
  std::string attribute, value;
  FindingReading reading;
  double p_adjusted = 1;
  uint64_t count = 0, cluster_crashes = 0;
};
// A cluster's crashes on this host within the window after its hardware errors.
struct AfterHardwareErrors {
  size_t cluster = 0;
  uint64_t crashes = 0;
  int window_days = 0;
  std::string attribute, value;
  FindingReading reading;
  double p_adjusted = 1;
};
// A cluster whose crashes' GPU lines name this GPU again and again.
struct GpuRepeatedly {
  size_t cluster = 0;
  std::string gpu;
  uint64_t crashes = 0, cores = 0;
};
// Hangs of distributed jobs that began here: the host ran the odd rank,
// the one that waited elsewhere than the rest (epi's hang incidents).
struct HangRoots {
  uint64_t hangs = 0;
  size_t days = 0;  // the days they came on
};
// Evidence that reached the score but not the support a verdict on
// crashes alone needs (kMinVerdictCrashes on kMinVerdictDays).
struct TooFewCrashes {
  uint64_t crashes = 0;
};
}  // namespace verdict
using VerdictFact = std::variant<verdict::OwnClusters, verdict::ImpossibleStates, verdict::BitFlips,
                                 verdict::FreshFromBoot, verdict::CrashLinesOnOneCpu, verdict::MachineErrors,
                                 verdict::GpuErrors, verdict::ClusterFinding, verdict::AfterHardwareErrors,
                                 verdict::GpuRepeatedly, verdict::HangRoots, verdict::TooFewCrashes>;

struct VerdictEvidence {
  VerdictFact fact;
  bool named = false;         // named in the verdict's short form
};

// What a cluster's GPU lines say: one device again and again, or many
// devices (the application's fault).
namespace gpu_reading {
struct SameGpu {
  std::string owner, gpu;     // the host, or the machine, and its GPU
  uint64_t crashes = 0, cores = 0;
};
enum class Places { kHosts, kMachines, kHostsAndMachines };
struct ManyGpus {
  uint64_t cores = 0;
  size_t gpus = 0, places = 0;
  Places kind = Places::kHosts;
  // One GPU that still stands far above the others: its owner, name and crashes.
  std::optional<SameGpu> stands_out;
};
}  // namespace gpu_reading
using GpuReading = std::variant<gpu_reading::SameGpu, gpu_reading::ManyGpus>;

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
  bool suspect = false;               // the score reached kSuspectScore, with support: drain it
  std::vector<VerdictEvidence> evidence;
  uint64_t crashes = 0;
  std::map<int, uint64_t> cpus;       // the kernel's segfault and trap lines per CPU
};

// The GPUs a cluster's crashes ran on, from the GPU lines joined to them.
struct GpuEvents {
  uint64_t cores = 0;                 // crashes with a GPU line joined
  // (host, GPU) -> crashes; (machine, GPU) when the GPU is the machine's.
  std::map<std::pair<std::string, std::string>, uint64_t> gpus;
  std::map<std::string, uint64_t> cpus;  // "host CPU N" -> crashes (from segfault lines)
  std::optional<GpuReading> reading;  // none with too few crashes or no pattern
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
