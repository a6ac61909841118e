#include "diagnose/peer_failure.h"

#include <array>

namespace coroner {
namespace {

struct Entry {
  const char* words;  // a substring of the message, the type or what()
  const char* name;
};

// The runtimes' own words for "a peer is gone", as they print them.
constexpr std::array<Entry, 16> kCatalogue = {{
    {"Watchdog caught collective operation timeout", "NCCL/RCCL watchdog"},
    {"communicator was aborted", "NCCL/RCCL communicator aborted"},
    {"NCCL communicator encountered error", "NCCL/RCCL communicator error"},
    {"ncclRemoteError", "NCCL/RCCL remote error"},
    {"c10::DistBackendError", "c10::DistBackendError"},
    {"c10::DistNetworkError", "c10::DistNetworkError"},
    {"Connection closed by peer", "gloo peer closed"},
    {"gloo::IoException", "gloo::IoException"},
    {"MPI_ERR_PROC_FAILED", "MPI peer failed"},
    {"ORTE has lost communication", "MPI peer lost"},
    {"Barrier timed out", "JAX/XLA barrier timeout"},
    {"DEADLINE_EXCEEDED", "JAX/XLA coordination deadline"},
    {"coordination service", "JAX/XLA coordination service"},
    {"Connection reset by peer", "ECONNRESET from a peer"},
    {"Broken pipe", "EPIPE to a peer"},
    {"ECONNRESET", "ECONNRESET from a peer"},
}};

}  // namespace

std::optional<std::string> PeerFailure(const Diagnosis& d) {
  for (const std::optional<std::string>* text : {&d.exception_type, &d.exception_what, &d.abort_message}) {
    if (!*text) continue;
    for (const auto& e : kCatalogue)
      if ((*text)->find(e.words) != std::string::npos) return std::string(e.name);
  }
  return std::nullopt;
}

}  // namespace coroner
