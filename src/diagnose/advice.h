// Advice: the diagnosis in words, for the report. One plain sentence (the
// summary) and the next steps an engineer would take, written from the
// labels the rules decided and a few facts of the fault; no rule reads them
// back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/core.h"
#include "diagnose/diagnosis.h"

namespace coroner {

struct AdviceFacts {
  std::string where;   // the faulting frame's function, else the pc's module and offset
  std::string caller;  // the function of the frame that called it; empty when unknown
  uint64_t pc = 0;     // the fault's pc (the real fault's behind a re-raise)
  SignalInfo signal;      // the fault's signal (the real fault's behind a re-raise)
  SignalInfo delivered;   // the signal the process died of
  std::optional<int> process_pid;
};

// Fills d.summary and d.next_steps from d's labels and `facts`.
void Advise(const AdviceFacts& facts, Diagnosis& d);

}  // namespace coroner
