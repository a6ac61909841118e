#include "epi/hardware_verdicts.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "dataset/timestamps.h"
#include "epi/statistics.h"

namespace coroner {
namespace {

bool IsGpuLine(const HardwareEvent& e) { return e.kind.rfind("gpu-", 0) == 0; }
bool IsCrashLine(const HardwareEvent& e) { return e.kind == "segfault" || e.kind == "trap"; }
bool IsMachineError(const HardwareEvent& e) {
  return e.kind == "mce" || e.kind == "edac" || e.kind == "memory-failure";
}
bool IsGpuHardwareError(const HardwareEvent& e) {
  return (e.kind == "gpu-xid" && e.xid && IsHardwareXid(*e.xid)) || e.kind == "gpu-ras";
}

std::string Plural(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

HardwareVerdicts JudgeHardware(const std::vector<CrashFacts>& crashes, const std::vector<HardwareEvent>& events,
                               size_t clusters, const Inventory* inventory) {
  HardwareVerdicts out;
  out.clusters.resize(clusters);

  // Each host's placements on physical machines, from the inventory.
  struct Placement {
    std::optional<int64_t> from, to;
    std::string machine;
  };
  std::unordered_map<std::string, std::vector<Placement>> placements;
  if (inventory)
    for (const auto& row : inventory->rows())
      for (const auto& [k, v] : row.columns)
        if (k == "machine" && !v.empty()) placements[row.host].push_back({row.valid_from, row.valid_to, v});
  // Who owns a GPU a line of `host` at `t` names: the machine under the VM
  // when the inventory says, else the host.
  std::map<std::string, std::set<std::string>> vms_of;  // machine -> hosts its GPU errors came from
  std::set<std::string> machines;
  auto owner = [&](const std::string& host, std::optional<int64_t> t) -> std::string {
    auto it = placements.find(host);
    if (it == placements.end() || !t) return host;
    for (const auto& p : it->second)
      if ((!p.from || *p.from <= *t) && (!p.to || *t < *p.to)) {
        machines.insert(p.machine);
        return p.machine;
      }
    return host;
  };
  std::map<std::string, uint64_t> gpu_faults_on;  // "OWNER\tGPU" -> gpu-fault crashes joined to it

  // Lines with a pid and a time, per host and pid; GPU lines without a pid
  // (older NVIDIA drivers) per host.
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
  auto window = [&](const std::vector<const HardwareEvent*>& v, int64_t from) {
    return std::lower_bound(v.begin(), v.end(), from, [](const HardwareEvent* e, int64_t t) { return *e->time < t; });
  };

  // Per host: its crashes, their clusters and the cores' own evidence.
  struct HostFacts {
    uint64_t crashes = 0, bit_flips = 0, impossible = 0, fresh = 0, with_uptime = 0;
    std::map<size_t, uint64_t> clusters;
    std::set<int64_t> days;  // the days (UTC) the crashes came on
  };
  std::map<std::string, HostFacts> hosts;
  std::vector<uint64_t> cluster_size(clusters, 0);
  for (const auto& c : crashes)
    if (c.cluster < clusters) ++cluster_size[c.cluster];
  std::set<const HardwareEvent*> joined;
  for (const auto& c : crashes) {
    if (c.host.empty() || c.cluster >= clusters) continue;
    HostFacts& h = hosts[c.host];
    ++h.crashes;
    ++h.clusters[c.cluster];
    if (c.time) h.days.insert(*c.time / 86400);
    h.bit_flips += c.bit_flip;
    h.impossible += c.impossible_state;
    if (c.uptime) {
      ++h.with_uptime;
      h.fresh += *c.uptime < 3600;
    }
    if (!c.time) continue;
    // The crash's own lines: same host and pid, within kJoinSeconds (a GPU
    // error may precede the runtime's abort by longer: 60 s).
    std::set<std::string> gpus;
    std::optional<int> cpu;
    auto take = [&](const HardwareEvent* e, int64_t before) {
      int64_t dt = *e->time - *c.time;
      if (dt < -before || dt > kJoinSeconds) return;
      joined.insert(e);
      if (IsCrashLine(*e) && e->cpu && !cpu) cpu = e->cpu;
      if (IsGpuLine(*e) && !e->gpu.empty()) gpus.insert(e->gpu);
    };
    if (c.pid)
      if (auto it = by_pid.find(c.host + '\t' + std::to_string(*c.pid)); it != by_pid.end())
        for (auto e = window(it->second, *c.time - 60); e != it->second.end() && *(*e)->time <= *c.time + kJoinSeconds; ++e)
          take(*e, IsGpuLine(**e) ? 60 : kJoinSeconds);
    if (auto it = gpu_by_host.find(c.host); it != gpu_by_host.end())
      for (auto e = window(it->second, *c.time - kJoinSeconds);
           e != it->second.end() && *(*e)->time <= *c.time + kJoinSeconds; ++e)
        take(*e, kJoinSeconds);
    GpuEvents& g = out.clusters[c.cluster];
    if (cpu) ++g.cpus[c.host + " CPU " + std::to_string(*cpu)];
    if (!gpus.empty()) {
      ++g.cores;
      std::string own = owner(c.host, c.time);
      for (const auto& gpu : gpus) {
        ++g.gpus[own + " " + gpu];
        if (c.gpu_fault) ++gpu_faults_on[own + '\t' + gpu];
      }
    }
  }
  out.joined_lines = joined.size();

  // A cluster's GPUs: one device again and again, or many devices.
  for (auto& g : out.clusters) {
    if (g.cores < 3) continue;
    auto top = std::max_element(g.gpus.begin(), g.gpus.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    uint64_t second = 0;
    std::set<std::string> on_hosts;
    size_t on_machines = 0;
    for (const auto& [gpu, n] : g.gpus) {
      if (gpu != top->first) second = std::max(second, n);
      on_machines += on_hosts.insert(gpu.substr(0, gpu.find(' '))).second && machines.count(gpu.substr(0, gpu.find(' ')));
    }
    std::string places = on_machines == on_hosts.size() ? Plural(on_hosts.size(), "machine", "machines")
                         : on_machines == 0             ? Plural(on_hosts.size(), "host", "hosts")
                                                        : Plural(on_hosts.size(), "host or machine", "hosts and machines");
    if (top->second >= 3 && top->second * 2 >= g.cores) {
      g.reading = std::to_string(top->second) + " of " + std::to_string(g.cores) + " on GPU " + top->first +
                  ": same GPU repeatedly — suspect the GPU";
    } else if (g.gpus.size() >= 3) {
      g.reading = std::to_string(g.cores) + " crashes on " + Plural(g.gpus.size(), "GPU", "different GPUs") +
                  " of " + places + " — the application, not a GPU";
      if (top->second >= 3 && top->second >= 3 * std::max<uint64_t>(second, 1))
        g.reading += "; but GPU " + top->first + " alone has " + std::to_string(top->second) + ": look at it";
    }
  }

  // The hosts' own lines: CPUs of the segfault and trap lines, machine
  // errors, the GPUs' hardware errors.
  std::map<std::string, HostVerdict> verdicts;
  struct Lines {
    std::map<int, uint64_t> cpus;
    uint64_t crash_lines = 0, machine = 0;
    std::vector<std::string> machine_words;
    std::map<std::string, std::map<std::string, uint64_t>> gpu_errors;  // GPU -> "Xid 79" -> n
  };
  std::map<std::string, Lines> lines;
  // The CPUs each host has, from its boot lines: a crash line naming a CPU
  // the host does not have is not the kernel's, and the test weighs the
  // CPUs the machine has, not the largest number a line claims.
  std::map<std::string, int> cpu_count;
  for (const auto& e : events)
    if (e.kind == "cpu-count" && e.cpu && *e.cpu > 0) cpu_count[e.host] = std::max(cpu_count[e.host], *e.cpu);
  for (const auto& e : events) {
    auto known = cpu_count.find(e.host);
    if (IsCrashLine(e) && e.cpu && *e.cpu >= 0 && *e.cpu < 65536 &&
        (known == cpu_count.end() || *e.cpu < known->second)) {
      ++lines[e.host].cpus[*e.cpu];
      ++lines[e.host].crash_lines;
    } else if (IsMachineError(e)) {
      Lines& l = lines[e.host];
      ++l.machine;
      if (l.machine_words.size() < 3) {
        std::string w = e.kind == "mce" ? "MCE" : e.kind == "edac" ? "EDAC error" : "memory failure";
        if (e.kind == "mce" && e.bank) w += " bank " + std::to_string(*e.bank);
        if (e.kind == "mce" && e.cpu) w += " on CPU " + std::to_string(*e.cpu);
        if (e.time) w += " on " + FormatIso8601(*e.time).substr(0, 10);
        l.machine_words.push_back(w);
      }
    } else if (IsGpuHardwareError(e) && !e.gpu.empty()) {
      std::string what = e.kind == "gpu-ras" ? std::string("RAS uncorrectable") : "Xid " + std::to_string(*e.xid);
      std::string own = owner(e.host, e.time);
      if (own != e.host) vms_of[own].insert(e.host);
      ++lines[own].gpu_errors[e.gpu][what];
    }
  }
  std::set<std::string> names;
  for (const auto& [h, f] : hosts) names.insert(h);
  for (const auto& [h, l] : lines) names.insert(h);
  for (const std::string& name : names) {
    HostVerdict v;
    v.host = name;
    std::vector<std::string> words;  // the verdict's short form
    bool record = false;             // the machine's own error records back the verdict
    auto hf = hosts.find(name);
    auto hl = lines.find(name);
    if (hf != hosts.end()) {
      const HostFacts& f = hf->second;
      v.crashes = f.crashes;
      // Clusters this host holds most of: unrelated crashes that (mostly)
      // happen nowhere else. Clusters of one core count too: a bad CPU
      // crashes anywhere in the code.
      uint64_t own = 0;
      for (const auto& [cl, n] : f.clusters) own += n * 2 >= cluster_size[cl];
      if (f.clusters.size() >= 2 && own >= 1) {
        std::string e = Plural(f.crashes, "crash", "crashes") + " in " +
                        Plural(f.clusters.size(), "cluster", "clusters") + ", " + std::to_string(own) +
                        " of them (mostly) on this host alone";
        v.evidence.push_back(e);
        if (own >= 3) v.score += 3, words.push_back(e.substr(0, e.find(',')) + ", " + std::to_string(own) + " unrelated");
        else if (own == 2) v.score += 1;
      }
      if (f.impossible) {
        v.evidence.push_back(Plural(f.impossible, "impossible register state", "impossible register states") +
                             " (rsp off the ABI's alignment, a return address one slot away)");
        v.score += static_cast<double>(std::min<uint64_t>(f.impossible, 3));
        words.push_back(Plural(f.impossible, "impossible state", "impossible states"));
      }
      if (f.bit_flips) {
        v.evidence.push_back(Plural(f.bit_flips, "core with a possible bit flip", "cores with possible bit flips"));
        v.score += static_cast<double>(std::min<uint64_t>(f.bit_flips, 3));
        words.push_back(Plural(f.bit_flips, "possible bit flip", "possible bit flips"));
      }
      if (f.with_uptime >= 3 && f.fresh * 10 >= f.with_uptime * 8) {
        v.evidence.push_back(std::to_string(f.fresh) + " of " + std::to_string(f.with_uptime) +
                             " crashes within an hour of boot: freshly started VMs");
        v.score += 1;
      }
    }
    if (hl != lines.end()) {
      const Lines& l = hl->second;
      v.cpus = l.cpus;
      if (l.crash_lines >= 3) {
        auto top = std::max_element(l.cpus.begin(), l.cpus.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
        // The host's CPUs, as far as its lines show: at least the highest
        // CPU named, and at least 2. Fewer CPUs than the host has makes the
        // test weaker, never stronger.
        auto known = cpu_count.find(name);
        uint64_t n_cpus = known != cpu_count.end()
                              ? static_cast<uint64_t>(known->second)
                              : std::max<uint64_t>(2, static_cast<uint64_t>(l.cpus.rbegin()->first) + 1);
        double p = std::min(1.0, BinomialGreater(top->second, l.crash_lines, 1.0 / static_cast<double>(n_cpus)) *
                                     static_cast<double>(n_cpus));
        if (top->second >= 3 && p < 1e-3) {
          char e[200];
          std::snprintf(e, sizeof e, "%llu of the %llu crash lines in the kernel log that name a CPU name CPU %d (p = %.1e against %llu CPUs)",
                        static_cast<unsigned long long>(top->second), static_cast<unsigned long long>(l.crash_lines),
                        top->first, p, static_cast<unsigned long long>(n_cpus));
          v.evidence.push_back(e);
          v.score += 3;
          words.push_back(std::to_string(top->second) + " on CPU " + std::to_string(top->first));
        }
      }
      if (l.machine) {
        std::string e = Plural(l.machine, "machine error", "machine errors") + " in the kernel log";
        for (size_t i = 0; i < l.machine_words.size(); ++i) e += (i ? ", " : ": ") + l.machine_words[i];
        v.evidence.push_back(e);
        record = true;
        v.score += l.machine >= 3 ? 3 : 2;
        if (!l.machine_words.empty()) words.push_back(l.machine_words[0]);
      }
      for (const auto& [gpu, kinds] : l.gpu_errors) {
        uint64_t n = 0;
        std::string list;
        for (const auto& [what, k] : kinds) {
          n += k;
          list += (list.empty() ? "" : ", ") + what + " ×" + std::to_string(k);
        }
        auto joined_faults = gpu_faults_on.find(name + '\t' + gpu);
        uint64_t faults = joined_faults != gpu_faults_on.end() ? joined_faults->second : 0;
        std::string e = "GPU " + gpu + " reported its own errors: " + list;
        if (faults) e += "; " + Plural(faults, "gpu-fault crash", "gpu-fault crashes") + " followed them";
        v.evidence.push_back(e);
        record = true;
        if (n >= 2) {
          v.score += faults >= 2 ? 4 : 2;
          words.push_back("GPU " + gpu + " " + list + (faults ? " before " + Plural(faults, "GPU abort", "GPU aborts") : ""));
        }
      }
    }
    if (v.evidence.empty() || v.score <= 0) continue;
    if (auto vm = vms_of.find(name); vm != vms_of.end()) v.vms.assign(vm->second.begin(), vm->second.end());
    // Crashes alone are chance on a host with few of them (a CI VM's three
    // crashes in its first half hour): without an error record of the
    // machine's own, a verdict needs the findings' minimum support.
    bool supported = record;
    if (!supported && hf != hosts.end()) {
      const HostFacts& f = hf->second;
      supported = f.crashes >= kMinVerdictCrashes && f.days.size() >= kMinVerdictDays;
    }
    if (v.score >= kSuspectScore && !supported)
      v.evidence.push_back("no verdict: " + Plural(v.crashes, "crash", "crashes") +
                           " and no error record of the machine's own; a verdict on crashes alone needs " +
                           std::to_string(kMinVerdictCrashes) + " on " + std::to_string(kMinVerdictDays) +
                           " days or more");
    if (v.score >= kSuspectScore && supported) {
      v.verdict = name;
      if (!v.vms.empty()) {
        v.verdict += " (the machine under ";
        for (size_t i = 0; i < v.vms.size(); ++i)
          v.verdict += (i == 0 ? "" : i + 1 == v.vms.size() ? " and " : ", ") + v.vms[i];
        v.verdict += ")";
      }
      v.verdict += ": ";
      for (size_t i = 0; i < words.size(); ++i) v.verdict += (i ? ", " : "") + words[i];
      v.verdict += " — suspect hardware; drain it";
    }
    verdicts.emplace(name, std::move(v));
  }
  for (auto& [name, v] : verdicts) out.hosts.push_back(std::move(v));
  std::stable_sort(out.hosts.begin(), out.hosts.end(),
                   [](const HostVerdict& a, const HostVerdict& b) { return a.score > b.score; });
  return out;
}

}  // namespace coroner
