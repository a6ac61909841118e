// The attribute keys coroner knows, in one table: what each names, who
// writes it, and how epi treats it. The dataset writer and epi read it, so
// that they never disagree on which keys name a machine, which are a job's
// parts, or which change with the calendar. A key not in the table (a
// sidecar's or an inventory's own column) is tested like any other value.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace coroner {

// Who writes a key into the dataset's attributes.
enum class KeyWriter : uint8_t {
  kCore,     // read from the core itself (its diagnosis, its environment); a sidecar may override a job key
  kSource,   // the sidecar, systemd-coredump's xattrs or file name, the inventory
  kEpi,      // derived by epi from the others (buckets, hardware errors); never stored
};

// What epi does with a key's values, decided once per key.
enum class KeyRole : uint8_t {
  kTested,            // tested for over-representation in each cluster
  kUntested,          // a value per core (a time, a pid, a path): never tested
  kBitFlip, kImpossibleState, kPid, kPeerFailure,  // the core's own evidence and identity
  kJobId, kJobStep, kJobRestart, kJobCluster, kElasticRestart, kRank, kWorldSize, kJobNode,  // a job's parts
  kHost,              // the host (or VM) the core came from; tested too
  kMachine,           // the physical machine under the host; tested too
  kLauncher,          // the job's launcher; tested too
};

// The place a key names, for the hardware readings: a cluster concentrated
// on one value of a host or machine key is a hardware suspect, and a
// machine key's value is judged as the physical machine under its VMs.
enum class KeyPlace : uint8_t { kNone, kHost, kMachine };

struct AttributeKey {
  std::string_view name;
  KeyWriter writer;
  KeyRole role = KeyRole::kTested;
  KeyPlace place = KeyPlace::kNone;
  bool release = false;   // a release of the software: its arrival may begin a cluster
  bool windowed = false;  // changes with the calendar (rollouts): tested within a cluster's active window
  bool job = false;       // a job's identity key, read from the core's environment (JobAttributeKeys())
};

std::span<const AttributeKey> AttributeKeys();
// The table's row for `name`, or null for a key it does not know.
const AttributeKey* FindAttributeKey(std::string_view name);

// The role, place and flags of any key (a key the table does not know is
// a tested value that names no place).
KeyRole RoleOfKey(std::string_view name);
KeyPlace PlaceOfKey(std::string_view name);
bool IsReleaseKey(std::string_view name);
bool IsWindowedKey(std::string_view name);

// epi's key for "the host logged hardware errors in the N days before the
// crash": `hw_errors_7d`.
std::string HardwareErrorsKey(int window_days);

}  // namespace coroner
