// The Markdown report of every zoo core has the workflow's sections, and
// strings from a core cannot inject Markdown or HTML.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "report/markdown_report.h"
#include "unit/run_coroner.h"
#include "zoo/analyzed_core.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

class ReportTest : public ::testing::TestWithParam<testing::ZooCore> {};

TEST_P(ReportTest, MarkdownHasEverySection) {
  auto r = testing::Coroner("analyze --format md --debug-dir " + testing::ZooDir() + "/debug " + GetParam().core);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string& md = r.out;
  for (const char* section :
       {"## Coredump Analysis: ", "**Crash signal:** ", "**Crashing thread:** Thread 1 (LWP ", "**Crash context:** ",
        "**Syndrome:** ", "**Determinism:** unknown (single occurrence)", "### Crash call chain",
        "| Frame | Function | Library / Source | Component |", "### Crashing instruction", "### Container environment",
        "### Root cause", "### Evidence", "### Upstream fix status\n\nNot checked", "### Recommended next steps\n\n1. "}) {
    EXPECT_NE(md.find(section), std::string::npos) << "missing " << section;
  }
  EXPECT_NE(md.find("(crash origin)"), std::string::npos);
  // Fenced blocks are balanced.
  size_t fences = 0;
  for (size_t at = 0; (at = md.find("```", at)) != std::string::npos; at += 3) ++fences;
  EXPECT_EQ(fences % 2, 0u);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ReportTest, ::testing::ValuesIn(testing::LoadZoo()),
                         testing::ZooTestName);

TEST(Report, ComponentsComeFromTheMap) {
  auto r = testing::Coroner("analyze --format md " + testing::ZooDir() + "/cores/dlopen_crash-O0.core");
  ASSERT_EQ(r.status, 0);
  // dlopen_crash.c: plugin_step() in the plugin, called from main() of the executable.
  EXPECT_NE(r.out.find("**Crashing thread:** Thread 1 (LWP "), std::string::npos);
  EXPECT_NE(r.out.find(", in plugin\\_step, unknown (libzoo\\_plugin.so))"), std::string::npos) << r.out;
  auto n = testing::Coroner("analyze --format md " + testing::ZooDir() + "/cores/null_deref-O0.core");
  EXPECT_NE(n.out.find(", in walk, application)"), std::string::npos) << n.out;
  EXPECT_NE(r.out.find("| glibc |"), std::string::npos);
  EXPECT_NE(r.out.find("| application |"), std::string::npos);
  // A user rule names the plugin.
  std::string rules = ::testing::TempDir() + "/components.tsv";
  FILE* f = fopen(rules.c_str(), "w");
  fputs("# test rules\nlibzoo_plugin\tZoo plugin (team X)\n", f);
  fclose(f);
  r = testing::Coroner("analyze --format md --components " + rules + " " + testing::ZooDir() + "/cores/dlopen_crash-O0.core");
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("**Zoo plugin (team X)** (crash origin)"), std::string::npos) << r.out;
}

TEST(Report, HostileStringsAreEscaped) {
  EXPECT_EQ(MarkdownEscape("<script>alert(1)</script>"), "\\<script\\>alert(1)\\</script\\>");
  EXPECT_EQ(MarkdownEscape("a|b\nc"), "a\\|b c");
  EXPECT_EQ(MarkdownEscape("**bold** _it_ `code` [link](x) # h"), "\\*\\*bold\\*\\* \\_it\\_ \\`code\\` \\[link\\](x) \\# h");
  EXPECT_EQ(MarkdownEscape(std::string("nul\x01" "ctl")), "nul ctl");
}

// Per-core work that does not depend on the core is paid once per batch:
// `analyze` of several cores opens each module and debug file as often as
// the one core of them that opens it most does alone. strace counts the
// opens (work, not time).
TEST(Batch, EachModuleFileIsOpenedOncePerBatch) {
  if (testing::Run("command -v strace > /dev/null && echo yes").out != "yes\n") GTEST_SKIP() << "strace is not installed";
  std::string cores = testing::ZooDir() + "/cores/";
  std::string dir = ::testing::TempDir() + "batch-opens";
  ASSERT_EQ(testing::Run("rm -rf " + dir + " && mkdir -p " + dir + " && ln -s " + cores + "null_deref-O0.core " + dir +
                         "/again.core && echo ok").out,
            "ok\n");
  // Successful opens of regular files other than the cores, by path.
  auto opens = [&](const std::string& inputs) {
    std::string log = dir + "/strace.log";
    // LeakSanitizer cannot run under ptrace: an ASan build checks leaks
    // in every other test, not in the traced runs.
    auto r = testing::Run("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=open,openat "
                          "-e status=successful -o " + log + " " + std::getenv("CORONER_BIN") + " analyze --json " +
                          inputs + " > /dev/null 2>&1; echo $?");
    EXPECT_EQ(r.out, "0\n") << inputs;
    std::map<std::string, int> count;
    std::istringstream lines(testing::ReadAll(log));
    for (std::string line; std::getline(lines, line);) {
      size_t q = line.find('"');
      if (q == std::string::npos || line.find("O_DIRECTORY") != std::string::npos) continue;
      std::string path = line.substr(q + 1, line.find('"', q + 1) - q - 1);
      if (path.ends_with(".core") || path.starts_with("/proc/") || path.starts_with("/dev/")) continue;
      ++count[path];
    }
    return count;
  };
  auto one = opens(cores + "null_deref-O0.core");
  auto other = opens(cores + "abort_assert-O0.core");
  auto batch = opens(cores + "null_deref-O0.core " + cores + "abort_assert-O0.core " + dir + "/again.core");
  ASSERT_FALSE(batch.empty());
  // The files both programs share (libc, its debug file) and each one's own.
  int shared = 0;
  for (const auto& [path, n] : batch) {
    int alone = std::max(one.count(path) ? one[path] : 0, other.count(path) ? other[path] : 0);
    EXPECT_EQ(n, alone) << path << " is opened more often in the batch than alone";
    shared += one.count(path) && other.count(path);
  }
  EXPECT_GT(shared, 0) << "the two programs share no file: the batch tests nothing";
  EXPECT_TRUE(batch.count(testing::ZooDir() + "/bin/null_deref-O0")) << "the executable's opens were not seen";
}

}  // namespace
}  // namespace coroner
