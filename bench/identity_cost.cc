// identity_cost ZOO_CORES...
//
// What reading the command line and environment (processor/
// process_identity.h) costs a scan: for each core, a scan's whole analysis
// of it (AnalyzeInput, as a scan worker runs it) and the identity read
// alone on the same opened core, each repeated, in the same run. Prints the
// per-core times and the share (target: under 5%).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/core.h"
#include "dataset/core_record.h"
#include "processor/process_identity.h"
#include "source/byte_source.h"
#include "symbolize/symbol_provider.h"

int main(int argc, char** argv) {
  using namespace coroner;
  using Clock = std::chrono::steady_clock;
  constexpr int kRounds = 20;
  FileSymbolProvider symbols(SymbolOptions{});
  RecordOptions options;
  double scan_s = 0, identity_s = 0;
  size_t cores = 0, jobs = 0;
  for (int i = 1; i < argc; ++i) {
    std::string path = argv[i];
    AnalyzeInput(path, options, symbols);  // warm: page cache, module files
    auto t0 = Clock::now();
    for (int r = 0; r < kRounds; ++r) AnalyzeInput(path, options, symbols);
    auto t1 = Clock::now();
    auto source = OpenFileSource(path);
    if (!source.ok()) continue;
    auto core = Core::Open(std::move(*source), CoreOptions{.check_module_files = false});
    if (!core.ok()) continue;
    auto t2 = Clock::now();
    for (int r = 0; r < kRounds; ++r) jobs += IdentifyProcess(**core).job.has_value();
    auto t3 = Clock::now();
    scan_s += std::chrono::duration<double>(t1 - t0).count();
    identity_s += std::chrono::duration<double>(t3 - t2).count();
    ++cores;
  }
  if (!cores) return 1;
  double per = 1e6 / static_cast<double>(cores * kRounds);
  std::printf("identity: %zu cores x %d: a scan's analysis %.0f us a core, reading the command line and environment "
              "%.1f us a core (%.2f%% of the analysis alone)\n",
              cores, kRounds, scan_s * per, identity_s * per, 100 * identity_s / scan_s);
  return 0;
}
