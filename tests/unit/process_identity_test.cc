// Who the process was: the command line and the identity variables read
// from the core, the job they name, and nothing else of the environment.
//  - A real core of a zoo crasher run as a Slurm task would be, with a long
//    command line and secrets in its environment: the whole command line,
//    the job as the variables given say, and no secret in analyze (text,
//    JSON, Markdown), in the dataset's rows or in epi's reports.
//  - Synthetic stacks whose argv/envp block is whole, cut, overwritten,
//    unterminated or 10 MB long: bounded, partial, with the reason.
//  - Which variable wins when several launchers' are set.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <random>

#include "core/core.h"
#include "core/process_strings.h"
#include "processor/process_identity.h"
#include "source/byte_source.h"
#include "unit/run_coroner.h"
#include "unit/synth_core.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Work() {
  static const std::string dir = ::testing::TempDir() + "/identity-test-" + std::to_string(getpid());
  return dir;
}

// ---------------------------------------------------------------------------
// Synthetic stacks: the layout the kernel's exec writes, byte by byte.

constexpr uint64_t kStackTop = 0x7ffd00100000;
constexpr uint64_t AT_PHDR_ = 3, AT_PAGESZ_ = 6, AT_EXECFN_ = 31;

struct Stack {
  std::vector<std::string> argv, envp;
  uint64_t size = 64 << 10;
  // Breakages.
  std::optional<uint64_t> argc_override;
  bool unterminated_last_env = false;
  size_t trailing_nulls = 0;  // after envp's NULL: what each unsetenv leaves
  std::vector<std::pair<uint64_t, std::vector<std::byte>>> other_loads;  // more memory: a heap
  uint64_t top = kStackTop;   // where the stack ends
  Arch arch = Arch::kX86_64;
  uint64_t present = UINT64_MAX;  // bytes of the segment in the core, from its start
};

// argc, argv[], NULL, envp[], NULL, auxv, then the strings, AT_EXECFN's last.
std::vector<std::byte> BuildCore(const Stack& s) {
  const uint64_t stack_top = s.top;
  uint64_t base = stack_top - s.size;
  std::vector<std::byte> mem(s.size);
  // Strings from the top down: "prog" (execfn) at the very top.
  uint64_t at = stack_top - 16;
  auto put_string = [&](const std::string& str, bool terminate = true) {
    at -= str.size() + (terminate ? 1 : 0);
    std::memcpy(mem.data() + (at - base), str.data(), str.size());
    return at;
  };
  uint64_t execfn = put_string("/opt/app/prog");
  std::vector<uint64_t> env_ptrs(s.envp.size()), arg_ptrs(s.argv.size());
  // Written so that envp follows argv in memory, as exec lays them out.
  for (size_t i = s.envp.size(); i-- > 0;)
    env_ptrs[i] = put_string(s.envp[i], !(s.unterminated_last_env && i + 1 == s.envp.size()));
  if (s.unterminated_last_env) {
    // The last string runs into the execfn string's bytes... and past: no NUL
    // anywhere up to the top.
    for (uint64_t a = env_ptrs.back(); a < stack_top; ++a) mem[a - base] = std::byte{'x'};
  }
  for (size_t i = s.argv.size(); i-- > 0;) arg_ptrs[i] = put_string(s.argv[i]);
  at &= ~uint64_t{15};
  std::vector<std::pair<uint64_t, uint64_t>> auxv = {{AT_PHDR_, 0x400040}, {AT_PAGESZ_, 4096}, {AT_EXECFN_, execfn}};
  uint64_t words = 1 + arg_ptrs.size() + 1 + env_ptrs.size() + 1 + s.trailing_nulls + 2 * (auxv.size() + 1);
  uint64_t sp = (at - 8 * words - 64) & ~uint64_t{15};
  uint64_t w = sp;
  auto put = [&](uint64_t v) {
    testing::Put64(mem, w - base, v);
    w += 8;
  };
  put(s.argc_override.value_or(arg_ptrs.size()));
  for (uint64_t p : arg_ptrs) put(p);
  put(0);
  for (uint64_t p : env_ptrs) put(p);
  put(0);
  for (size_t i = 0; i < s.trailing_nulls; ++i) put(0);
  for (auto [k, v] : auxv) put(k), put(v);
  put(0), put(0);
  testing::SynthCore synth;
  auto prstatus = testing::SynthCore::Prstatus(100, 11, 0x401000, sp);
  if (s.arch == Arch::kAarch64) {
    synth.machine = 183;               // EM_AARCH64
    prstatus.resize(392, std::byte{0});  // user_pt_regs: x0-x30, sp, pc, pstate
    testing::Put64(prstatus, 112 + 31 * 8, sp);
    testing::Put64(prstatus, 112 + 32 * 8, 0x401000);
  }
  synth.AddNote("CORE", 1, prstatus);
  synth.AddNote("CORE", 6, testing::SynthCore::Auxv(auxv));
  std::vector<std::byte> data = mem;
  if (s.present < data.size()) data.resize(s.present);
  for (const auto& [load_at, bytes] : s.other_loads) synth.AddLoad(load_at, bytes.size(), bytes, 6);
  synth.AddLoad(base, s.size, data, 6);  // rw-
  if (s.present < s.size) synth.loads.back().fake_filesz = s.size;
  return synth.Build();
}

ProcessStrings Read(const std::vector<std::byte>& bytes) {
  auto core = Core::Open(MakeMemorySource(bytes), CoreOptions{.check_module_files = false});
  EXPECT_TRUE(core.ok()) << core.error().message;
  if (!core.ok()) return {};
  return ReadProcessStrings(**core);
}

TEST(ProcessStrings, WholeBlockIsReadPointerByPointer) {
  Stack s;
  s.argv = {"/opt/app/prog", "--config", "a b c", ""};
  s.envp = {"PATH=/usr/bin", "SLURM_JOB_ID=7", "EMPTY="};
  ProcessStrings p = Read(BuildCore(s));
  EXPECT_TRUE(p.found);
  EXPECT_EQ(p.missing, "");
  EXPECT_EQ(p.argv, s.argv);
  EXPECT_EQ(p.envp, s.envp);
}

