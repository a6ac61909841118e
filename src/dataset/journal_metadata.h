// What a systemd-coredump journal entry says about its core, as the
// dataset's attributes (docs/dataset.md, "attributes from the journal"):
// the host, boot and machine, the unit, slice and cgroup, the container
// and pod the cgroup path names, the owner, the package, the thread.
#pragma once

#include <string>
#include <string_view>

#include "dataset/metadata.h"
#include "journal/coredump_journal.h"

namespace coroner {

// The container a cgroup path names, for the runtimes whose paths are
// documented: Docker (docker-ID.scope, /docker/ID), Podman (libpod-ID.scope),
// containerd and CRI-O under Kubernetes (kubepods…pod-UID…/cri-containerd-ID,
// crio-ID), and systemd-nspawn (machine-NAME.scope, systemd-nspawn@NAME.service).
// A container id is its first 12 hex digits, as `docker ps` shows it; a
// pod is its UID. Empty fields when the path names none.
struct CgroupContainer {
  std::string runtime;    // docker, podman, containerd, cri-o, kubernetes, systemd-nspawn
  std::string container;  // a short id or a machine's name
  std::string pod;        // a Kubernetes pod's UID
};
CgroupContainer ContainerOfCgroup(std::string_view cgroup);

// When the crash happened, in microseconds since the epoch: systemd-coredump's
// COREDUMP_TIMESTAMP, else the entry's own time (written a moment after).
uint64_t CrashTimeUs(const CoredumpEntry& entry);

// The entry's facts as metadata: attributes under the dataset's keys, the
// crash time (COREDUMP_TIMESTAMP, else the entry's own) with time_source
// "journal", and host_source "journal" with the host.
Metadata JournalMetadata(const CoredumpEntry& entry);

}  // namespace coroner
