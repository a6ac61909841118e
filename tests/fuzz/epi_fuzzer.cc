// Fuzzes what `coroner epi` reads besides the dataset: kernel logs, TOML
// rules files and inventories (as the population at risk). The first byte
// picks the parser.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "dataset/metadata.h"
#include "epi/exposure.h"
#include "epi/hardware_verdicts.h"
#include "epi/kernel_log.h"
#include "epi/rules.h"
#include "report/epi_words.h"

namespace {

// Host-days never count a host twice: each host has at most the window's
// days, and the hosts' days add up to the total.
void CheckExposure(const coroner::Inventory& inventory) {
  const int64_t begin = 1790000000, end = begin + 30 * 86400;
  coroner::Exposure exposure(inventory, begin, end);
  double total = exposure.Days(begin, end), sum = 0;
  std::set<std::string> hosts;
  for (const auto& row : inventory.rows()) hosts.insert(row.host);
  for (const auto& h : hosts) {
    double days = exposure.HostDays(h, begin, end);
    if (days < 0 || days > 30 + 1e-9) __builtin_trap();
    sum += days;
    for (const auto& row : inventory.rows()) {
      if (row.host != h) continue;
      for (const auto& [k, v] : row.columns)
        if (exposure.Days(std::string(k), v, begin, end) > total + 1e-6) __builtin_trap();
      if (row.valid_from) (void)exposure.Placed(h, *row.valid_from);
      break;
    }
  }
  if (std::fabs(sum - total) > 1e-6 * (1 + total)) __builtin_trap();
  if (exposure.Hosts(begin, end) > hosts.size()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      coroner::KernelLog log = coroner::ParseKernelLog(text, "host", 2026);
      if (log.events.size() > log.lines) __builtin_trap();  // at most one event a line
      // Every event joined against a crash made to match it: the verdicts
      // never join more lines than there are, and stay within their clusters.
      std::vector<coroner::CrashFacts> crashes;
      for (const auto& e : log.events) {
        if (crashes.size() >= 64) break;
        crashes.push_back({e.host, e.time, std::nullopt, e.pid, crashes.size() % 3, e.address.has_value(),
                           e.cpu.has_value(), e.kind == coroner::EventKind::kGpuXid});
      }
      coroner::HardwareVerdicts v = coroner::JudgeHardware(crashes, log.events, 3);
      if (v.joined_lines > log.events.size() || v.clusters.size() != 3) __builtin_trap();
      // Each verdict says it in words only when it is one.
      for (const auto& h : v.hosts) {
        if (h.suspect && h.score < coroner::kSuspectScore) __builtin_trap();
        if (coroner::VerdictWords(h).empty() == h.suspect) __builtin_trap();
        for (const auto& e : h.evidence) (void)coroner::EvidenceWords(e.fact);
      }
      for (const auto& g : v.clusters) (void)coroner::GpuWords(g);
      break;
    }
    case 1:
      (void)coroner::ParseRules(text);
      break;
    default:
      if (auto inventory = coroner::Inventory::Parse(text); inventory.ok()) CheckExposure(*inventory);
  }
  return 0;
}
