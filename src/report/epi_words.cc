#include "report/epi_words.h"

#include <fmt/format.h>

#include "dataset/timestamps.h"

namespace coroner {
namespace {

std::string Percent(double share) { return fmt::format("{:.0f}%", share * 100); }

// 3600 -> "1 hour", 172800 -> "2 days".
std::string Duration(int64_t seconds) {
  auto unit = [](int64_t n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); };
  if (seconds % 86400 == 0) return unit(seconds / 86400, "day");
  if (seconds % 3600 == 0) return unit(seconds / 3600, "hour");
  if (seconds % 60 == 0) return unit(seconds / 60, "minute");
  return unit(seconds, "second");
}

std::string Plural(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string ClusterName(size_t rank) { return "cluster c" + std::to_string(rank + 1); }

std::string AdjustedP(double p) { return fmt::format("{:.1e}", p); }

// "MCE bank 4 on CPU 3 on 2026-03-02", "EDAC error", "memory failure".
std::string MachineErrorWords(const verdict::MachineError& m) {
  std::string w = m.kind == EventKind::kMce ? "MCE" : m.kind == EventKind::kEdac ? "EDAC error" : "memory failure";
  if (m.bank) w += " bank " + std::to_string(*m.bank);
  if (m.cpu) w += " on CPU " + std::to_string(*m.cpu);
  if (m.time) w += " on " + FormatDay(DayOf(*m.time));
  return w;
}

// "RAS uncorrectable ×2, Xid 79 ×1".
std::string GpuErrorList(const verdict::GpuErrors& g) {
  std::string list;
  for (const auto& [kind, n] : g.lines) {
    list += list.empty() ? "" : ", ";
    list += (kind.xid ? "Xid " + std::to_string(*kind.xid) : std::string("RAS uncorrectable")) + " ×" + std::to_string(n);
  }
  return list;
}

std::string GpuName(const gpu_reading::SameGpu& g) { return GpuPlaceWords({g.owner, g.gpu}); }

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

std::string FindingWords(const Finding& f) { return f.reading ? FindingWords(f.attribute, f.value, *f.reading) : ""; }

std::string FindingWords(const std::string& attribute, const std::string& value, const FindingReading& reading) {
  const std::string on = attribute + " " + value;
  return std::visit(
      Overloaded{
          [&](const reading::BeganWith&) { return "began with " + on; },
          [&](const reading::ExplainedBy& e) { return "explained by " + e.attribute + " = " + e.value; },
          [&](const reading::NeverUpLonger& n) { return "never on nodes up more than " + Duration(n.seconds); },
          [&](const reading::OnHostsWithHardwareErrors& h) {
            return Percent(h.share) + " of this cluster on hosts with hardware errors in the " +
                   std::to_string(h.window_days) + " days before — suspect hardware";
          },
          [&](const reading::OnOneMachine& m) {
            return Percent(m.share) + " of this cluster on one " + attribute + " — suspect hardware";
          },
          [&](const reading::OnlyOn&) { return "only on " + on; },
          [&](const reading::MostlyOn& m) {
            std::string s = Percent(m.share) + " of this cluster on " + on + " (fleet: " + Percent(m.baseline_share) + ")";
            if (m.rate_ratio) s += fmt::format("; {:.1f} times the crashes per host-day elsewhere", *m.rate_ratio);
            return s;
          },
      },
      reading);
}

std::string OnsetWords(const ChangeOnset& o) {
  if (o.crash_clock)
    return fmt::format("began with {} {} ({} of the {} crashes before it, {} after; no inventory: judged against the "
                       "other crashes)",
                       o.attribute, o.value, o.crashes_before, o.crashes_before + o.other_crashes_before,
                       o.crashes_after);
  return fmt::format("began with {} {} ({} {} in {:.0f} host-days before, {} after)", o.attribute, o.value,
                     o.crashes_before, o.crashes_before == 1 ? "crash" : "crashes", o.host_days_before,
                     o.crashes_after);
}

std::string CollateralWords(const Cluster& c) {
  if (!c.collateral) return "";
  const Cluster::Collateral& k = *c.collateral;
  std::string who = k.root_rank ? "rank " + std::to_string(*k.root_rank) : "a rank";
  if (!k.root_host.empty()) who += " on host " + k.root_host;
  return "collateral of " + k.of + " (" + who + " died first)";
}

std::string EvidenceWords(const VerdictFact& fact) {
  return std::visit(
      Overloaded{
          [](const verdict::OwnClusters& o) {
            return Plural(o.crashes, "crash", "crashes") + " in " + Plural(o.clusters, "cluster", "clusters") + ", " +
                   std::to_string(o.own) + " of them (mostly) on this " + (o.machine ? "machine" : "host") + " alone";
          },
          [](const verdict::ImpossibleStates& i) {
            return Plural(i.cores, "impossible register state", "impossible register states") +
                   " (rsp off the ABI's alignment, a return address one slot away)";
          },
          [](const verdict::BitFlips& b) {
            return Plural(b.cores, "core with a possible bit flip", "cores with possible bit flips");
          },
          [](const verdict::FreshFromBoot& f) {
            return std::to_string(f.fresh) + " of " + std::to_string(f.with_uptime) +
                   " crashes within an hour of boot: freshly started VMs";
          },
          [](const verdict::CrashLinesOnOneCpu& c) {
            return fmt::format("{} of the {} crash lines in the kernel log that name a CPU name CPU {} (p = {:.1e} "
                               "against {} CPUs)",
                               c.on_cpu, c.lines, c.cpu, c.p, c.cpus);
          },
          [](const verdict::MachineErrors& m) {
            std::string e = Plural(m.count, "machine error", "machine errors") + " in the kernel log";
            for (size_t i = 0; i < m.first.size(); ++i) e += (i ? ", " : ": ") + MachineErrorWords(m.first[i]);
            return e;
          },
          [](const verdict::GpuErrors& g) {
            std::string e = "GPU " + g.gpu + " reported its own errors: " + GpuErrorList(g);
            if (g.followed) e += "; " + Plural(g.followed, "crash", "crashes") + " followed them";
            return e;
          },
          [](const verdict::ClusterFinding& f) {
            return ClusterName(f.cluster) + ": " + FindingWords(f.attribute, f.value, f.reading) + " (adjusted p " +
                   AdjustedP(f.p_adjusted) + ")";
          },
          [](const verdict::AfterHardwareErrors& a) {
            return ClusterName(a.cluster) + ": " + std::to_string(a.crashes) + " of its crashes came within " +
                   std::to_string(a.window_days) + " days after this host's hardware errors (" +
                   FindingWords(a.attribute, a.value, a.reading) + ", adjusted p " + AdjustedP(a.p_adjusted) + ")";
          },
          [](const verdict::GpuRepeatedly& g) {
            return ClusterName(g.cluster) + ": " + std::to_string(g.crashes) + " of its " + std::to_string(g.cores) +
                   " crashes with GPU lines on GPU " + g.gpu + ": same GPU repeatedly";
          },
          [](const verdict::HangRoots& h) {
            return "the odd rank of " + Plural(h.hangs, "hung job", "hung jobs") + " ran here (on " +
                   Plural(h.days, "day", "days") + "): the rank the others waited for";
          },
          [](const verdict::TooFewCrashes& t) {
            return "no verdict: " + Plural(t.crashes, "crash", "crashes") +
                   " and no error record of the machine's own; a verdict on crashes alone needs " +
                   std::to_string(kMinVerdictCrashes) + " on " + std::to_string(kMinVerdictDays) + " days or more";
          },
      },
      fact);
}

namespace {

// A piece of evidence in the verdict's short form.
std::string ShortWords(const VerdictFact& fact) {
  return std::visit(
      Overloaded{
          [](const verdict::OwnClusters& o) {
            return Plural(o.crashes, "crash", "crashes") + " in " + Plural(o.clusters, "cluster", "clusters") + ", " +
                   std::to_string(o.own) + " unrelated";
          },
          [](const verdict::ImpossibleStates& i) { return Plural(i.cores, "impossible state", "impossible states"); },
          [](const verdict::BitFlips& b) { return Plural(b.cores, "possible bit flip", "possible bit flips"); },
          [](const verdict::FreshFromBoot&) { return std::string(); },
          [](const verdict::CrashLinesOnOneCpu& c) {
            return std::to_string(c.on_cpu) + " on CPU " + std::to_string(c.cpu);
          },
          [](const verdict::MachineErrors& m) {
            return m.first.empty() ? std::string() : MachineErrorWords(m.first.front());
          },
          [](const verdict::GpuErrors& g) {
            return "GPU " + g.gpu + " " + GpuErrorList(g) +
                   (g.followed ? " before " + Plural(g.followed, "crash", "crashes") : "");
          },
          [](const verdict::ClusterFinding& f) {
            return std::to_string(f.count) + " of " + std::to_string(f.cluster_crashes) + " crashes of " +
                   ClusterName(f.cluster) + " here";
          },
          [](const verdict::AfterHardwareErrors& a) {
            return std::to_string(a.crashes) + " crashes of " + ClusterName(a.cluster) + " after its hardware errors";
          },
          [](const verdict::GpuRepeatedly& g) {
            return "GPU " + g.gpu + " under " + std::to_string(g.crashes) + " crashes of " + ClusterName(g.cluster);
          },
          [](const verdict::HangRoots& h) { return Plural(h.hangs, "hang", "hangs") + " begun here"; },
          [](const verdict::TooFewCrashes&) { return std::string(); },
      },
      fact);
}

}  // namespace

std::string VerdictWords(const HostVerdict& v) {
  if (!v.suspect) return "";
  std::string out = v.host;
  if (!v.vms.empty()) out += " (" + Plural(v.vms.size(), "VM", "VMs") + ")";
  out += ": ";
  bool first = true;
  for (const auto& e : v.evidence) {
    if (!e.named) continue;
    out += (first ? "" : ", ") + ShortWords(e.fact);
    first = false;
  }
  return out + " — suspect hardware; drain it";
}

std::string GpuPlaceWords(const std::pair<std::string, std::string>& owner_gpu) {
  return owner_gpu.first + " " + owner_gpu.second;
}

std::map<std::string, uint64_t> GpusByName(const GpuEvents& g) {
  std::map<std::string, uint64_t> out;
  for (const auto& [place, n] : g.gpus) out[GpuPlaceWords(place)] += n;
  return out;
}

std::string GpuWords(const GpuEvents& g) {
  if (!g.reading) return "";
  return std::visit(
      Overloaded{
          [](const gpu_reading::SameGpu& s) {
            return std::to_string(s.crashes) + " of " + std::to_string(s.cores) + " on GPU " + GpuName(s) +
                   ": same GPU repeatedly — suspect the GPU";
          },
          [](const gpu_reading::ManyGpus& m) {
            using gpu_reading::Places;
            std::string places = m.kind == Places::kMachines ? Plural(m.places, "machine", "machines")
                                 : m.kind == Places::kHosts  ? Plural(m.places, "host", "hosts")
                                                             : Plural(m.places, "host or machine", "hosts and machines");
            std::string s = std::to_string(m.cores) + " crashes on " + Plural(m.gpus, "GPU", "different GPUs") +
                            " of " + places + " — the application, not a GPU";
            if (m.stands_out)
              s += "; but GPU " + GpuName(*m.stands_out) + " alone has " + std::to_string(m.stands_out->crashes) +
                   ": look at it";
            return s;
          },
      },
      *g.reading);
}

}  // namespace coroner
