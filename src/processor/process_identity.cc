#include "processor/process_identity.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>
#include <unordered_set>

#include "core/core.h"
#include "core/process_strings.h"

namespace coroner {
namespace {

bool LooksSecret(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  for (const char* word : {"TOKEN", "SECRET", "PASSW", "KEY", "CREDENTIAL"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

std::optional<int64_t> Integer(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  int64_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// A value that names something: set, and not "none" (torchelastic's run id
// when none was given).
std::optional<std::string> Id(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty() || it->second == "none") return std::nullopt;
  return it->second;
}

}  // namespace

const std::vector<std::string>& EnvironmentPolicy::BuiltIn() {
  static const std::vector<std::string> kNames = {
      // Slurm
      "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_STEP_ID", "SLURM_PROCID",
      "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS", "SLURM_NNODES", "SLURMD_NODENAME", "SLURM_JOB_NAME",
      "SLURM_RESTART_COUNT",
      // torchrun / torchelastic
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
      // MPI
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE",
      "PMIX_RANK", "PMIX_NAMESPACE",
      // JAX
      "JAX_PROCESS_ID", "JAX_NUM_PROCESSES", "JAX_COORDINATOR_ADDRESS",
      // GPUs
      "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
      // Kubernetes
      "HOSTNAME"};
  return kNames;
}

bool EnvironmentPolicy::Keeps(const std::string& name) const {
  static const std::unordered_set<std::string_view> kBuiltIn(BuiltIn().begin(), BuiltIn().end());
  if (kBuiltIn.count(name)) return true;
  for (const auto& a : allow) {
    if (a == name) return true;
    if (!a.empty() && a.back() == '*' && name.compare(0, a.size() - 1, a, 0, a.size() - 1) == 0 &&
        !LooksSecret(name))
      return true;
  }
  return false;
}

std::optional<JobIdentity> IdentifyJob(const std::vector<std::pair<std::string, std::string>>& environment) {
  std::map<std::string, std::string> env(environment.begin(), environment.end());
  JobIdentity job;
  // The job is the outermost scheduler's: Slurm's job and step, else the
  // torchelastic run, else the MPI namespace, else JAX's coordinator.
  if (auto id = Id(env, "SLURM_JOB_ID")) {
    job.launcher = "slurm";
    job.job_id = *id;
    job.step = Id(env, "SLURM_STEP_ID");
    job.restart = Integer(env, "SLURM_RESTART_COUNT");
    job.node = env.count("SLURMD_NODENAME") ? env["SLURMD_NODENAME"] : "";
  } else if (auto run = Id(env, "TORCHELASTIC_RUN_ID")) {
    job.launcher = "torchrun";
    job.job_id = *run;
  } else if (auto ns = Id(env, "PMIX_NAMESPACE")) {
    job.launcher = "mpi";
    job.job_id = *ns;
  } else if (auto coordinator = Id(env, "JAX_COORDINATOR_ADDRESS")) {
    job.launcher = "jax";
    job.job_id = *coordinator;
  } else {
    return std::nullopt;
  }
  if (!job.restart) job.restart = Integer(env, "TORCHELASTIC_RESTART_COUNT");
  // The rank is the framework's global rank when set; Slurm's task id
  // otherwise (under `srun torchrun` it numbers nodes, not ranks).
  for (const char* r : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "JAX_PROCESS_ID"})
    if (!job.rank) job.rank = Integer(env, r);
  bool framework_rank = job.rank.has_value();
  if (!job.rank) job.rank = Integer(env, "SLURM_PROCID");
  for (const char* w : {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "JAX_NUM_PROCESSES"})
    if (!job.world_size) job.world_size = Integer(env, w);
  if (!job.world_size && !framework_rank) job.world_size = Integer(env, "SLURM_NTASKS");
  for (const char* l : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"})
    if (!job.local_rank) job.local_rank = Integer(env, l);
  if (!job.local_rank && !framework_rank) job.local_rank = Integer(env, "SLURM_LOCALID");
  if (job.node.empty() && env.count("HOSTNAME")) job.node = env["HOSTNAME"];
  for (const char* g : {"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"})
    if (job.gpus.empty() && env.count(g)) job.gpus = std::string(g) + "=" + env[g];
  return job;
}

ProcessIdentity IdentifyProcess(const Core& core, const EnvironmentPolicy& policy, std::optional<uint64_t> environ) {
  ProcessIdentity id;
  ProcessStrings strings = ReadProcessStrings(core, environ);
  id.missing = std::move(strings.missing);
  if (!strings.found) return id;
  id.argv = std::move(strings.argv);
  id.environment_read = true;
  for (const auto& entry : strings.envp) {
    size_t eq = entry.find('=');
    std::string name = entry.substr(0, eq);
    if (eq == std::string::npos || name.empty() || !policy.Keeps(name)) {
      ++id.environment_hidden;
      continue;
    }
    id.environment.emplace_back(std::move(name), entry.substr(eq + 1));
  }
  id.job = IdentifyJob(id.environment);
  return id;
}

}  // namespace coroner
