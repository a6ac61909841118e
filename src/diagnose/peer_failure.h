// Did this process die because another one did? A rank of a distributed
// job aborts or throws when a peer stops answering: the runtimes say so in
// their own words and exception types, which reach the core as glibc's
// abort message or an uncaught exception's type and what(). A catalogue of
// those words names the runtime that gave up; epi marks such a crash as
// collateral of its job's first crash (epi's incidents).
#pragma once

#include <optional>
#include <string>

#include "diagnose/diagnosis.h"

namespace coroner {

// The catalogue entry the diagnosis's abort message, exception type or
// what() matches ("NCCL/RCCL watchdog", "c10::DistBackendError", ...);
// nullopt when none does.
std::optional<std::string> PeerFailure(const Diagnosis& diagnosis);

}  // namespace coroner