// unsetenv moves the later entries down in place: each call leaves one
// more NULL at the array's end.
TEST(ProcessStrings, NullsThatUnsetenvLeftAreSkipped) {
  Stack s;
  s.argv = {"prog", "--epochs", "3"};
  s.envp = {"PATH=/usr/bin", "SLURM_JOB_ID=7"};
  s.trailing_nulls = 2;
  ProcessStrings p = Read(BuildCore(s));
  EXPECT_TRUE(p.found) << p.missing;
  EXPECT_EQ(p.argv, s.argv);
  EXPECT_EQ(p.envp, s.envp);
  // Every variable removed: argv's NULL is among the NULLs; argc decides.
  s.envp.clear();
  s.trailing_nulls = 3;
  p = Read(BuildCore(s));
  EXPECT_TRUE(p.found) << p.missing;
  EXPECT_EQ(p.argv, s.argv);
  EXPECT_TRUE(p.envp.empty());
}

// A native arm64 kernel puts the main stack just below 2^48 (x86_64's user
// space ends at 2^47): the pointers there are the machine's own.
TEST(ProcessStrings, AnArm64StackJustBelowTwoToThe48IsRead) {
  Stack s;
  s.argv = {"/opt/app/prog", "--rank", "2"};
  s.envp = {"SLURM_JOB_ID=9"};
  s.top = 0xfffff7ff0000;
  // As an x86_64 core's, such a stack lies outside user space.
  EXPECT_FALSE(Read(BuildCore(s)).found);
  s.arch = Arch::kAarch64;
  ProcessStrings p = Read(BuildCore(s));
  EXPECT_TRUE(p.found) << p.missing;
  EXPECT_EQ(p.argv, s.argv);
  EXPECT_EQ(p.envp, s.envp);
}

TEST(ProcessStrings, OverwrittenArgcIsNotBelieved) {
  Stack s;
  s.argv = {"prog", "x"};
  s.envp = {"A=1"};
  s.argc_override = 9;
  ProcessStrings p = Read(BuildCore(s));
  EXPECT_FALSE(p.found);
  EXPECT_TRUE(p.argv.empty());
  EXPECT_TRUE(p.envp.empty());
  EXPECT_EQ(p.missing, "argc (9) is not the number of argument pointers (2)");
}

TEST(ProcessStrings, AStringWithoutEndIsLeftOutAndSaid) {
  Stack s;
  s.argv = {"prog"};
  s.envp = {"A=1", "B=2"};
  s.unterminated_last_env = true;
  ProcessStrings p = Read(BuildCore(s));
  EXPECT_TRUE(p.found);
  EXPECT_EQ(p.argv, s.argv);
  EXPECT_EQ(p.envp, std::vector<std::string>{"A=1"});
  EXPECT_EQ(p.missing, "1 of the strings have no end within 131072 bytes or are not in the core");
}

TEST(ProcessStrings, ACutStackSaysSo) {
  Stack s;
  s.argv = {"prog"};
  s.envp = {"A=1"};
  s.present = s.size / 2;  // the stack's top half is not in the core
  ProcessStrings p = Read(BuildCore(s));
  EXPECT_FALSE(p.found);
  EXPECT_EQ(p.missing, "the stack below AT_EXECFN is not in the core");
}

// 10 MB of environment: the search stops 8 MiB below AT_EXECFN, the whole
// read is bounded, and the reason is given.
TEST(ProcessStrings, TenMegabytesOfEnvironmentAreBounded) {
  Stack s;
  s.size = 12 << 20;
  s.argv = {"prog"};
  for (int i = 0; i < 100; ++i) s.envp.push_back("V" + std::to_string(i) + "=" + std::string(100 << 10, 'v'));
  ProcessStrings p = Read(BuildCore(s));
  EXPECT_FALSE(p.found);
  EXPECT_EQ(p.missing, "the stack holds no copy of the auxiliary vector");
  EXPECT_TRUE(p.envp.empty());
}

// glibc's environ moved to a heap of 100,000 pointers to one string with
// no end: the failed reads are charged to the 8 MiB budget like the
// others, so the string is not scanned 100,000 times.
TEST(ProcessStrings, PointersToAStringWithoutEndSpendTheBudget) {
  constexpr uint64_t kHeap = 0x10000000, kText = 0x20000000;
  constexpr size_t kPointers = 100000;
  std::vector<std::byte> heap(8 * kPointers + 8);
  for (size_t i = 0; i < kPointers; ++i) testing::Put64(heap, 8 * i, kText);
  Stack s;
  s.argv = {"prog"};
  s.envp = {"A=1"};
  s.other_loads = {{kHeap, heap}, {kText, std::vector<std::byte>(kMaxProcessString + 4096, std::byte{'x'})}};
  auto core = Core::Open(MakeMemorySource(BuildCore(s)), CoreOptions{.check_module_files = false});
  ASSERT_TRUE(core.ok()) << core.error().message;
  ProcessStrings p = ReadProcessStrings(**core, kHeap);
  EXPECT_TRUE(p.found);
  EXPECT_TRUE(p.from_environ);
  EXPECT_TRUE(p.envp.empty());
  EXPECT_EQ(p.missing, "the command line and environment are cut at 8388608 bytes");
}

