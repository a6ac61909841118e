// `coroner analyze` as a user runs it: exit status, the JSON contract of
// shared/DESIGN.md (values checked against gdb's view of the same core), NDJSON
// for several cores, prefixes, and the text summary; and the command line's
// answers to a user's mistakes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "unit/run_coroner.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

using Json = nlohmann::json;
using testing::CommandResult;
using testing::Coroner;

std::string Core(const std::string& variant) { return testing::ZooDir() + "/cores/" + variant + ".core"; }
testing::GdbOracle Oracle(const std::string& variant) {
  return testing::ParseGdbOracle(testing::ZooDir() + "/oracle/" + variant + ".gdb");
}

std::string Hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

TEST(AnalyzeCli, JsonFollowsTheContract) {
  CommandResult r = Coroner("analyze --json " + Core("null_deref-O0"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  Json j = Json::parse(r.out);
  auto gdb = Oracle("null_deref-O0");

  EXPECT_EQ(j["core"]["path"], Core("null_deref-O0"));
  EXPECT_GT(j["core"]["size"].get<uint64_t>(), j["core"]["bytes_read"].get<uint64_t>());
  EXPECT_EQ(j["core"]["truncated"], false);

  EXPECT_EQ(j["process"]["pid"], gdb.threads[0].tid);
  EXPECT_EQ(j["process"]["comm"], "null_deref-O0");
  EXPECT_EQ(j["process"]["exe"], testing::ZooDir() + "/bin/null_deref-O0");
  EXPECT_EQ(j["process"]["args"], testing::ZooDir() + "/bin/null_deref-O0");

  EXPECT_EQ(j["signal"]["number"], 11);
  EXPECT_EQ(j["signal"]["name"], "SIGSEGV");
  EXPECT_EQ(j["signal"]["code"], 1);
  EXPECT_EQ(j["signal"]["code_name"], "SEGV_MAPERR");
  EXPECT_EQ(j["signal"]["fault_address"], Hex(*gdb.sig_addr));
  EXPECT_EQ(j["signal"]["fault_address"], "0x8");  // null_deref.c reads next->value at offset 8

  EXPECT_EQ(j["crashing_thread"], 0);
  ASSERT_EQ(j["threads"].size(), 1u);
  const Json& t = j["threads"][0];
  EXPECT_EQ(t["tid"], gdb.threads[0].tid);
  for (const auto& [name, value] : gdb.threads[0].registers) {
    if (t["registers"].contains(name)) {
      EXPECT_EQ(t["registers"][name], Hex(value)) << name;
    }
  }
  EXPECT_TRUE(t["frames"].is_array());

  ASSERT_GE(j["modules"].size(), 3u);
  bool saw_libc = false;
  for (const auto& m : j["modules"]) {
    std::string base = m["base"];
    EXPECT_EQ(base.rfind("0x", 0), 0u);
    EXPECT_EQ(base, [&] { std::string s = base; for (auto& c : s) c = static_cast<char>(tolower(c)); return s; }());
    if (m["path"].get<std::string>().find("libc.so.6") != std::string::npos) {
      saw_libc = true;
      EXPECT_EQ(m["status"], "ok");
      EXPECT_EQ(m["build_id"].get<std::string>().size(), 40u);
    }
  }
  EXPECT_TRUE(saw_libc);
  EXPECT_TRUE(j.contains("diagnosis"));
}

TEST(AnalyzeCli, AbsentValuesAreNull) {
  // A non-canonical address faults with SI_KERNEL: the kernel gives no address.
  CommandResult r = Coroner("analyze --json " + Core("bad_pointer-O0"));
  ASSERT_EQ(r.status, 0);
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["signal"]["code_name"], "SI_KERNEL");
  EXPECT_TRUE(j["signal"]["fault_address"].is_null());
}

TEST(AnalyzeCli, SeveralCoresGiveOneLineEach) {
  CommandResult r = Coroner("analyze --format json " + Core("null_deref-O0") + " " + Core("many_threads-O0") + " " +
                  Core("abort_assert-O2"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<Json> objects;
  while (std::getline(lines, line)) objects.push_back(Json::parse(line));
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[1]["threads"].size(), 33u);
  EXPECT_EQ(objects[2]["signal"]["name"], "SIGABRT");
  EXPECT_EQ(objects[2]["signal"]["code_name"], "SI_TKILL");
}

TEST(AnalyzeCli, BadInputExitsOneWithOneLineAndGoesOn) {
  std::string junk = ::testing::TempDir() + "/not-a-core";
  std::ofstream(junk) << "this is not a core dump\n";
  CommandResult r = Coroner("analyze --json " + junk + " " + Core("null_deref-O0"));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "coroner: " + junk + ": not an ELF file (no \\x7fELF magic)\n");
  std::istringstream lines(r.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(Json::parse(first)["error"]["kind"], "not-elf");
  EXPECT_EQ(Json::parse(second)["signal"]["name"], "SIGSEGV");

  CommandResult missing = Coroner("analyze /nonexistent/core");
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err, "coroner: /nonexistent/core: cannot open: No such file or directory\n");
}

TEST(AnalyzeCli, UsageErrorsExitTwo) {
  EXPECT_EQ(Coroner("").status, 2);
  EXPECT_EQ(Coroner("analyze").status, 2);
  EXPECT_EQ(Coroner("analyze --no-such-flag " + Core("null_deref-O0")).status, 2);
  EXPECT_EQ(Coroner("analyze --format xml " + Core("null_deref-O0")).status, 2);
  EXPECT_EQ(Coroner("frobnicate").status, 2);
}

// A command that is none is named as such, with the nearest command when
// one is close; `help [COMMAND]` prints the help a user asks for.
TEST(Cli, UnknownCommandsAndHelp) {
  CommandResult typo = Coroner("analyse " + Core("null_deref-O0"));
  EXPECT_EQ(typo.status, 2);
  EXPECT_EQ(typo.err, "coroner: unknown command analyse; did you mean analyze? (coroner help lists the commands)\n");
  CommandResult far = Coroner("frobnicate");
  EXPECT_EQ(far.status, 2);
  EXPECT_EQ(far.err, "coroner: unknown command frobnicate (coroner help lists the commands)\n");
  CommandResult help = Coroner("help");
  EXPECT_EQ(help.status, 0);
  for (const char* command : {"analyze", "scan", "merge", "query", "epi", "demo", "sources"})
    EXPECT_NE(help.out.find(std::string("  ") + command), std::string::npos) << command << "\n" << help.out;
  CommandResult analyze = Coroner("help analyze");
  EXPECT_EQ(analyze.status, 0) << analyze.err;
  EXPECT_NE(analyze.out.find("--max-bytes"), std::string::npos) << analyze.out;
  EXPECT_EQ(analyze.out.find("--kernel-log"), std::string::npos) << analyze.out;  // epi's, not analyze's
  EXPECT_EQ(Coroner("help nothing").status, 2);
}

// --json is --format json: given with another format, the two disagree.
TEST(Cli, JsonAndAnotherFormatAreRefused) {
  CommandResult both = Coroner("analyze --json --format md " + Core("null_deref-O0"));
  EXPECT_EQ(both.status, 2);
  EXPECT_EQ(both.out, "");
  EXPECT_EQ(both.err, "coroner: --json and --format md disagree: give one of them\n");
  CommandResult same = Coroner("analyze --json --format json " + Core("null_deref-O0"));
  EXPECT_EQ(same.status, 0) << same.err;
  EXPECT_TRUE(Json::accept(same.out.substr(0, same.out.find('\n')))) << same.out.substr(0, 200);
}

// sqlite3's .tables and .schema, which users type first, answer as sqlite3
// would; the tables are those SQLite itself lists for the same file.
TEST(Cli, QueryTakesTablesAndSchema) {
  std::string dir = ::testing::TempDir() + "/cli-query-" + std::to_string(getpid());
  std::string db = dir + "/d.db";
  ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
  ASSERT_EQ(Coroner("scan --db " + db + " " + Core("null_deref-O0")).status, 0);
  CommandResult oracle = testing::Run(
      "python3 -c \"import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
      "print('\\n'.join(r[0] for r in c.execute(\\\"SELECT name FROM sqlite_master WHERE type='table' AND name NOT "
      "LIKE 'sqlite_%' ORDER BY name\\\")))\" '" + db + "'");
  ASSERT_EQ(oracle.status, 0);
  CommandResult tables = Coroner("query --db " + db + " .tables --json");
  ASSERT_EQ(tables.status, 0) << tables.err;
  std::string listed;
  for (const auto& row : Json::parse(tables.out)) listed += row["name"].get<std::string>() + "\n";
  EXPECT_EQ(listed, oracle.out);
  EXPECT_NE(oracle.out.find("cores\n"), std::string::npos);
  CommandResult schema = Coroner("query --db " + db + " '.schema cores' --json");
  ASSERT_EQ(schema.status, 0) << schema.err;
  Json rows = Json::parse(schema.out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0]["sql"].get<std::string>().rfind("CREATE TABLE cores", 0), 0u) << schema.out;
  CommandResult other = Coroner("query --db " + db + " .dump");
  EXPECT_EQ(other.status, 2);
  EXPECT_EQ(other.err, "coroner: query takes one SQL statement, .tables or .schema [TABLE], not .dump\n");
}

