#include "dataset/attribute_keys.h"

#include <string>

namespace coroner {
namespace {

using W = KeyWriter;
using R = KeyRole;
using P = KeyPlace;

// Every key coroner gives a meaning (docs/dataset.md, "attributes"). The
// job keys are in the order core_record.cc writes them.
constexpr AttributeKey kKeys[] = {
    // The job a rank belongs to (analyze-json.md's `job`).
    {"launcher", W::kCore, R::kLauncher, P::kNone, false, false, true},
    {"job_id", W::kCore, R::kJobId, P::kNone, false, false, true},
    {"job_step", W::kCore, R::kJobStep, P::kNone, false, false, true},
    {"job_restart", W::kCore, R::kJobRestart, P::kNone, false, false, true},
    {"rank", W::kCore, R::kRank, P::kNone, false, false, true},
    {"world_size", W::kCore, R::kWorldSize, P::kNone, false, false, true},
    {"local_rank", W::kCore, R::kUntested, P::kNone, false, false, true},
    {"job_node", W::kCore, R::kJobNode, P::kNone, false, false, true},
    {"gpus", W::kCore, R::kTested, P::kNone, false, false, true},
    {"job_cluster", W::kCore, R::kJobCluster, P::kNone, false, false, true},
    {"elastic_restart", W::kCore, R::kElasticRestart, P::kNone, false, false, true},
    // The core's own evidence.
    {"possible_bit_flips", W::kCore, R::kBitFlip},
    {"impossible_state", W::kCore, R::kImpossibleState},
    {"peer_failure", W::kCore, R::kPeerFailure},
    {"gpu_state", W::kCore, R::kUntested},
    // A live snapshot's: how long its threads were held, in milliseconds.
    {"stopped_ms", W::kCore, R::kUntested},
    // The host a rules file's [environment] host variable names: `host` carries it.
    {"node_name", W::kCore, R::kUntested},
    {"pid", W::kSource, R::kPid},
    // Values of one core each: never a population's.
    {"time", W::kSource, R::kUntested},
    {"boot_time", W::kSource, R::kUntested},
    {"uptime", W::kSource, R::kUntested},
    {"timestamp", W::kSource, R::kUntested},
    {"path", W::kSource, R::kUntested},
    {"core", W::kSource, R::kUntested},
    // systemd-coredump's journal: a boot, a journal's machine, a cgroup path
    // and a thread are one core's (or one host's) values, not a population's.
    {"boot_id", W::kSource, R::kUntested},
    {"machine_id", W::kSource, R::kUntested},
    {"cgroup", W::kSource, R::kUntested},
    {"tid", W::kSource, R::kUntested},
    // Places: a host (or VM), or the physical machine under it.
    {"host", W::kSource, R::kHost, P::kHost},
    {"host_source", W::kSource, R::kUntested},
    {"hostname", W::kSource, R::kTested, P::kHost},
    {"node", W::kSource, R::kTested, P::kHost},
    {"instance", W::kSource, R::kTested, P::kHost},
    {"vm", W::kSource, R::kTested, P::kHost},
    {"machine", W::kSource, R::kMachine, P::kMachine},
    {"physical_host", W::kSource, R::kMachine, P::kMachine},
    {"hypervisor", W::kSource, R::kMachine, P::kMachine},
    // Releases, and what else a rollout changes host by host.
    {"release", W::kSource, R::kTested, P::kNone, true, true},
    {"version", W::kSource, R::kTested, P::kNone, true, true},
    {"build", W::kSource, R::kTested, P::kNone, true, true},
    {"build_id", W::kSource, R::kTested, P::kNone, true, true},
    {"image", W::kSource, R::kTested, P::kNone, true, true},
    {"commit", W::kSource, R::kTested, P::kNone, true, true},
    // The executable's package note (a sidecar's wins): its version is a release.
    {"package", W::kCore, R::kTested, P::kNone, false, true},
    {"package_version", W::kCore, R::kTested, P::kNone, true, true},
    {"kernel", W::kSource, R::kTested, P::kNone, false, true},
    {"kernel_version", W::kSource, R::kTested, P::kNone, false, true},
    {"os", W::kSource, R::kTested, P::kNone, false, true},
    {"os_version", W::kSource, R::kTested, P::kNone, false, true},
    {"driver", W::kSource, R::kTested, P::kNone, false, true},
    {"firmware", W::kSource, R::kTested, P::kNone, false, true},
    // Derived by epi.
    {"uptime_bucket", W::kEpi, R::kTested},
    {"cpu_time_bucket", W::kEpi, R::kTested},
};

}  // namespace

std::span<const AttributeKey> AttributeKeys() { return kKeys; }

const AttributeKey* FindAttributeKey(std::string_view name) {
  for (const auto& k : kKeys)
    if (k.name == name) return &k;
  return nullptr;
}

KeyRole RoleOfKey(std::string_view name) {
  const AttributeKey* k = FindAttributeKey(name);
  return k ? k->role : KeyRole::kTested;
}

KeyPlace PlaceOfKey(std::string_view name) {
  const AttributeKey* k = FindAttributeKey(name);
  return k ? k->place : KeyPlace::kNone;
}

bool IsReleaseKey(std::string_view name) {
  const AttributeKey* k = FindAttributeKey(name);
  return k && k->release;
}

bool IsWindowedKey(std::string_view name) {
  const AttributeKey* k = FindAttributeKey(name);
  return k && k->windowed;
}

std::string HardwareErrorsKey(int window_days) { return "hw_errors_" + std::to_string(window_days) + "d"; }

}  // namespace coroner
