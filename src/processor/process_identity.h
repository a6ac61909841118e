// Who the process was: its whole command line, the identity variables of
// its environment, and the job it was a rank of (Slurm, torchrun, MPI,
// JAX), read from the core (core/process_strings.h).
//
// Privacy first: the environment and the command line hold secrets
// (tokens, passwords, cloud keys). Only the variables an EnvironmentPolicy
// keeps ever leave this file; the others are counted. A name that looks
// like a secret's (docs/analyze-json.md, "What is hidden") is kept only
// when the user spells it out exactly, never through a pattern. In what is
// kept, and in the command line, credentials are hidden: a URL's userinfo,
// a secret-looking option's or parameter's value, a secret-looking
// header's value, a bearer token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/byte_view.h"

namespace coroner {

class Core;

struct EnvironmentPolicy {
  // The user's additions to the built-in identity variables: exact names,
  // or prefixes ending in '*' ("POD_*", for Kubernetes' downward API).
  std::vector<std::string> allow;
  // Variables whose value names the host the process ran on (a rules
  // file's [environment] host: Kubernetes' node name from the downward
  // API), first present first; kept like `allow`'s names.
  std::vector<std::string> host;
  bool Keeps(const std::string& name) const;
  static const std::vector<std::string>& BuiltIn();
};

// Whether a variable's name says it holds a credential (TOKEN, SECRET,
// PASSWORD, KEY, …: docs/analyze-json.md, "What is hidden").
bool LooksSecret(std::string_view name);

// What stands where a credential was.
inline constexpr std::string_view kHiddenValue = "<hidden>";

// One value (a kept variable's, an argument) with its credentials hidden.
std::string WithoutCredentials(std::string value);
// The command line with its credentials hidden: WithoutCredentials on each
// argument, the argument after a secret-looking option without '='
// ("--token X"), and mysql's "-pPASSWORD".
std::vector<std::string> ScrubbedCommandLine(std::vector<std::string> argv);
// The core's own 80 bytes of it (NT_PRPSINFO), split at its spaces and
// scrubbed the same way.
std::string ScrubbedPsargs(const std::string& psargs);

// A rank of a distributed job, as its launcher's variables say.
struct JobIdentity {
  std::string launcher;                   // "slurm", "torchrun", "mpi", "jax"
  std::string job_id;                     // the outermost scheduler's job
  std::string cluster;                    // Slurm's cluster (SLURM_CLUSTER_NAME): job ids repeat across clusters
  std::optional<std::string> step;        // Slurm's step
  std::optional<int64_t> restart;         // the launcher's restart count
  // torchelastic's restart count when torchrun runs inside another
  // launcher's job (`srun torchrun`): each elastic restart is a new crash
  // event of the same Slurm job and restart.
  std::optional<int64_t> elastic_restart;
  std::optional<int64_t> rank, world_size, local_rank;
  std::string node;                       // the node the scheduler names
  std::string gpus;                       // "HIP_VISIBLE_DEVICES=3"; empty when none is set
};

// The variables not shown, as a string the analysis shows must neither
// lie in nor hold: where each "NAME=value" lies in the process, and each
// value of 8 bytes or more that is not a path (a copy of it may lie
// anywhere). Never shown.
struct HiddenEnvironment {
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // [start, end) of each string
  std::vector<std::string> values;
  // Whether the string read at `at` (0: where unknown) lies in a hidden
  // variable or holds a hidden value (or, `cut` short, ends in the start of
  // one).
  bool Covers(uint64_t at, std::string_view text, bool cut = false) const;
  // Whether a word (a register, a stack word, an address) holds 6 bytes or
  // more of a hidden value: its bytes in memory order, printable up to the
  // first NUL, without a '/' (a piece of a path names a place), found in
  // a value. An address never passes: its high bytes are NUL and its low
  // ones seldom all printable, and they would have to spell part of a
  // secret too.
  bool HoldsWord(uint64_t word) const;
};

struct ProcessIdentity {
  std::vector<std::string> argv;  // the whole command line, scrubbed (ScrubbedCommandLine); empty when not read
  std::vector<std::pair<std::string, std::string>> environment;  // the kept variables, in the process's order
  size_t environment_hidden = 0;  // variables not kept
  bool environment_read = false;
  std::optional<JobIdentity> job;  // nullopt when the process was no job's rank
  std::string missing;             // why the command line or environment is partial or absent
  HiddenEnvironment hidden;
};

struct Variable;
struct Diagnosis;
// Each string among `variables` (behind a char pointer, a char array, at
// any depth) that HiddenEnvironment::Covers becomes Value::Kind::kHidden.
void HideEnvironmentSecrets(std::vector<Variable>& variables, const HiddenEnvironment& hidden);
// Each of the program's own texts the diagnosis quotes (an assertion's, an
// abort's or malloc's message, an exception's what()) that Covers becomes
// kHiddenEnvironment.
void HideEnvironmentSecrets(Diagnosis& diagnosis, const HiddenEnvironment& hidden);

// `environ`: where glibc's `environ` points now, when the modules tell
// (processor.cc reads it): a program that called setenv has its
// environment there, not in the stack's array.
ProcessIdentity IdentifyProcess(const Core& core, const EnvironmentPolicy& policy = {},
                                std::optional<uint64_t> environ = std::nullopt);

// From kept variables alone (also a crash line's or a sidecar's).
std::optional<JobIdentity> IdentifyJob(const std::vector<std::pair<std::string, std::string>>& environment);

}  // namespace coroner