TEST(AnalyzeCli, MaxBytesReadsOnlyThePrefix) {
  CommandResult r = Coroner("analyze --json --max-bytes 65536 " + Core("stack_overflow-O0"));
  ASSERT_EQ(r.status, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_LE(j["core"]["bytes_read"].get<uint64_t>(), 65536u);
  EXPECT_EQ(j["core"]["truncated"], true);
  EXPECT_FALSE(j["core"]["missing"].empty());
  auto gdb = Oracle("stack_overflow-O0");
  EXPECT_EQ(j["threads"][0]["registers"]["rsp"], Hex(gdb.threads[0].registers.at("rsp")));
  EXPECT_EQ(j["signal"]["name"], "SIGSEGV");
}

TEST(AnalyzeCli, TextSummary) {
  CommandResult r = Coroner("analyze " + Core("null_deref-O0"));
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("signal: SIGSEGV (11), code 1 (SEGV_MAPERR), fault address 0x8\n"), std::string::npos)
      << r.out;
  auto gdb = Oracle("null_deref-O0");
  char rip[32];
  std::snprintf(rip, sizeof rip, "rip      %#018lx", static_cast<unsigned long>(gdb.threads[0].registers.at("rip")));
  EXPECT_NE(r.out.find(rip), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("libc.so.6 [ok]"), std::string::npos);
}

TEST(AnalyzeCli, CompressedCore) {
  CommandResult r = Coroner("analyze --json " + Core("null_deref-O0") + ".zst");
  ASSERT_EQ(r.status, 0) << r.err;
  Json j = Json::parse(r.out);
  auto gdb = Oracle("null_deref-O0");
  EXPECT_EQ(j["threads"][0]["registers"]["rip"], Hex(gdb.threads[0].registers.at("rip")));
  std::ifstream f(Core("null_deref-O0") + ".zst", std::ios::ate | std::ios::binary);
  EXPECT_LE(j["core"]["bytes_read"].get<uint64_t>(), static_cast<uint64_t>(f.tellg()));
}

}  // namespace
}  // namespace coroner

namespace coroner {
namespace {

// Repeatable options take one value each: the cores after them stay cores.
TEST(AnalyzeCli, RepeatableOptionsDoNotSwallowCores) {
  auto r = testing::Coroner("analyze --json --debug-dir " + testing::ZooDir() + "/debug --exe /nonexistent " +
                            testing::ZooDir() + "/cores/null_deref-O0.core " + testing::ZooDir() +
                            "/cores/abort_assert-O0.core");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
}

}  // namespace
}  // namespace coroner
