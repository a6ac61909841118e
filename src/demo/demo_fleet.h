// Seeded synthetic fleets of real cores for `coroner demo` and the epi
// tests: dozens of hosts over regions, SKUs, kernels, releases and physical
// machines, over weeks, with crash populations planted on known causes (a
// bad machine that only hurts fresh VMs, a crash that arrives with a
// release, one tied to a kernel, GPU errors in the kernel logs) and
// background noise. Every core is a real zoo core (hard-linked, so a fleet
// costs no space); the sidecars, the inventory and the kernel logs carry the
// planted truth.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"

namespace coroner {

// A change of a host attribute on a day, for a fraction of the hosts (a
// release to all of them, a kernel to some), each host at a random time in
// the `spread_hours` from the start of the day.
struct Rollout {
  std::string attribute, value;
  int day = 0;
  double fraction = 1.0;
  int spread_hours = 20;
};

// Hosts of `service` get `sku` with this probability (else a random one):
// a service that lives mostly on one SKU, the confounder of a bad SKU.
struct Affinity {
  std::string service, sku;
  double probability = 1.0;
};

struct PlantedPopulation {
  std::string name;    // what it stands for
  std::string core;    // the zoo variant whose core it is, e.g. "misaligned_stack-O0"
  size_t count = 0;
  int start_day = 0;   // the planted onset
  int end_day = -1;    // inclusive; -1 for the last day
  // Only on hosts where these attributes have these values at the crash
  // ("machine" is the physical machine from the inventory, "hw_errors" =
  // "yes" a host with a GPU error in the 7 days before).
  std::map<std::string, std::string> only;
  int64_t max_uptime_seconds = 0;  // 0: any
  // The cause a correct analysis must find first; empty for background.
  std::string cause_attribute, cause_value;
  // GPU lines in the kernel log before each crash: "xid-hardware" (Xid 79
  // and 48 of the host's GPU 0000:3b:00, the device failing), "xid-app"
  // (Xid 31, an MMU fault, on one of the host's 8 GPUs: the program's bad
  // address), "amd-app" (an amdgpu page fault with its status lines on one
  // of the host's 8 GPUs, in the four forms the driver generations print,
  // and ROCr's memory access fault), "amd-ras" (amdgpu's uncorrectable ECC
  // report of GPU 0000:c1:00.0, then its page fault and reset); empty for none.
  std::string gpu_lines;
  // The cause is named as the change the cluster began with (a release
  // reaching every host), not as a finding within its window.
  bool onset_cause = false;
  // Each crash is a distributed job's: its rank 0's core is this one, the
  // job's other ranks (8 to a host, on other hosts) crash alike at the same
  // time, or give up after it with `collateral_core` (population "NAME
  // (collateral ranks)"). Sidecars carry the job (job_id, rank, ...).
  int ranks = 0;
  bool alike = false;
  std::string collateral_core;
};

struct Scenario {
  std::string name;
  uint64_t seed = 1;
  std::string start_date = "2026-10-01";
  int days = 28;
  int hosts = 60;
  std::vector<std::string> regions, skus, services;
  std::vector<int> region_weights;             // hosts per region in this proportion; empty: as many each
  int machines_per_region = 6;
  std::map<std::string, std::string> initial;  // attribute values every host starts with
  std::vector<Rollout> rollouts;
  std::vector<Affinity> affinities;
  int gpu_error_hosts = 0;                     // hosts whose kernel logs report GPU errors
  // With cpus_per_host > 0 the kernel logs carry the kernel's own line for
  // every crash it prints one for (segfault, traps), naming the CPU it ran
  // on: one of the host's, at random, except on `bad_cpu_host`, where 85%
  // name `bad_cpu` and `machine_checks` MCE lines name it too.
  int cpus_per_host = 0;
  std::string bad_cpu_host;
  int bad_cpu = 0, machine_checks = 0;
  int noise_mce_hosts = 0;                     // other hosts with one corrected machine check
  std::vector<PlantedPopulation> populations;
};

// The demo's fleet and three more with other planted causes.
Scenario DemoScenario();
Scenario GpuScenario();
Scenario RegionScenario();
// An exposure trap (one region has three times the hosts) and a confounder
// (a service that lives mostly on the bad SKU).
Scenario ExposureScenario();
// Hardware: one host whose crashes fall in unrelated clusters, name one CPU
// in the kernel's segfault lines and carry impossible states and a bit
// flip, with machine checks; one GPU, in a physical machine whose VMs come
// and go, whose Xid 79/48 lines precede the runtime's aborts on every VM
// placed there; an application's GPU bug on GPUs everywhere; noise.
Scenario HardwareScenario();
// AMD GPUs and a release: an inference server's own bad kernels fault on
// GPUs of many hosts (the application); one host's GPU reports uncorrectable
// ECC errors before its aborts (the GPU); a crash that arrives with a
// release on the day it reaches every host; boot lines of mce, EDAC and
// amdgpu at every boot.
Scenario AmdScenario();
// Multi-node training jobs over three weeks: a host whose GPU (Xid 79/48)
// fails under rank 0 of 6 jobs of 32 ranks, whose 31 other ranks give up
// after it (uncaught exceptions on other hosts); an application bug every
// rank of 5 jobs of 16 hits at once; background crashes.
Scenario TrainingScenario();

// The scenarios by name, for `coroner demo --scenario`.
inline constexpr const char* kScenarioNames = "demo, gpu, region, exposure, hardware, amd, training";
std::optional<Scenario> ScenarioNamed(const std::string& name);

struct GeneratedFleet {
  std::string cores_dir;                 // cores with sidecars
  // CSV: host, machine, region, sku, service, kernel, release, valid_from,
  // valid_to; a row per placement and attribute change, so the inventory
  // gives the host-days of every value.
  std::string inventory;
  std::vector<std::string> kernel_logs;  // one per host that has any
  size_t cores = 0;
  std::map<std::string, size_t> per_population;
  std::map<std::string, std::string> population_of;  // core path -> population name
  // The day (from the start) of each population's first crash: its start
  // day, or the first day after it with a host that fits.
  std::map<std::string, int> first_day;
};

// Writes the fleet under `out_dir` (which must be empty or absent), taking
// each population's core from `zoo_cores_dir/<core>.core`.
Expected<GeneratedFleet> GenerateFleet(const Scenario& scenario, const std::string& zoo_cores_dir,
                                       const std::string& out_dir);

}  // namespace coroner