TEST(JobIdentity, WhichVariableWins) {
  using Env = std::vector<std::pair<std::string, std::string>>;
  // srun torchrun: Slurm's job, torchrun's global rank (SLURM_PROCID numbers nodes).
  auto a = IdentifyJob(Env{{"SLURM_JOB_ID", "48213"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "2"},
                           {"SLURM_NTASKS", "8"}, {"RANK", "17"}, {"WORLD_SIZE", "64"}, {"LOCAL_RANK", "1"},
                           {"TORCHELASTIC_RUN_ID", "r1"}, {"TORCHELASTIC_RESTART_COUNT", "2"},
                           {"SLURMD_NODENAME", "gpu-a-05"}, {"HIP_VISIBLE_DEVICES", "3"},
                           {"SLURM_CLUSTER_NAME", "west"}, {"SLURM_RESTART_COUNT", "1"}});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->launcher, "slurm");
  EXPECT_EQ(a->job_id, "48213");
  EXPECT_EQ(a->step, "0");
  EXPECT_EQ(a->rank, 17);
  EXPECT_EQ(a->world_size, 64);
  EXPECT_EQ(a->local_rank, 1);
  // Slurm's restart and torchelastic's, each its own: neither hides the other.
  EXPECT_EQ(a->restart, 1);
  EXPECT_EQ(a->elastic_restart, 2);
  EXPECT_EQ(a->cluster, "west");
  EXPECT_EQ(a->node, "gpu-a-05");
  EXPECT_EQ(a->gpus, "HIP_VISIBLE_DEVICES=3");
  // torchrun alone; a run id of "none" is no id.
  auto b = IdentifyJob(Env{{"TORCHELASTIC_RUN_ID", "train-7"}, {"RANK", "3"}, {"WORLD_SIZE", "8"},
                           {"TORCHELASTIC_RESTART_COUNT", "4"}});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->launcher, "torchrun");
  EXPECT_EQ(b->job_id, "train-7");
  EXPECT_EQ(b->rank, 3);
  EXPECT_EQ(b->restart, 4);
  EXPECT_FALSE(b->elastic_restart);
  EXPECT_EQ(b->cluster, "");
  EXPECT_FALSE(IdentifyJob(Env{{"TORCHELASTIC_RUN_ID", "none"}, {"RANK", "3"}}));
  // Open MPI under PMIx.
  auto c = IdentifyJob(Env{{"PMIX_NAMESPACE", "prterun-h-1234@1"}, {"OMPI_COMM_WORLD_RANK", "5"},
                           {"OMPI_COMM_WORLD_SIZE", "16"}, {"PMIX_RANK", "5"}, {"CUDA_VISIBLE_DEVICES", "0,1"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->launcher, "mpi");
  EXPECT_EQ(c->rank, 5);
  EXPECT_EQ(c->world_size, 16);
  EXPECT_EQ(c->gpus, "CUDA_VISIBLE_DEVICES=0,1");
  // Slurm alone: its task id is the rank.
  auto d = IdentifyJob(Env{{"SLURM_JOB_ID", "9"}, {"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "0"}});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->rank, 4);
  EXPECT_EQ(d->world_size, 8);
  EXPECT_EQ(d->local_rank, 0);
  EXPECT_FALSE(IdentifyJob(Env{{"HOSTNAME", "h"}, {"CUDA_VISIBLE_DEVICES", "0"}}));
}

// The names a prefix pattern admitted before the deny set grew (all
// secrets): with a user's allow list as the README writes it.
TEST(EnvironmentPolicy, TheDenySetCoversWhatPrefixesAdmit) {
  EnvironmentPolicy p{{"POD_NAME", "MY_TEAM_*", "SLURM_*"}};
  for (const char* secret : {"MY_TEAM_DB_PASS", "MY_TEAM_PWD", "MY_TEAM_PASSPHRASE", "MY_TEAM_AUTH", "MY_TEAM_PAT",
                             "MY_TEAM_SENTRY_DSN", "MY_TEAM_SESSION_COOKIE", "SLURM_JWT", "MY_TEAM_PRIVATE_PEM",
                             "MY_TEAM_CONNECTION_STRING", "MY_TEAM_URL_SIGNATURE"})
    EXPECT_FALSE(p.Keeps(secret)) << secret;
  for (const char* fine : {"MY_TEAM_NAME", "MY_TEAM_PATH", "SLURM_JOB_ID", "SLURM_JOB_PARTITION", "POD_NAME"})
    EXPECT_TRUE(p.Keeps(fine)) << fine;
}

// Credentials inside what is shown, each form as crash reporters' data
// scrubbers know it.
TEST(EnvironmentPolicy, CredentialsAreHiddenInValuesAndArguments) {
  EXPECT_EQ(WithoutCredentials("postgres://app:pw@db:5432/x"), "postgres://<hidden>@db:5432/x");
  EXPECT_EQ(WithoutCredentials("https://ghp_abc@github.com/o/r.git"), "https://<hidden>@github.com/o/r.git");
  EXPECT_EQ(WithoutCredentials("https://h/p?a=1&access_token=t0k&b=2"), "https://h/p?a=1&access_token=<hidden>&b=2");
  EXPECT_EQ(WithoutCredentials("--db-password=pw"), "--db-password=<hidden>");
  EXPECT_EQ(WithoutCredentials("Authorization: Bearer abc"), "Authorization: <hidden>");
  EXPECT_EQ(WithoutCredentials("X-Api-Key: abc"), "X-Api-Key: <hidden>");
  EXPECT_EQ(WithoutCredentials("bearer abc def"), "bearer <hidden> def");
  // What names nothing secret stays.
  for (const char* plain : {"--lr=0.1", "host:8080", "gpu-a-05", "--config=train.yaml", "a=b&c=d", "http://h:80/x"})
    EXPECT_EQ(WithoutCredentials(plain), plain);
  EXPECT_EQ(ScrubbedCommandLine({"prog", "--token", "abc", "--epochs", "3"}),
            (std::vector<std::string>{"prog", "--token", "<hidden>", "--epochs", "3"}));
  EXPECT_EQ(ScrubbedCommandLine({"/usr/bin/mysql", "-uroot", "-ppw", "db"}),
            (std::vector<std::string>{"/usr/bin/mysql", "-uroot", "-p<hidden>", "db"}));
  EXPECT_EQ(ScrubbedCommandLine({"gcc", "-pthread", "-p"}), (std::vector<std::string>{"gcc", "-pthread", "-p"}));
  EXPECT_EQ(ScrubbedPsargs("./srv --password hunter2 -v"), "./srv --password <hidden> -v");
  EXPECT_EQ(WithoutCredentials("a=1&token=x&pass=y;b=2 bearer z"), "a=1&token=<hidden>&pass=<hidden>;b=2 bearer <hidden>");
  // An argument of the kernel's largest size made of names and pairs is
  // scrubbed in one pass (a quadratic one is the test's timeout).
  std::string names, pairs, bearers;
  while (names.size() < (128u << 10)) names += "a--";
  while (pairs.size() < (128u << 10)) pairs += "&token=x";
  while (bearers.size() < (128u << 10)) bearers += "bearer ";
  EXPECT_EQ(WithoutCredentials(names), names);
  std::string hidden_pairs = WithoutCredentials(pairs);
  EXPECT_EQ(hidden_pairs.find("=x"), std::string::npos);
  EXPECT_EQ(hidden_pairs.size(), pairs.size() / 8 * 15);
  EXPECT_EQ(WithoutCredentials(bearers).find("bearer bearer"), std::string::npos);
}

TEST(EnvironmentPolicy, PatternsNeverAdmitSecrets) {
  EnvironmentPolicy p{{"POD_*", "MY_API_KEY"}};
  EXPECT_TRUE(p.Keeps("SLURM_JOB_ID"));
  EXPECT_TRUE(p.Keeps("POD_NAME"));
  EXPECT_FALSE(p.Keeps("POD_TOKEN"));
  EXPECT_FALSE(p.Keeps("POD_DB_PASSWORD"));
  EXPECT_TRUE(p.Keeps("MY_API_KEY"));  // spelled out exactly
  EXPECT_FALSE(p.Keeps("AWS_SECRET_ACCESS_KEY"));
  EXPECT_FALSE(p.Keeps("PATH"));
}

// ---------------------------------------------------------------------------
// A real core: a zoo crasher run as Slurm would run task 17 of job 48213,
// with secrets beside the identity variables.

std::string RandomSecret() {
  std::random_device rd;
  std::mt19937_64 gen(rd());
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (int i = 0; i < 40; ++i) s += alphabet[gen() % 62];
  return s;
}

struct RealCore {
  std::string path;
  std::vector<std::string> args;  // what it was run with, after the binary
  std::vector<std::string> secrets;
  std::string binary;
};

const RealCore& Slurmish() {
  static RealCore* made = [] {
    auto* r = new RealCore;
    fs::create_directories(Work());
    r->binary = testing::ZooDir() + "/bin/null_deref-O0";
    r->path = Work() + "/rank17.core";
    r->secrets = {RandomSecret(), "hf_" + RandomSecret(), RandomSecret()};
    r->args = {"--config", "train.yaml", "--lr", std::string(120, '7')};
    std::string cmd = "env -i PATH=/usr/bin:/bin SLURM_JOB_ID=48213 SLURM_STEP_ID=0 SLURM_PROCID=17 "
                      "SLURM_NTASKS=64 SLURM_LOCALID=1 SLURMD_NODENAME=gpu-a-05 HIP_VISIBLE_DEVICES=3 SLURM_CLUSTER_NAME=west "
                      "AWS_SECRET_ACCESS_KEY=" + r->secrets[0] + " HF_TOKEN=" + r->secrets[1] +
                      " SOMETHING_ELSE=" + r->secrets[2] + " bash " + std::getenv("CORONER_SOURCE_DIR") +
                      "/tests/fixtures/make_core.sh " + r->binary + " " + r->path;
    for (const auto& a : r->args) cmd += " " + a;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return r;
  }();
  return *made;
}

void ExpectNoSecret(const std::string& what, const std::string& text) {
  for (const auto& s : Slurmish().secrets) EXPECT_EQ(text.find(s), std::string::npos) << what << " shows a secret";
}

TEST(ProcessIdentity, ARealSlurmTaskIsNamedAndItsSecretsAreNot) {
  const RealCore& c = Slurmish();
  auto r = testing::Coroner("analyze --json " + c.path);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  // The whole command line (prpsinfo holds 80 bytes of it).
  std::string args = c.binary;
  for (const auto& a : c.args) args += " " + a;
  ASSERT_GT(args.size(), 80u);
  EXPECT_EQ(j["process"]["args"], args);
  EXPECT_EQ(j["process"]["environment"],
            (json{{"SLURM_JOB_ID", "48213"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "17"}, {"SLURM_NTASKS", "64"},
                  {"SLURM_LOCALID", "1"}, {"SLURMD_NODENAME", "gpu-a-05"}, {"HIP_VISIBLE_DEVICES", "3"},
                  {"SLURM_CLUSTER_NAME", "west"}}));
  // PATH and the three secrets at least; the shell adds its own (PWD, SHLVL, _).
  EXPECT_GE(j["process"]["environment_hidden"].get<int>(), 4);
  EXPECT_EQ(j["job"], (json{{"launcher", "slurm"},
                            {"job_id", "48213"},
                            {"cluster", "west"},
                            {"step", "0"},
                            {"restart", nullptr},
                            {"elastic_restart", nullptr},
                            {"rank", 17},
                            {"world_size", 64},
                            {"local_rank", 1},
                            {"node", "gpu-a-05"},
                            {"gpus", "HIP_VISIBLE_DEVICES=3"}}));
  ExpectNoSecret("analyze --json", r.out);
  auto text = testing::Coroner("analyze " + c.path);
  EXPECT_NE(text.out.find("\njob: slurm job 48213 step 0 on cluster west, rank 17 of 64 (local 1) on node gpu-a-05, GPUs "
                          "HIP_VISIBLE_DEVICES=3\n"),
            std::string::npos)
      << text.out;
  ExpectNoSecret("analyze", text.out);
  auto md = testing::Coroner("analyze --format md " + c.path);
  EXPECT_NE(md.out.find("slurm job 48213 step 0 on cluster west, rank 17 of 64"), std::string::npos);
  ExpectNoSecret("analyze --format md", md.out);
}

// The dataset: the job's attributes from the core, a sidecar's of the same
// name winning; no secret in any table, nor in epi's reports.
TEST(ProcessIdentity, ScanStoresTheJobAndNoSecret) {
  const RealCore& c = Slurmish();
  std::string dir = Work() + "/fleet";
  fs::create_directories(dir);
  fs::copy_file(c.path, dir + "/a.core", fs::copy_options::overwrite_existing);
  fs::copy_file(c.path, dir + "/b.core", fs::copy_options::overwrite_existing);
  std::ofstream(dir + "/b.core.json") << R"({"rank": "3", "host": "h2"})";
  std::string db = Work() + "/d.db";
  ASSERT_EQ(testing::Coroner("scan " + dir + " --db " + db).status, 0);
  auto q = testing::Coroner("query --db " + db + " --json \"SELECT c.path, a.key, a.value FROM attributes a JOIN cores c "
                            "ON c.id = a.core WHERE a.key IN ('launcher', 'job_id', 'job_step', 'rank', 'world_size', "
                            "'local_rank', 'job_node', 'gpus') ORDER BY c.path, a.key\"");
  ASSERT_EQ(q.status, 0) << q.err;
  std::map<std::string, std::map<std::string, std::string>> attrs;
  for (const auto& row : json::parse(q.out))
    attrs[fs::path(row["path"].get<std::string>()).filename().string()][row["key"]] = row["value"];
  std::map<std::string, std::string> want = {{"launcher", "slurm"}, {"job_id", "48213"}, {"job_step", "0"},
                                             {"rank", "17"},        {"world_size", "64"}, {"local_rank", "1"},
                                             {"job_node", "gpu-a-05"}, {"gpus", "HIP_VISIBLE_DEVICES=3"}};
  EXPECT_EQ(attrs["a.core"], want);
  want["rank"] = "3";
  EXPECT_EQ(attrs["b.core"], want);
  // Every table, every column.
  for (const char* table : {"cores", "attributes", "threads", "frames", "modules"}) {
    auto all = testing::Coroner("query --db " + db + " --json \"SELECT * FROM " + std::string(table) + "\"");
    ASSERT_EQ(all.status, 0) << all.err;
    ExpectNoSecret(table, all.out);
  }
  auto e = testing::Coroner("epi --db " + db + " --json --html " + Work() + "/r.html --md " + Work() + "/r.md");
  ASSERT_EQ(e.status, 0) << e.err;
  ExpectNoSecret("epi --json", e.out);
  ExpectNoSecret("epi --html", testing::ReadAll(Work() + "/r.html"));
  ExpectNoSecret("epi --md", testing::ReadAll(Work() + "/r.md"));
}

// A real process whose command line and allowed variables carry
// credentials: none reaches analyze (text, JSON, Markdown), the dataset's
// tables, query or epi's reports; what is not a credential stays.
TEST(ProcessIdentity, CredentialsInTheCommandLineAndKeptVariablesAreHidden) {
  std::vector<std::string> secrets;
  for (int i = 0; i < 10; ++i) secrets.push_back(RandomSecret());
  std::string dir = Work() + "/creds";
  fs::create_directories(dir);
  // Named as the client whose -p takes the password glued.
  std::string binary = dir + "/mysql";
  fs::copy_file(testing::ZooDir() + "/bin/null_deref-O0", binary, fs::copy_options::overwrite_existing);
  std::string core = dir + "/creds.core";
  std::string cmd =
      "env -i PATH=/usr/bin:/bin SLURM_JOB_ID=5 MY_TEAM_NAME=vision MY_TEAM_DB_PASS=" + secrets[0] +
      " MY_TEAM_DATABASE_URL=postgres://app:" + secrets[1] + "@db.internal:5432/app SLURM_JWT=" + secrets[2] +
      " MY_TEAM_SENTRY_DSN=https://" + secrets[3] + "@sentry.example/7 bash " + std::getenv("CORONER_SOURCE_DIR") +
      "/tests/fixtures/make_core.sh " + binary + " " + core + " --db-password=" + secrets[4] + " -p" + secrets[5] +
      " --token " + secrets[6] + " 'Authorization: Bearer " + secrets[7] + "' https://svc:" + secrets[8] +
      "@host/x 'https://h/x?a=1&access_token=" + secrets[9] + "&b=2' --lr 0.1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string rules = dir + "/rules.toml";
  std::ofstream(rules) << "[environment]\nallow = [\"POD_NAME\", \"MY_TEAM_*\", \"SLURM_*\"]\n";
  auto expect_none = [&](const std::string& what, const std::string& text) {
    for (const auto& s : secrets) EXPECT_EQ(text.find(s), std::string::npos) << what << " shows " << s;
  };
  auto r = testing::Coroner("analyze --json --rules " + rules + " " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_none("analyze --json", r.out);
  json j = json::parse(r.out);
  EXPECT_EQ(j["process"]["args"], fs::weakly_canonical(binary).string() + " --db-password=<hidden> -p<hidden> --token <hidden> Authorization: <hidden> "
                                            "https://<hidden>@host/x https://h/x?a=1&access_token=<hidden>&b=2 --lr 0.1");
  EXPECT_EQ(j["process"]["environment"],
            (json{{"SLURM_JOB_ID", "5"}, {"MY_TEAM_NAME", "vision"},
                  {"MY_TEAM_DATABASE_URL", "postgres://<hidden>@db.internal:5432/app"}}));
  for (const char* format : {"", "--format md "}) {
    auto t = testing::Coroner(std::string("analyze ") + format + "--rules " + rules + " " + core);
    ASSERT_EQ(t.status, 0) << t.err;
    expect_none(std::string("analyze ") + format, t.out);
  }
  EXPECT_NE(testing::Coroner("analyze --rules " + rules + " " + core).out.find("access_token=<hidden>&b=2 --lr 0.1\n"), std::string::npos);
  std::string db = dir + "/d.db";
  ASSERT_EQ(testing::Coroner("scan --rules " + rules + " " + core + " --db " + db).status, 0);
  for (const char* table : {"cores", "attributes", "threads", "frames", "modules"}) {
    auto all = testing::Coroner("query --db " + db + " \"SELECT * FROM " + std::string(table) + "\"");
    ASSERT_EQ(all.status, 0) << all.err;
    expect_none(std::string("query ") + table, all.out);
  }
  auto e = testing::Coroner("epi --db " + db + " --json --html " + dir + "/r.html --md " + dir + "/r.md");
  ASSERT_EQ(e.status, 0) << e.err;
  expect_none("epi --json", e.out);
  expect_none("epi --html", testing::ReadAll(dir + "/r.html"));
  expect_none("epi --md", testing::ReadAll(dir + "/r.md"));
}

// A pod's process, no job's rank: the node Kubernetes' downward API put in
// NODE_NAME places its core when a rules file names that variable as the
// host (and not otherwise); a name that looks like a credential is refused
// as a host variable.
TEST(ProcessIdentity, ARulesFilesHostVariablePlacesTheCore) {
  std::string dir = Work() + "/nodename";
  fs::create_directories(dir);
  std::string core = dir + "/pod.core";
  std::string cmd = "env -i PATH=/usr/bin:/bin NODE_NAME=aks-gpu-17 HOSTNAME=trainer-7f9c bash " +
                    std::string(std::getenv("CORONER_SOURCE_DIR")) + "/tests/fixtures/make_core.sh " +
                    testing::ZooDir() + "/bin/null_deref-O0 " + core;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string rules = dir + "/rules.toml";
  std::ofstream(rules) << "[environment]\nhost = [\"K8S_NODE\", \"NODE_NAME\"]\n";
  auto host_of = [&](const std::string& flags, const std::string& db) {
    fs::remove(db);
    EXPECT_EQ(testing::Coroner("scan " + flags + core + " --db " + db).status, 0);
    auto q = testing::Coroner("query --json --db " + db +
                              " \"SELECT host, host_source FROM cores_with_attributes\"");
    return json::parse(q.out);
  };
  EXPECT_EQ(host_of("--rules " + rules + " ", dir + "/with.db"),
            json::parse(R"([{"host": "aks-gpu-17", "host_source": "environment"}])"));
  // Without the rule: no host (a pod's HOSTNAME is the pod's, not a node's).
  EXPECT_EQ(host_of("", dir + "/without.db"), json::parse(R"([{"host": null, "host_source": null}])"));
  std::ofstream(dir + "/bad.toml") << "[environment]\nhost = [\"NODE_TOKEN\"]\n";
  auto bad = testing::Coroner("scan --rules " + dir + "/bad.toml " + core + " --db " + dir + "/bad.db");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("[environment] host holds variable names"), std::string::npos) << bad.err;
}

// A secret from the environment in the crashing frame's locals: the
// pointer getenv returned, a std::string copy, a char array copy, and in
// an uncaught exception's message. gdb on the same core shows it (the
// locals do hold it); no output of coroner's does.
TEST(ProcessIdentity, ASecretInTheCrashingFramesLocalsIsHidden) {
  std::string secret = "hf_" + RandomSecret();
  std::string dir = Work() + "/locals";
  fs::create_directories(dir);
  for (std::string mode : {"", "throw"}) {
    SCOPED_TRACE(mode);
    std::string core = dir + "/locals" + mode + ".core";
    std::string cmd = "env -i PATH=/usr/bin:/bin SLURM_JOB_ID=77 HF_TOKEN=" + secret + " bash " +
                      std::getenv("CORONER_SOURCE_DIR") + "/tests/fixtures/make_core.sh " +
                      std::getenv("CORONER_SECRET_LOCALS") + " " + core + " " + mode;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    if (mode.empty()) {
      std::string gdb = "gdb -nx -batch -ex 'frame function main' -ex 'info locals' " +
                        std::string(std::getenv("CORONER_SECRET_LOCALS")) + " " + core + " 2>&1";
      std::string seen;
      if (FILE* f = popen(gdb.c_str(), "r")) {
        char buf[4096];
        for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) seen.append(buf, n);
        pclose(f);
      }
      EXPECT_NE(seen.find(secret), std::string::npos) << "gdb does not see the secret in the locals:\n" << seen;
    }
    auto j = testing::Coroner("analyze --json " + core);
    ASSERT_EQ(j.status, 0) << j.err;
    EXPECT_EQ(j.out.find(secret), std::string::npos) << "analyze --json shows the secret";
    EXPECT_EQ(j.out.find(secret.substr(0, 16)), std::string::npos) << "analyze --json shows the secret's start";
    EXPECT_NE(j.out.find("<hidden: environment>"), std::string::npos);
    for (const char* format : {"", "--format md "}) {
      auto t = testing::Coroner(std::string("analyze ") + format + core);
      ASSERT_EQ(t.status, 0) << t.err;
      EXPECT_EQ(t.out.find(secret.substr(0, 16)), std::string::npos) << "analyze " << format << "shows the secret";
    }
    if (!mode.empty()) continue;
    // The kept variable's string is shown, as gdb shows it.
    json locals, report = json::parse(j.out);
    for (const auto& f : report["threads"][0]["frames"])
      if (f["function"] == "main") locals = f["locals"];
    ASSERT_FALSE(locals.is_null()) << j.out.substr(0, 2000);
    std::map<std::string, std::string> value;
    for (const auto& l : locals) value[l["name"]] = l["value"].is_string() ? l["value"].get<std::string>() : "";
    EXPECT_NE(value["job"].find("\"77\""), std::string::npos) << value["job"];
    EXPECT_NE(value["token"].find("<hidden: environment>"), std::string::npos) << value["token"];
    EXPECT_NE(value["buf"].find("<hidden: environment>"), std::string::npos) << value["buf"];
    EXPECT_NE(value["copy"].find("<hidden: environment>"), std::string::npos) << value["copy"];
  }
}

// A name set twice: one entry, the value getenv returns (the first).
TEST(ProcessStrings, ANameSetTwiceIsShownOnceAsGetenvSeesIt) {
  Stack s;
  s.argv = {"prog"};
  s.envp = {"SLURM_JOB_ID=1", "PATH=/bin", "SLURM_JOB_ID=2"};
  auto bytes = BuildCore(s);
  auto core = Core::Open(MakeMemorySource(bytes), CoreOptions{.check_module_files = false});
  ASSERT_TRUE(core.ok());
  ProcessIdentity id = IdentifyProcess(**core);
  EXPECT_EQ(id.environment, (std::vector<std::pair<std::string, std::string>>{{"SLURM_JOB_ID", "1"}}));
  ASSERT_TRUE(id.job);
  EXPECT_EQ(id.job->job_id, "1");
}

// A rules file adds identity variables: a name exactly, or a prefix that
// still never admits a secret-looking name.
TEST(ProcessIdentity, RulesAddVariablesButPatternsNoSecrets) {
  const RealCore& c = Slurmish();
  std::string rules = Work() + "/env.toml";
  std::ofstream(rules) << "[environment]\nallow = [\"SOMETHING_*\", \"HF_*\"]\n";
  auto r = testing::Coroner("analyze --json --rules " + rules + " " + c.path);
  ASSERT_EQ(r.status, 0) << r.err;
  json env = json::parse(r.out)["process"]["environment"];
  EXPECT_EQ(env["SOMETHING_ELSE"], c.secrets[2]);  // asked for by a pattern, and not secret-looking
  EXPECT_FALSE(env.contains("HF_TOKEN"));          // secret-looking: only when spelled out
  std::ofstream(rules) << "[environment]\nallow = [\"HF_TOKEN\"]\n";
  env = json::parse(testing::Coroner("analyze --json --rules " + rules + " " + c.path).out)["process"]["environment"];
  EXPECT_EQ(env["HF_TOKEN"], c.secrets[1]);
  std::ofstream(rules) << "[environment]\nallow = \"PATH\"\n";
  auto bad = testing::Coroner("analyze --rules " + rules + " " + c.path);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("[environment] allow is a list of names"), std::string::npos) << bad.err;
}

// A real process that stores through 8 bytes of its secret as if they were
// a pointer: gdb shows them in a register; coroner shows them nowhere — not
// in a register, the address the diagnosis reads, the number local, nor
// the dataset's threads, frames and cores.
TEST(ProcessIdentity, ASecretsBytesInARegisterAreHidden) {
  std::string secret = "hf_" + RandomSecret();
  uint64_t word = 0;
  std::memcpy(&word, secret.data() + 8, sizeof word);
  std::string dir = Work() + "/word";
  fs::create_directories(dir + "/fleet");
  std::string core = dir + "/fleet/word.core";
  std::string cmd = "env -i PATH=/usr/bin:/bin SLURM_JOB_ID=77 HF_TOKEN=" + secret + " bash " +
                    std::getenv("CORONER_SOURCE_DIR") + "/tests/fixtures/make_core.sh " +
                    std::getenv("CORONER_SECRET_LOCALS") + " " + core + " word";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  char hex[32], padded[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(word));
  std::snprintf(padded, sizeof padded, "%016llx", static_cast<unsigned long long>(word));
  auto gdb = testing::Run("gdb -nx -batch -ex 'info registers' " + std::string(std::getenv("CORONER_SECRET_LOCALS")) +
                          " " + core + " 2>&1");
  ASSERT_NE(gdb.out.find(hex), std::string::npos) << "gdb shows no register holding the secret's bytes:\n" << gdb.out;
  std::vector<std::string> forms = {hex, padded, std::to_string(word), std::to_string(static_cast<int64_t>(word)),
                                    secret.substr(8, 8)};
  auto expect_none = [&](const std::string& what, const std::string& text) {
    for (const auto& f : forms) EXPECT_EQ(text.find(f), std::string::npos) << what << " shows " << f;
  };
  auto j = testing::Coroner("analyze --json " + core);
  ASSERT_EQ(j.status, 0) << j.err;
  expect_none("analyze --json", j.out);
  json report = json::parse(j.out);
  size_t crashing = report["crashing_thread"];
  size_t hidden_registers = 0;
  for (const auto& [name, value] : report["threads"][crashing]["registers"].items())
    hidden_registers += value == "<hidden: environment>";
  EXPECT_GE(hidden_registers, 1u) << report["threads"][crashing]["registers"].dump();
  // The number local of main.
  bool local_hidden = false;
  for (const auto& f : report["threads"][crashing]["frames"])
    if (f["function"] == "main" && f.contains("locals"))
      for (const auto& l : f["locals"])
        if (l["name"] == "pointer" || l["name"] == "word") local_hidden |= l["value"] == "<hidden: environment>";
  EXPECT_TRUE(local_hidden) << j.out.substr(0, 4000);
  for (const char* format : {"", "--format md "}) {
    auto t = testing::Coroner(std::string("analyze ") + format + core);
    ASSERT_EQ(t.status, 0) << t.err;
    expect_none(std::string("analyze ") + format, t.out);
    EXPECT_NE(t.out.find("<hidden: environment>"), std::string::npos) << t.out;
  }
  std::string db = dir + "/d.db";
  ASSERT_EQ(testing::Coroner("scan " + dir + "/fleet --db " + db).status, 0);
  for (const char* table : {"cores", "attributes", "threads", "frames", "modules"}) {
    auto all = testing::Coroner("query --db " + db + " --json \"SELECT * FROM " + std::string(table) + "\"");
    ASSERT_EQ(all.status, 0) << all.err;
    expect_none(table, all.out);
  }
  auto threads = testing::Coroner("query --db " + db + " --json \"SELECT registers FROM threads WHERE crashing = 1\"");
  EXPECT_NE(threads.out.find("<hidden: environment>"), std::string::npos) << threads.out;
}

// Real cores of ranks as torchrun under srun, and Open MPI, start them: the
// framework's rank wins over Slurm's task id, PMIx's namespace names an MPI
// job, and the GPUs each was given are named.
TEST(ProcessIdentity, TorchrunAndMpiRanksFromRealCores) {
  auto job_of = [](const std::string& env, const std::string& name) {
    std::string core = Work() + "/" + name + ".core";
    std::string cmd = "env -i PATH=/usr/bin:/bin " + env + " bash " + std::getenv("CORONER_SOURCE_DIR") +
                      "/tests/fixtures/make_core.sh " + testing::ZooDir() + "/bin/null_deref-O0 " + core;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto r = testing::Coroner("analyze --json " + core);
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out)["job"];
  };
  fs::create_directories(Work());
  json torch = job_of("SLURM_JOB_ID=900 SLURM_STEP_ID=3 SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=0 "
                      "SLURMD_NODENAME=node-b TORCHELASTIC_RUN_ID=900 TORCHELASTIC_RESTART_COUNT=1 RANK=12 "
                      "LOCAL_RANK=4 WORLD_SIZE=16 GROUP_RANK=1 CUDA_VISIBLE_DEVICES=4",
                      "torchrun");
  // Slurm's restart is not set; torchelastic's is its own.
  EXPECT_EQ(torch, (json{{"launcher", "slurm"},
                         {"job_id", "900"},
                         {"cluster", nullptr},
                         {"step", "3"},
                         {"restart", nullptr},
                         {"elastic_restart", 1},
                         {"rank", 12},
                         {"world_size", 16},
                         {"local_rank", 4},
                         {"node", "node-b"},
                         {"gpus", "CUDA_VISIBLE_DEVICES=4"}}));
  json mpi = job_of("PMIX_NAMESPACE=prterun-node-a-4242@1 PMIX_RANK=5 OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_SIZE=8 "
                    "OMPI_COMM_WORLD_LOCAL_RANK=1 HOSTNAME=node-a ROCR_VISIBLE_DEVICES=1",
                    "mpi");
  EXPECT_EQ(mpi, (json{{"launcher", "mpi"},
                       {"job_id", "prterun-node-a-4242@1"},
                       {"cluster", nullptr},
                       {"step", nullptr},
                       {"restart", nullptr},
                       {"elastic_restart", nullptr},
                       {"rank", 5},
                       {"world_size", 8},
                       {"local_rank", 1},
                       {"node", "node-a"},
                       {"gpus", "ROCR_VISIBLE_DEVICES=1"}}));
}

// A program that called setenv before it crashed: the environment read is
// the one it had then (glibc's environ, moved to the heap), not the one it
// was started with.
TEST(ProcessIdentity, TheEnvironmentAtTheCrashNotAtTheStart) {
  fs::create_directories(Work());
  std::string core = Work() + "/setenv.core";
  std::string cmd = std::string("env -i PATH=/usr/bin:/bin SLURM_JOB_ID=111 SLURM_NTASKS=8 bash ") +
                    std::getenv("CORONER_SOURCE_DIR") + "/tests/fixtures/make_core.sh " +
                    std::getenv("CORONER_SETENV_CRASH") + " " + core + " 4242";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto r = testing::Coroner("analyze --json " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["process"]["environment"],
            (json{{"SLURM_JOB_ID", "4242"}, {"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "3"}}));
  // PATH, the 50 settings and the token at least.
  EXPECT_GE(j["process"]["environment_hidden"].get<int>(), 52);
  EXPECT_EQ(j["job"]["job_id"], "4242");
  EXPECT_EQ(j["job"]["rank"], 3);
  EXPECT_EQ(r.out.find("tok-7f3e9d2a61b04c58"), std::string::npos);
  EXPECT_EQ(j["process"]["args"].get<std::string>().substr(j["process"]["args"].get<std::string>().size() - 5), " 4242");
}

// A real program that removed a variable (unsetenv, as os.environ.pop()
// does) before it crashed: the two NULLs it left end nothing early. (The
// second name is set nowhere: unsetting it moves nothing.)
constexpr const char* kUnsetNothing = "A_NAME_SET_NOWHERE_THAT_MAKES_THE_COMMAND_LINE_LONGER_THAN_EIGHTY_BYTES";
TEST(ProcessIdentity, AProgramThatUnsetAVariableKeepsItsJob) {
  fs::create_directories(Work());
  std::string core = Work() + "/unsetenv.core";
  std::string cmd = std::string("env -i PATH=/usr/bin:/bin SLURM_JOB_ID=111 SLURM_NTASKS=8 APP_SCRATCH=/tmp/x bash ") +
                    std::getenv("CORONER_SOURCE_DIR") + "/tests/fixtures/make_core.sh " +
                    std::getenv("CORONER_SETENV_CRASH") + " " + core + " --unset APP_SCRATCH " + kUnsetNothing;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto r = testing::Coroner("analyze --json " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["process"]["environment"], (json{{"SLURM_JOB_ID", "111"}, {"SLURM_NTASKS", "8"}})) << j["process"].dump();
  EXPECT_EQ(j["job"]["job_id"], "111");
  // The whole command line, from the stack (the core's own copy, in
  // NT_PRPSINFO, stops at 80 bytes).
  std::string args = j["process"]["args"];
  EXPECT_EQ(args.substr(args.rfind(" --unset")), std::string(" --unset APP_SCRATCH ") + kUnsetNothing);
}

class Cleanup : public ::testing::Environment {
 public:
  void TearDown() override { fs::remove_all(Work()); }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

}  // namespace
}  // namespace coroner
