#include "epi/hardware_verdicts.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "dataset/attribute_keys.h"
#include "dataset/timestamps.h"
#include "epi/statistics.h"
#include "text/string_map.h"

namespace coroner {
namespace {

constexpr int64_t kDaySeconds = kSecondsPerDay;
// A GPU error may precede the runtime's abort by longer than the kernel's
// own line precedes a crash.
constexpr int64_t kGpuJoinSeconds = 60;

bool IsGpuLine(const HardwareEvent& e) { return IsGpuEvent(e.kind); }
bool IsCrashLine(const HardwareEvent& e) { return e.kind == EventKind::kSegfault || e.kind == EventKind::kTrap; }
bool IsMachineError(const HardwareEvent& e) {
  return e.kind == EventKind::kMce || e.kind == EventKind::kEdac || e.kind == EventKind::kMemoryFailure;
}
bool IsGpuHardwareError(const HardwareEvent& e) {
  return (e.kind == EventKind::kGpuXid && e.xid && IsHardwareXid(*e.xid)) || e.kind == EventKind::kGpuRas;
}

// Which physical machine a host ran on at a time: the inventory's `machine`
// column, else the machine the crash's own sidecar names; empty when
// neither says.
class Placements {
 public:
  explicit Placements(const Inventory* inventory) {
    if (!inventory) return;
    for (const auto& row : inventory->rows())
      for (const auto& [k, v] : row.columns)
        if (k == "machine" && !v.empty()) spans_[row.host].push_back({row.valid_from, row.valid_to, v});
  }
  std::string_view MachineOf(std::string_view host, std::optional<int64_t> t, std::string_view fallback = {}) const {
    auto it = spans_.find(host);
    if (it != spans_.end() && t)
      for (const auto& s : it->second)
        if ((!s.from || *s.from <= *t) && (!s.to || *t < *s.to)) return s.machine;
    return fallback;
  }

 private:
  struct Span {
    std::optional<int64_t> from, to;
    std::string machine;
  };
  StringMap<std::vector<Span>> spans_;
};

// A crash's own kernel lines: the CPU its segfault or trap line names, the
// GPUs its GPU lines name.
struct CrashLines {
  std::optional<int> cpu;
  std::set<std::string> gpus;
};

// The lines of the crashes that have any (few, in a fleet of millions).
class JoinedLines {
 public:
  const CrashLines& Of(size_t crash) const {
    static const CrashLines kNone;
    auto it = lines_.find(crash);
    return it == lines_.end() ? kNone : it->second;
  }
  CrashLines& Add(size_t crash) { return lines_[crash]; }
  std::unordered_map<size_t, CrashLines>& All() { return lines_; }

