// `coroner epi --db FILE` (the epidemiology report) and `coroner demo` (a
// seeded fleet of real cores with planted causes, scanned and reported).
#pragma once

#include <string>
#include <vector>

namespace coroner {

struct EpiCommandOptions {
  std::string db;
  bool json = false;            // the JSON report on stdout instead of the summary
  std::string md, html;         // files to write
  std::string where, rules;
  std::vector<std::string> kernel_logs;
  std::string inventory;        // hosts' placements: rates per host-day
  double incident_window_minutes = 15;  // a job's cores within this of its first crash are one incident
};

// Exit status: 0 done, 1 the dataset could not be read, 2 bad arguments
// (a rules file or --where that does not parse).
int RunEpiCommand(const EpiCommandOptions& options);

// `scenario`: one of kScenarioNames (demo/demo_fleet.h); demo by default.
int RunDemoCommand(const std::string& out_dir, const std::string& scenario);

}  // namespace coroner
