// What epi reads in a finding, decided in the analysis and put in words
// once, in report/epi_words.cc: the typed facts that the hardware verdicts
// take as evidence too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace coroner {

// What a finding means in plain terms: decided here, put in words by
// FindingWords (report/epi_words.h) for every report.
namespace reading {
struct BeganWith {};          // a release-like value that appeared the day the cluster began
struct ExplainedBy {          // the cluster's strongest finding accounts for this one
  std::string attribute, value;
};
struct NeverUpLonger {        // the whole cluster crashed on nodes up less than this
  int64_t seconds;
};
struct OnHostsWithHardwareErrors {  // suspect hardware: hosts whose kernels logged errors before
  double share;
  int window_days;
};
struct OnOneMachine {         // suspect hardware: most of the cluster on one machine
  double share;
};
struct OnlyOn {};             // every core of the cluster has the value
struct MostlyOn {             // most of the cluster has it, far more than the fleet
  double share, baseline_share;
  std::optional<double> rate_ratio;  // crashes per host-day with it against elsewhere
};
}  // namespace reading
using FindingReading = std::variant<reading::BeganWith, reading::ExplainedBy, reading::NeverUpLonger,
                                    reading::OnHostsWithHardwareErrors, reading::OnOneMachine, reading::OnlyOn,
                                    reading::MostlyOn>;

}  // namespace coroner
