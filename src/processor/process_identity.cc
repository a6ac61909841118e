#include "processor/process_identity.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>
#include <type_traits>
#include <unordered_set>

#include "core/core.h"
#include "core/process_strings.h"
#include "diagnose/diagnosis.h"
#include "unwind/backtrace.h"

namespace coroner {
namespace {

// A hidden value shorter than this is not looked for in other strings (a
// "1" or "on" would hide half a report); its own bytes still are.
constexpr size_t kMinHiddenValue = 8;

// Whether a name (a variable, an option, a header, a URL's parameter)
// looks like a secret's: it holds one of kSecretWords, or one of its parts
// (split at '_', '-', '.') is one of kSecretParts or begins with PASS.
// docs/analyze-json.md lists both.
constexpr std::string_view kSecretWords[] = {"TOKEN",   "SECRET",    "PASSW",   "PASSPHRASE", "KEY",
                                             "CREDENTIAL", "AUTH",   "JWT",     "COOKIE",     "SESSION",
                                             "PRIVATE", "SIGNATURE", "BEARER",  "CONNECTION_STRING", "CONNSTR"};
constexpr std::string_view kSecretParts[] = {"PWD", "PAT", "DSN", "SAS", "OTP", "PIN"};

std::string Upper(std::string_view s) {
  std::string upper(s);
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c == '-' || c == '.' ? '_' : c);
  return upper;
}


bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

// Every URL's userinfo ("scheme://user:password@host") hidden.
void HideUrlCredentials(std::string& s) {
  for (size_t scheme = s.find("://"); scheme != std::string::npos; scheme = s.find("://", scheme + 3)) {
    size_t from = scheme + 3;
    size_t end = s.find_first_of("/?#@ \t", from);
    if (end == std::string::npos || s[end] != '@' || end == from) continue;
    s.replace(from, end - from, kHiddenValue);
  }
}

// Every "NAME=value" whose NAME looks secret, where a name may begin (the
// start, after dashes, '?', '&', ';', ',' or a space): its value, to the
// next separator, hidden. One pass: each name is scanned once, and the
// result is built as it goes (an argument may be 128 KiB of pairs).
void HideSecretPairs(std::string& s) {
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    bool starts = i == 0 || std::string_view("?&;, \t").find(s[i - 1]) != std::string_view::npos ||
                  (s[i - 1] == '-' && (i == 1 || s[i - 2] == '-' || s[i - 2] == ' '));
    if (!starts || !IsNameChar(s[i]) || s[i] == '-') continue;
    size_t eq = i;
    while (eq < s.size() && IsNameChar(s[eq])) ++eq;
    size_t name = i;
    i = eq;  // the name's own characters start no other name
    if (eq >= s.size() || s[eq] != '=' || !LooksSecret(std::string_view(s).substr(name, eq - name))) continue;
    size_t end = std::min(s.find_first_of("&;, \t", eq + 1), s.size());
    if (end == eq + 1) continue;
    out.append(s, copied, eq + 1 - copied);
    out += kHiddenValue;
    copied = end;
    i = end - 1;
  }
  if (copied == 0) return;
  out.append(s, copied, std::string::npos);
  s = std::move(out);
}