 private:
  std::unordered_map<size_t, CrashLines> lines_;
};

// Joins each line with a pid to the crash of its host and pid within
// kJoinSeconds (a GPU line from kGpuJoinSeconds before); a GPU line without
// a pid (older NVIDIA drivers) to its host's crash within kJoinSeconds.
JoinedLines JoinLines(const std::vector<CrashFacts>& crashes, const std::vector<HardwareEvent>& events,
                                  uint64_t& joined_lines) {
  std::unordered_map<std::string, std::vector<const HardwareEvent*>> by_pid, gpu_by_host;
  for (const auto& e : events) {
    if (!e.time || !(IsCrashLine(e) || IsGpuLine(e))) continue;
    if (e.pid) by_pid[e.host + '\t' + std::to_string(*e.pid)].push_back(&e);
    else if (IsGpuLine(e)) gpu_by_host[e.host].push_back(&e);
  }
  // In time order, so that a crash looks at the lines of its window only.
  auto by_time = [](const HardwareEvent* a, const HardwareEvent* b) { return *a->time < *b->time; };
  for (auto& [k, v] : by_pid) std::sort(v.begin(), v.end(), by_time);
  for (auto& [k, v] : gpu_by_host) std::sort(v.begin(), v.end(), by_time);
  auto from = [](const std::vector<const HardwareEvent*>& v, int64_t t) {
    return std::lower_bound(v.begin(), v.end(), t, [](const HardwareEvent* e, int64_t x) { return *e->time < x; });
  };
  JoinedLines out;
  std::set<const HardwareEvent*> joined;
  joined_lines = 0;
  if (by_pid.empty() && gpu_by_host.empty()) return out;  // most fleets: no log, nothing to look up per crash
  for (size_t i = 0; i < crashes.size(); ++i) {
    const CrashFacts& c = crashes[i];
    if (c.host.empty() || !c.time) continue;
    auto take = [&](const HardwareEvent* e, int64_t before) {
      int64_t dt = *e->time - *c.time;
      if (dt < -before || dt > kJoinSeconds) return;
      joined.insert(e);
      if (IsCrashLine(*e) && e->cpu && !out.Of(i).cpu) out.Add(i).cpu = e->cpu;
      if (IsGpuLine(*e) && !e->gpu.empty()) out.Add(i).gpus.insert(e->gpu);
    };
    if (c.pid)
      if (auto it = by_pid.find(std::string(c.host) + '\t' + std::to_string(*c.pid)); it != by_pid.end())
        for (auto e = from(it->second, *c.time - kGpuJoinSeconds);
             e != it->second.end() && *(*e)->time <= *c.time + kJoinSeconds; ++e)
          take(*e, IsGpuLine(**e) ? kGpuJoinSeconds : kJoinSeconds);
    if (auto it = gpu_by_host.find(std::string(c.host)); it != gpu_by_host.end())
      for (auto e = from(it->second, *c.time - kJoinSeconds);
           e != it->second.end() && *(*e)->time <= *c.time + kJoinSeconds; ++e)
        take(*e, kJoinSeconds);
  }
  joined_lines = joined.size();
  // ROCr names a GPU by its KFD node ("node-2"), amdgpu by its PCI address:
  // one device, named twice. The PCI address is kept when both are there.
  for (auto& [i, l] : out.All())
    if (std::any_of(l.gpus.begin(), l.gpus.end(), [](const std::string& g) { return g.rfind("node-", 0) != 0; }))
      std::erase_if(l.gpus, [](const std::string& g) { return g.rfind("node-", 0) == 0; });
  return out;
}

// Who a GPU belongs to: the machine under the VM when two or more VMs'
// lines name that GPU of the machine (a device passed through to whichever
// VM runs there), else the host (its lines followed the VM from machine to
// machine, or the host is bare metal).
class GpuOwners {
 public:
  GpuOwners(const Placements& placements, const std::vector<CrashFacts>& crashes,
            const JoinedLines& lines, const std::vector<HardwareEvent>& events)
      : placements_(placements) {
    for (size_t i = 0; i < crashes.size(); ++i)
      for (const auto& gpu : lines.Of(i).gpus)
        if (std::string m = MachineOf(crashes[i]); !m.empty()) vms_[m + '\t' + gpu].insert(std::string(crashes[i].host));
    for (const auto& e : events)
      if (IsGpuLine(e) && !e.gpu.empty())
        if (std::string m(placements.MachineOf(e.host, e.time)); !m.empty() && m != e.host)
          vms_[m + '\t' + e.gpu].insert(e.host);
  }
  // The owner of `gpu` as a line of `host` at `t` names it, and whether
  // that is a machine.
  std::pair<std::string, bool> Owner(const std::string& host, std::optional<int64_t> t, const std::string& gpu,
                                     const std::string& sidecar_machine = "") const {
    std::string m(placements_.MachineOf(host, t, sidecar_machine));
    if (m.empty() || m == host) return {host, false};
    auto it = vms_.find(m + '\t' + gpu);
    return it != vms_.end() && it->second.size() >= 2 ? std::pair{m, true} : std::pair{host, false};
  }
  std::pair<std::string, bool> Owner(const CrashFacts& c, const std::string& gpu) const {
    return Owner(std::string(c.host), c.time, gpu, std::string(c.machine));
  }

