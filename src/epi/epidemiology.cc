#include "epi/epidemiology.h"

#include "epi/epi_stages.h"
#include "diagnose/diagnosis.h"

namespace coroner {
namespace {

using namespace epi_stages;

// ---------------------------------------------------------------------------
// Stage 10, hardware: the hosts' and GPUs' verdicts, from the cores' own
// evidence, the kernel logs' lines joined to them and the findings that
// call machines suspect.

void JudgeClusterHardware(const Population& pop, const Incidents& incidents, const Clusters& clusters,
                          const EpiOptions& options, EpiResult& result) {
  size_t n = clusters.order.size();
  std::vector<size_t> rank_of(n);
  for (size_t rank = 0; rank < n; ++rank) rank_of[clusters.order[rank]] = rank;
  std::vector<CrashFacts> facts;
  facts.reserve(pop.crashes.size());
  for (size_t i = 0; i < pop.crashes.size(); ++i) {
    const Crash& c = pop.crashes[i];
    CrashFacts f;
    // A hang's root is no crash of its host's: it feeds no crash verdict,
    // only the hangs that began there.
    f.counted = incidents.counted[i] && !incidents.hang[i];
    if (c.host != UINT32_MAX) f.host = pop.features.features[c.host].second;
    if (c.machine != UINT32_MAX) f.machine = pop.features.features[c.machine].second;
    f.time = c.time;
    f.uptime = c.uptime;
    f.pid = c.pid;
    f.cluster = rank_of[c.cluster];
    f.bit_flip = c.bit_flip;
    f.impossible_state = c.impossible_state;
    f.gpu_fault = SyndromeFromName(result.clusters[f.cluster].syndrome) == Syndrome::kGpuFault;
    facts.push_back(std::move(f));
  }
  for (const auto& inc : incidents.list)
    if (inc.hang && !inc.odd.empty()) facts[inc.root].hang_root = true;
  VerdictOptions verdict;
  verdict.inventory = options.inventory;
  verdict.hardware_window_days = options.hardware_window_days;
  for (size_t rank = 0; rank < n; ++rank)
    for (const auto& f : result.clusters[rank].findings)
      if (f.suspect_hardware)
        verdict.findings.push_back({rank, f.attribute, f.value, *f.reading, f.p_adjusted, f.in_cluster});
  HardwareVerdicts hw = JudgeHardware(facts, options.hardware, n, verdict);
  result.hosts = std::move(hw.hosts);
  result.joined_lines = hw.joined_lines;
  for (size_t rank = 0; rank < n; ++rank) result.clusters[rank].gpu_events = std::move(hw.clusters[rank]);
}

void AddExamples(Dataset& dataset, const Population& pop, const Clusters& clusters, EpiResult& result) {
  for (size_t rank = 0; rank < clusters.order.size() && rank <= 200; ++rank) {  // a report lists no more
    int64_t id = pop.crashes[clusters.Of(rank).front()].id;
    auto q = dataset.Query("SELECT path FROM cores WHERE id = " + std::to_string(id));
    if (q.ok() && !q->rows.empty()) result.clusters[rank].example = q->rows[0][0].text;
  }
}

}  // namespace

const std::vector<std::string>& UptimeBucketNames() {
  static const std::vector<std::string> kNames = {"<1h", "1h-6h", "6h-1d", "1d-2d", "2d-7d", ">=7d"};
  return kNames;
}

Expected<EpiResult> RunEpidemiology(Dataset& dataset, const EpiOptions& options) {
  EpiResult result;
  auto population = LoadPopulation(dataset, options, result);
  if (!population.ok()) return population.error();
  const Population& pop = *population;
  if (pop.crashes.empty()) return result;
  Incidents incidents = FindIncidents(pop, options);
  Calendar calendar = MakeCalendar(pop, incidents, options, result);
  Clusters clusters = MakeClusters(pop, incidents, calendar, options, result);
  // The tests against references without other clusters' causes, to a
  // fixed point: the strong findings name the causes, the causes shape the
  // references, the references the tests (docs/epi-json.md, "The reference").
  References left_out;
  std::vector<Test> tests;
  std::vector<double> adjusted;
  for (int round = 0; round < kReferenceRounds; ++round) {
    tests = MakeTests(pop, incidents, calendar, clusters, options, result, left_out);
    adjusted = AdjustFamily(tests, pop, options.report_p_adjusted, result);
    References next = ReferencesFrom(tests, adjusted, pop);
    if (next == left_out) break;
    left_out = std::move(next);
  }
  AddFindings(tests, adjusted, pop, calendar, clusters, options, result);
  ExplainFindings(pop, incidents, calendar, clusters, options, result);
  FindChangeOnsets(pop, incidents, calendar, clusters, options, result);
  ReadFindings(clusters, options, result);
  JudgeClusterHardware(pop, incidents, clusters, options, result);
  DescribeIncidents(dataset, pop, incidents, clusters, result);
  AddExamples(dataset, pop, clusters, result);
  return result;
}

}  // namespace coroner