// "Authorization: Bearer x", "X-Api-Key: x" (curl -H): a secret-looking
// header's value hidden; and any "Bearer x" (one pass, as above).
void HideHeaderAndBearer(std::string& s) {
  size_t colon = s.find(':');
  if (colon != std::string::npos && colon > 0 && s.compare(colon, 3, "://") != 0) {
    std::string_view name = std::string_view(s).substr(0, colon);
    bool header = std::all_of(name.begin(), name.end(), [](char c) { return IsNameChar(c); });
    if (header && LooksSecret(name) && colon + 1 < s.size()) {
      s.replace(colon + 1, std::string::npos, std::string(" ") + std::string(kHiddenValue));
      return;
    }
  }
  std::string upper = Upper(s), out;
  size_t copied = 0;
  for (size_t at = upper.find("BEARER "); at != std::string::npos; at = upper.find("BEARER ", at + 1)) {
    size_t from = at + 7;
    if (from < copied) continue;
    size_t end = std::min(s.find_first_of(" \t", from), s.size());
    if (end == from) continue;
    out.append(s, copied, from - copied);
    out += kHiddenValue;
    copied = end;
  }
  if (copied == 0) return;
  out.append(s, copied, std::string::npos);
  s = std::move(out);
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

bool LooksSecret(std::string_view name) {
  std::string upper = Upper(name);
  for (std::string_view word : kSecretWords)
    if (upper.find(word) != std::string::npos) return true;
  for (size_t start = 0; start <= upper.size();) {
    size_t end = std::min(upper.find('_', start), upper.size());
    std::string_view part(upper.data() + start, end - start);
    if (part.rfind("PASS", 0) == 0) return true;
    for (std::string_view p : kSecretParts)
      if (part == p) return true;
    start = end + 1;
  }
  return false;
}

const std::vector<std::string>& EnvironmentPolicy::BuiltIn() {
  static const std::vector<std::string> kNames = {
      // Slurm
      "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_STEP_ID", "SLURM_PROCID",
      "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NTASKS", "SLURM_NNODES", "SLURMD_NODENAME", "SLURM_JOB_NAME",
      "SLURM_RESTART_COUNT", "SLURM_CLUSTER_NAME",
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

bool HiddenEnvironment::Covers(uint64_t at, std::string_view text, bool cut) const {
  if (at)
    for (auto [start, end] : spans)
      if (at >= start && at < end) return true;
  for (const auto& v : values) {
    if (text.find(v) != std::string_view::npos) return true;
    // A string cut short (gdb's print elements) may end in a value's start:
    // each place its last 8 bytes occur in the value is a candidate.
    if (!cut || text.size() < kMinHiddenValue) continue;
    std::string_view tail = text.substr(text.size() - kMinHiddenValue);
    for (size_t hit = v.find(tail); hit != std::string::npos; hit = v.find(tail, hit + 1)) {
      size_t len = hit + kMinHiddenValue;  // the value's start, up to and with the tail
      if (len <= text.size() && text.compare(text.size() - len, len, v, 0, len) == 0) return true;
    }
  }
  return false;
}

bool HiddenEnvironment::HoldsWord(uint64_t word) const {
  constexpr size_t kMinBytes = 6;
  if (values.empty()) return false;
  char bytes[8];
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>(word >> (8 * i));
  size_t n = 0;
  while (n < 8 && bytes[n] >= 0x20 && bytes[n] < 0x7f) ++n;
  if (n < kMinBytes) return false;
  std::string_view piece(bytes, n);
  // A piece of a path ("/usr/lib") is in every program's memory and in
  // many a variable's value (a search path, a URL): it names a place.
  if (piece.find('/') != std::string_view::npos) return false;
  for (const auto& v : values)
    if (v.find(piece) != std::string::npos) return true;
  return false;
}

namespace {
void Hide(Value& v, const HiddenEnvironment& hidden) {
  // A number of 6 bytes or more may be a word of a string (a hash or a
  // copy reads strings 8 bytes at a time).
  if ((v.kind == Value::Kind::kSigned || v.kind == Value::Kind::kUnsigned) && hidden.HoldsWord(v.bits)) {
    v = Value{Value::Kind::kHidden, false, 0, 0, v.name, {}, {}};
    return;
  }
  if (v.kind == Value::Kind::kPointer) {
    for (auto& pointee : v.children)
      if (pointee.kind == Value::Kind::kChars && hidden.Covers(v.bits, pointee.text, pointee.truncated))
        pointee = Value{Value::Kind::kHidden};
    return;
  }
  if (v.kind == Value::Kind::kChars) {
    if (hidden.Covers(0, v.text, v.truncated)) v = Value{Value::Kind::kHidden, false, 0, 0, v.name, {}, {}};
    return;
  }
  for (auto& child : v.children) Hide(child, hidden);
}
}  // namespace

void HideEnvironmentSecrets(std::vector<Variable>& variables, const HiddenEnvironment& hidden) {
  if (hidden.spans.empty() && hidden.values.empty()) return;
  for (auto& var : variables)
    if (var.value) Hide(*var.value, hidden);
}

void HideEnvironmentSecrets(Diagnosis& d, const HiddenEnvironment& hidden) {
  if (hidden.spans.empty() && hidden.values.empty()) return;
  auto hide = [&](auto& text) {
    if constexpr (std::is_same_v<std::decay_t<decltype(text)>, std::string>) {
      if (hidden.Covers(0, text)) text = std::string(kHiddenEnvironment);
    } else {
      if (text && hidden.Covers(0, *text)) *text = std::string(kHiddenEnvironment);
    }
  };
  hide(d.abort_message);
  hide(d.exception_what);
  for (auto& e : d.evidence) {
    if (auto* x = std::get_if<evidence::AssertionFailed>(&e)) hide(x->message);
    if (auto* x = std::get_if<evidence::MallocAborted>(&e)) hide(x->message);
    if (auto* x = std::get_if<evidence::Terminated>(&e)) hide(x->what);
    if (auto* x = std::get_if<evidence::AbortMessage>(&e)) hide(x->message);
    if (auto* x = std::get_if<evidence::AbortCalled>(&e)) hide(x->message);
  }
  // A spinning thread's word is memory read as a number: not shown when it
  // lies in a hidden variable or holds a piece of a hidden value.
  for (auto& w : d.spin_waits) {
    if (!w.value) continue;
    bool inside = w.word && std::any_of(hidden.spans.begin(), hidden.spans.end(), [&](const auto& span) {
                    return *w.word < span.second && *w.word + w.width > span.first;
                  });
    if (inside || hidden.HoldsWord(*w.value)) {
      w.value.reset();
      w.value_hidden = true;
    }
  }
}

std::string WithoutCredentials(std::string value) {
  HideUrlCredentials(value);
  HideHeaderAndBearer(value);
  HideSecretPairs(value);
  return value;
}

std::vector<std::string> ScrubbedCommandLine(std::vector<std::string> argv) {
  // mysql's and mariadb's clients take their password glued to -p.
  std::string program = argv.empty() ? "" : argv[0].substr(argv[0].rfind('/') + 1);
  bool glued_p = program.rfind("mysql", 0) == 0 || program.rfind("mariadb", 0) == 0;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string& a = argv[i];
    // "--token VALUE": an option that looks secret, without '=', takes the
    // next argument as its value.
    size_t dashes = a.find_first_not_of('-');
    if (i > 0 && dashes != std::string::npos && dashes >= 1 && dashes <= 2 && a.find('=') == std::string::npos &&
        LooksSecret(std::string_view(a).substr(dashes)) && i + 1 < argv.size() && !argv[i + 1].empty() &&
        argv[i + 1][0] != '-') {
      argv[i + 1] = kHiddenValue;
      ++i;
      continue;
    }
    if (glued_p && a.size() > 2 && a.compare(0, 2, "-p") == 0) {
      a = "-p" + std::string(kHiddenValue);
      continue;
    }
    a = WithoutCredentials(std::move(a));
  }
  return argv;
}

std::string ScrubbedPsargs(const std::string& psargs) {
  std::vector<std::string> words;
  for (size_t start = 0; start <= psargs.size();) {
    size_t end = std::min(psargs.find(' ', start), psargs.size());
    words.push_back(psargs.substr(start, end - start));
    start = end + 1;
  }
  std::string out;
  for (const auto& w : ScrubbedCommandLine(std::move(words))) out += (out.empty() ? "" : " ") + w;
  return out;
}

bool EnvironmentPolicy::Keeps(const std::string& name) const {
  static const std::unordered_set<std::string_view> kBuiltIn(BuiltIn().begin(), BuiltIn().end());
  if (kBuiltIn.count(name)) return true;
  if (std::find(host.begin(), host.end(), name) != host.end()) return true;
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
    if (auto cluster = Id(env, "SLURM_CLUSTER_NAME")) job.cluster = *cluster;
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
  // torchelastic's count is torchrun's own restart, or, inside another
  // launcher's job, a restart within it: never hidden behind Slurm's.
  if (job.launcher == "torchrun") job.restart = Integer(env, "TORCHELASTIC_RESTART_COUNT");
  else job.elastic_restart = Integer(env, "TORCHELASTIC_RESTART_COUNT");
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
  id.argv = ScrubbedCommandLine(std::move(strings.argv));
  id.environment_read = true;
  // A name set twice has the value getenv returns, the first.
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < strings.envp.size(); ++i) {
    const std::string& entry = strings.envp[i];
    size_t eq = entry.find('=');
    std::string name = entry.substr(0, eq);
    if (eq == std::string::npos || name.empty() || !policy.Keeps(name) || !seen.insert(name).second) {
      ++id.environment_hidden;
      if (i < strings.envp_at.size()) id.hidden.spans.emplace_back(strings.envp_at[i], strings.envp_at[i] + entry.size());
      // A copy of the value may lie anywhere; a value that is a path (PWD,
      // HOME, PATH, `_`) names a place, not a secret, and would hide every
      // file name under it: only its own bytes are hidden.
      if (eq != std::string::npos && entry.size() - eq - 1 >= kMinHiddenValue && entry[eq + 1] != '/')
        id.hidden.values.push_back(entry.substr(eq + 1));
      continue;
    }
    id.environment.emplace_back(std::move(name), WithoutCredentials(entry.substr(eq + 1)));
  }
  id.job = IdentifyJob(id.environment);
  return id;
}

}  // namespace coroner