 private:
  std::string MachineOf(const CrashFacts& c) const {
    std::string m(placements_.MachineOf(c.host, c.time, c.machine));
    return m == c.host ? "" : m;
  }
  const Placements& placements_;
  std::unordered_map<std::string, std::set<std::string>> vms_;  // "MACHINE\tGPU" -> VMs whose lines name it
};

// A cluster's reading that names one GPU as the cause.
struct GpuSuspect {
  size_t cluster;
  std::string owner, gpu;
  bool machine;
  uint64_t crashes, cores;
};

// Each cluster's GPUs: one device again and again (the device), or many
// devices (the application).
std::vector<GpuSuspect> ReadClusterGpus(const std::vector<CrashFacts>& crashes, const JoinedLines& lines,
                                        const GpuOwners& owners, std::vector<GpuEvents>& clusters) {
  std::set<std::string> machines;  // owners that are machines, for the wording
  for (size_t i = 0; i < crashes.size(); ++i) {
    const CrashFacts& c = crashes[i];
    if (c.cluster >= clusters.size()) continue;
    GpuEvents& g = clusters[c.cluster];
    const CrashLines& own = lines.Of(i);
    if (own.cpu) ++g.cpus[std::string(c.host) + " CPU " + std::to_string(*own.cpu)];
    if (own.gpus.empty()) continue;
    ++g.cores;
    for (const auto& gpu : own.gpus) {
      auto [owner, machine] = owners.Owner(c, gpu);
      if (machine) machines.insert(owner);
      ++g.gpus[{owner, gpu}];
    }
  }
  std::vector<GpuSuspect> suspects;
  for (size_t k = 0; k < clusters.size(); ++k) {
    GpuEvents& g = clusters[k];
    if (g.cores < 3) continue;
    auto top = std::max_element(g.gpus.begin(), g.gpus.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    const auto& [owner, gpu] = top->first;
    uint64_t second = 0;
    std::set<std::string> places_seen;
    size_t on_machines = 0;
    for (const auto& [place, n] : g.gpus) {
      if (place != top->first) second = std::max(second, n);
      on_machines += places_seen.insert(place.first).second && machines.count(place.first);
    }
    size_t n_places = places_seen.size();
    if (top->second >= 3 && top->second * 2 >= g.cores) {
      g.reading = gpu_reading::SameGpu{owner, gpu, top->second, g.cores};
      suspects.push_back({k, owner, gpu, machines.count(owner) > 0, top->second, g.cores});
    } else if (g.gpus.size() >= 3) {
      using gpu_reading::Places;
      gpu_reading::ManyGpus many{g.cores, g.gpus.size(), n_places,
                                 on_machines == n_places ? Places::kMachines
                                 : on_machines == 0      ? Places::kHosts
                                                         : Places::kHostsAndMachines,
                                 std::nullopt};
      if (top->second >= 3 && top->second >= 3 * std::max<uint64_t>(second, 1))
        many.stands_out = gpu_reading::SameGpu{owner, gpu, top->second, g.cores};
      g.reading = std::move(many);
    }
  }
  return suspects;
}

// What one subject, a host or a physical machine, shows.
struct Subject {
  bool machine = false;
  uint64_t crashes = 0, bit_flips = 0, impossible = 0, fresh = 0, with_uptime = 0;
  std::map<size_t, uint64_t> clusters;
  std::set<int64_t> days;                 // the days (UTC) the crashes came on
  uint64_t hang_roots = 0;                // hangs whose odd rank ran here
  std::set<int64_t> hang_days;
  // A machine's VMs whose crashes carry evidence (impossible states, bit
  // flips), and those whose logs carry each GPU's errors.
  std::set<std::string> crash_vms;
  std::map<std::string, std::set<std::string>> gpu_vms;
  std::map<int, uint64_t> cpus;           // the kernel's crash lines per CPU (a host's own log only)
  uint64_t crash_lines = 0;
  verdict::MachineErrors machine_errors;
  std::map<std::string, std::map<verdict::GpuErrorKind, uint64_t>> gpu_errors;  // GPU -> kind -> lines
  std::map<std::string, uint64_t> gpu_crashes;                                  // GPU -> crashes joined to its lines
  // Cluster readings that point here.
  std::vector<VerdictFact> readings;
  bool reading_support = false;           // a finding's own support (>= 5 crashes on >= 2 days) backs one
};

std::set<std::string> VmsOf(const Subject& s) {
  std::set<std::string> vms = s.crash_vms;
  for (const auto& [gpu, v] : s.gpu_vms) vms.insert(v.begin(), v.end());
  return vms;
}

void AddCrash(Subject& s, const CrashFacts& c, const CrashLines& lines) {
  if (c.hang_root) {
    ++s.hang_roots;
    if (c.time) s.hang_days.insert(*c.time / kDaySeconds);
  }
  if (!c.counted) return;
  ++s.crashes;
  ++s.clusters[c.cluster];
  if (c.time) s.days.insert(*c.time / kDaySeconds);
  s.bit_flips += c.bit_flip;
  s.impossible += c.impossible_state;
  if (c.uptime) {
    ++s.with_uptime;
    s.fresh += *c.uptime < 3600;
  }
  for (const auto& gpu : lines.gpus) ++s.gpu_crashes[gpu];
  if (s.machine && (c.bit_flip || c.impossible_state)) s.crash_vms.insert(std::string(c.host));
}

void AddGpuError(Subject& s, const HardwareEvent& e) {
  verdict::GpuErrorKind kind;
  if (e.kind != EventKind::kGpuRas) kind.xid = e.xid;
  ++s.gpu_errors[e.gpu][kind];
  if (s.machine) s.gpu_vms[e.gpu].insert(e.host);
}

// The host's own log: the CPUs of its crash lines and its machine errors.
void AddHostLine(Subject& s, const HardwareEvent& e, std::optional<int> cpus) {
  if (IsCrashLine(e) && e.cpu && *e.cpu >= 0 && *e.cpu < 65536 && (!cpus || *e.cpu < *cpus)) {
    ++s.cpus[*e.cpu];
    ++s.crash_lines;
  } else if (IsMachineError(e)) {
    ++s.machine_errors.count;
    if (s.machine_errors.first.size() < 3) {
      verdict::MachineError m{e.kind, std::nullopt, std::nullopt, e.time};
      if (e.kind == EventKind::kMce) m.bank = e.bank, m.cpu = e.cpu;
      s.machine_errors.first.push_back(m);
    }
  }
}

// A verdict being made: its evidence and score, and whether the machine's
// own error records back it. Each rule below adds to it.
struct Verdict {
  HostVerdict v;
  bool record = false;             // the machine's own error records back the verdict
  void Add(VerdictFact fact, bool named) { v.evidence.push_back({std::move(fact), named}); }
};

// Clusters this subject holds most of: unrelated crashes that (mostly)
// happen nowhere else. Clusters of one core count too: a bad CPU crashes
// anywhere in the code.
void JudgeOwnClusters(const Subject& s, const std::vector<uint64_t>& cluster_size, Verdict& j) {
  uint64_t own = 0;
  for (const auto& [cl, n] : s.clusters) own += cl < cluster_size.size() && n * 2 >= cluster_size[cl];
  if (s.clusters.size() < 2 || own < 1) return;
  j.Add(verdict::OwnClusters{s.crashes, s.clusters.size(), own, s.machine}, own >= 3);
  if (own >= 3) j.v.score += 3;
  else if (own == 2) j.v.score += 1;
}

// What the cores themselves show: register states compiled code cannot
// reach, pointers one bit from good ones, VMs that crash fresh from boot.
void JudgeCoreStates(const Subject& s, Verdict& j) {
  if (s.impossible) {
    j.Add(verdict::ImpossibleStates{s.impossible}, true);
    j.v.score += static_cast<double>(std::min<uint64_t>(s.impossible, 3));
  }
  if (s.bit_flips) {
    j.Add(verdict::BitFlips{s.bit_flips}, true);
    j.v.score += static_cast<double>(std::min<uint64_t>(s.bit_flips, 3));
  }
  if (s.with_uptime >= 3 && s.fresh * 10 >= s.with_uptime * 8) {
    j.Add(verdict::FreshFromBoot{s.fresh, s.with_uptime}, false);
    j.v.score += 1;
  }
}

// The kernel's crash lines naming one CPU far more than chance: the
// host's CPUs are its boot lines' count, else at least the highest CPU
// named and at least 2 (fewer CPUs than the host has makes the test
// weaker, never stronger).
void JudgeCrashCpus(const Subject& s, std::optional<int> cpus, Verdict& j) {
  if (s.crash_lines < 3) return;
  auto top = std::max_element(s.cpus.begin(), s.cpus.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  uint64_t n_cpus = cpus ? static_cast<uint64_t>(*cpus)
                         : std::max<uint64_t>(2, static_cast<uint64_t>(s.cpus.rbegin()->first) + 1);
  double p = std::min(1.0, BinomialGreater(top->second, s.crash_lines, 1.0 / static_cast<double>(n_cpus)) *
                               static_cast<double>(n_cpus));
  if (top->second < 3 || p >= 1e-3) return;
  j.Add(verdict::CrashLinesOnOneCpu{top->first, top->second, s.crash_lines, n_cpus, p}, true);
  j.v.score += 3;
}

// Hangs that began here: a node whose rank is the odd one of job after
// job (a GPU or link that stops answering) stalls them all. Counted as
// hangs, never as crashes.
void JudgeHangRoots(const Subject& s, Verdict& j) {
  if (s.hang_roots < 2) return;
  j.Add(verdict::HangRoots{s.hang_roots, s.hang_days.size()}, s.hang_roots >= 3);
  j.v.score += s.hang_roots >= kMinVerdictCrashes ? kSuspectScore : s.hang_roots >= 3 ? 3 : 1;
}

// The machine's and its GPUs' own error records.
void JudgeErrorRecords(const Subject& s, Verdict& j) {
  if (s.machine_errors.count) {
    j.Add(s.machine_errors, !s.machine_errors.first.empty());
    j.record = true;
    j.v.score += s.machine_errors.count >= 3 ? 3 : 2;
  }
  for (const auto& [gpu, kinds] : s.gpu_errors) {
    uint64_t n = 0;
    for (const auto& [what, k] : kinds) n += k;
    auto joined = s.gpu_crashes.find(gpu);
    uint64_t followed = joined != s.gpu_crashes.end() ? joined->second : 0;
    j.Add(verdict::GpuErrors{gpu, kinds, followed}, n >= 2);
    j.record = true;
    if (n >= 2) j.v.score += followed >= 2 ? 4 : 2;
  }
}

// The verdict, when the score reaches it and something supports it.
// Crashes alone are chance on a host with few of them (a CI VM's three
// crashes in its first half hour): without an error record of the
// machine's own, or a finding that has its own support, a verdict needs
// the findings' minimum support.
void Conclude(const Subject& s, Verdict& j) {
  HostVerdict& v = j.v;
  if (v.evidence.empty() || v.score <= 0 || v.score < kSuspectScore) return;
  bool supported = j.record || s.reading_support ||
                   (s.crashes >= kMinVerdictCrashes && s.days.size() >= kMinVerdictDays) ||
                   (s.hang_roots >= kMinVerdictCrashes && s.hang_days.size() >= kMinVerdictDays);
  if (!supported) {
    j.Add(verdict::TooFewCrashes{v.crashes}, false);
    return;
  }
  v.suspect = true;
}

HostVerdict Judge(const std::string& name, const Subject& s, const std::vector<uint64_t>& cluster_size,
                  std::optional<int> cpus) {
  Verdict j;
  j.v.host = name;
  j.v.machine = s.machine;
  std::set<std::string> vms = VmsOf(s);
  j.v.vms.assign(vms.begin(), vms.end());
  j.v.crashes = s.crashes;
  j.v.cpus = s.cpus;
  JudgeOwnClusters(s, cluster_size, j);
  JudgeCoreStates(s, j);
  JudgeCrashCpus(s, cpus, j);
  JudgeHangRoots(s, j);
  JudgeErrorRecords(s, j);
  // What the clusters say of this subject weighs as much as a verdict's
  // worth of its own evidence (once, however many say it): a cluster and a
  // host never disagree.
  for (const auto& r : s.readings) j.Add(r, true);
  if (!s.readings.empty()) j.v.score += kSuspectScore;
  Conclude(s, j);
  return std::move(j.v);
}


// The cluster readings that point at one subject: findings flagged
// "suspect hardware" (on a host or machine, or on the hosts whose hardware
// errors preceded the crashes) and GPUs that are "same GPU repeatedly".
struct Readings {
  std::map<std::string, Subject> machines, hosts;
};

Readings ReadClusters(const std::vector<CrashFacts>& crashes, const std::vector<HardwareEvent>& events,
                      const std::vector<GpuSuspect>& gpu_suspects, const std::vector<uint64_t>& cluster_size,
                      const VerdictOptions& options) {
  Readings out;
  // Each host's hardware error times, for the hw_errors findings.
  std::unordered_map<std::string, std::vector<int64_t>> error_times;
  for (const auto& e : events)
    if (IsHardwareError(e) && e.time) error_times[e.host].push_back(*e.time);
  for (auto& [h, t] : error_times) std::sort(t.begin(), t.end());
  for (const auto& f : options.findings) {
    if (!std::holds_alternative<reading::OnHostsWithHardwareErrors>(f.reading)) {
      Subject& s = PlaceOfKey(f.attribute) == KeyPlace::kMachine ? out.machines[f.value] : out.hosts[f.value];
      s.readings.push_back(
          verdict::ClusterFinding{f.cluster, f.attribute, f.value, f.reading, f.p_adjusted, f.count, cluster_size[f.cluster]});
      s.reading_support = true;
      continue;
    }
    // Each host with hardware errors before two or more of the cluster's
    // crashes on it.
    std::map<std::string, uint64_t> after_errors;
    int64_t window = static_cast<int64_t>(options.hardware_window_days) * kDaySeconds;
    for (const auto& c : crashes) {
      if (c.cluster != f.cluster || !c.time) continue;
      auto it = error_times.find(std::string(c.host));
      if (it == error_times.end()) continue;
      auto lo = std::lower_bound(it->second.begin(), it->second.end(), *c.time - window);
      after_errors[std::string(c.host)] += lo != it->second.end() && *lo <= *c.time;
    }
    for (const auto& [host, n] : after_errors) {
      if (n < 2) continue;
      Subject& s = out.hosts[host];
      s.readings.push_back(verdict::AfterHardwareErrors{f.cluster, n, options.hardware_window_days, f.attribute, f.value,
                                                        f.reading, f.p_adjusted});
      s.reading_support = true;
    }
  }
  for (const auto& g : gpu_suspects) {
    Subject& s = g.machine ? out.machines[g.owner] : out.hosts[g.owner];
    s.readings.push_back(verdict::GpuRepeatedly{g.cluster, g.gpu, g.crashes, g.cores});
  }
  return out;
}

// What the verdicts' stages share: each crash's lines, who owns each GPU,
// the clusters' sizes.
struct Evidence {
  const std::vector<CrashFacts>& crashes;
  const std::vector<HardwareEvent>& events;
  const JoinedLines& lines;
  const Placements& placements;
  const GpuOwners& owners;
  const std::vector<uint64_t>& cluster_size;
};

// Physical machines, from what their VMs share. A machine is judged when
// two or more of its VMs show evidence there, or a cluster names it;
// evidence of one VM alone stays that VM's (it followed the VM from machine
// to machine, or it is the VM's own). Only a machine with a verdict has a
// row: without one, its VMs' rows show the same evidence. Returns the
// machines with a verdict.
std::set<std::string> JudgeMachines(const Evidence& ev, std::map<std::string, Subject> machines,
                                    std::vector<HostVerdict>& rows) {
  for (auto& [name, s] : machines) s.machine = true;
  for (size_t i = 0; i < ev.crashes.size(); ++i) {
    const CrashFacts& c = ev.crashes[i];
    if (c.host.empty() || c.cluster >= ev.cluster_size.size()) continue;
    std::string_view m = ev.placements.MachineOf(c.host, c.time, c.machine);
    if (m.empty() || m == c.host) continue;
    Subject& s = machines[std::string(m)];
    s.machine = true;
    AddCrash(s, c, ev.lines.Of(i));
  }
  for (const auto& e : ev.events) {
    if (!IsGpuHardwareError(e) || e.gpu.empty()) continue;
    auto [m, machine] = ev.owners.Owner(e.host, e.time, e.gpu);
    if (!machine) continue;
    Subject& s = machines[m];
    s.machine = true;
    AddGpuError(s, e);
  }
  std::set<std::string> judged;
  for (const auto& [name, s] : machines) {
    if (VmsOf(s).size() < 2 && s.readings.empty()) continue;
    HostVerdict v = Judge(name, s, ev.cluster_size, std::nullopt);
    if (!v.suspect) continue;
    judged.insert(name);
    rows.push_back(std::move(v));
  }
  return judged;
}

// Hosts, without what a machine's verdict took: the crashes and GPU errors
// of their time on it.
void JudgeHosts(const Evidence& ev, std::map<std::string, Subject> hosts, const std::set<std::string>& machines,
                std::vector<HostVerdict>& rows) {
  // Millions of crashes on thousands of hosts: each host's subject is
  // looked up by the view of its name (the facts keep the names alive).
  std::unordered_map<std::string_view, Subject*> subject_of;
  for (size_t i = 0; i < ev.crashes.size(); ++i) {
    const CrashFacts& c = ev.crashes[i];
    if (c.host.empty() || c.cluster >= ev.cluster_size.size()) continue;
    if (!machines.empty())
      if (std::string_view m = ev.placements.MachineOf(c.host, c.time, c.machine); !m.empty() && machines.count(std::string(m)))
        continue;
    Subject*& s = subject_of[c.host];
    if (!s) s = &hosts[std::string(c.host)];
    AddCrash(*s, c, ev.lines.Of(i));
  }
  // The CPUs each host has, from its boot lines: a crash line naming a CPU
  // the host does not have is not the kernel's.
  std::map<std::string, int> cpu_count;
  for (const auto& e : ev.events)
    if (e.kind == EventKind::kCpuCount && e.cpu && *e.cpu > 0) cpu_count[e.host] = std::max(cpu_count[e.host], *e.cpu);
  auto cpus_of = [&](const std::string& host) -> std::optional<int> {
    auto it = cpu_count.find(host);
    return it == cpu_count.end() ? std::nullopt : std::optional<int>(it->second);
  };
  for (const auto& e : ev.events) {
    if (IsGpuHardwareError(e) && !e.gpu.empty()) {
      auto [m, machine] = ev.owners.Owner(e.host, e.time, e.gpu);
      if (!machine || !machines.count(m)) AddGpuError(hosts[e.host], e);
    } else if (IsCrashLine(e) || IsMachineError(e)) {
      AddHostLine(hosts[e.host], e, cpus_of(e.host));
    }
  }
  for (const auto& [name, s] : hosts) {
    HostVerdict v = Judge(name, s, ev.cluster_size, cpus_of(name));
    if (v.evidence.empty() || v.score <= 0) continue;
    rows.push_back(std::move(v));
  }
}

}  // namespace

HardwareVerdicts JudgeHardware(const std::vector<CrashFacts>& crashes, const std::vector<HardwareEvent>& events,
                               size_t clusters, const VerdictOptions& options) {
  HardwareVerdicts out;
  out.clusters.resize(clusters);
  std::vector<uint64_t> cluster_size(clusters, 0);
  for (const auto& c : crashes)
    if (c.cluster < clusters && c.counted) ++cluster_size[c.cluster];
  Placements placements(options.inventory);
  JoinedLines lines = JoinLines(crashes, events, out.joined_lines);
  GpuOwners owners(placements, crashes, lines, events);
  std::vector<GpuSuspect> gpu_suspects = ReadClusterGpus(crashes, lines, owners, out.clusters);
  Readings readings = ReadClusters(crashes, events, gpu_suspects, cluster_size, options);
  Evidence ev{crashes, events, lines, placements, owners, cluster_size};
  std::set<std::string> machines = JudgeMachines(ev, std::move(readings.machines), out.hosts);
  JudgeHosts(ev, std::move(readings.hosts), machines, out.hosts);
  std::stable_sort(out.hosts.begin(), out.hosts.end(), [](const HostVerdict& a, const HostVerdict& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.host < b.host;
  });
  return out;
}

}  // namespace coroner
