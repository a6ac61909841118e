// `coroner sources` on real zoo cores: the locals crasher built with its
// DWARF paths under a packaged build's long prefix is found again through a
// source map, through the built-in prefix rule (a source root named after
// the repository) and through a plain source root; the crashing line is the
// one gdb names (tests/crashers/locals.c:35, the write through
// order->customer). A git repository made here answers --check-fix both
// ways; a captured `dpkg -l` and `pip list --format json` give the modules'
// packages, checked against dpkg-query on this machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "provenance/inventory.h"
#include "provenance/source_map.h"
#include "unit/run_coroner.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string Src() { return std::getenv("CORONER_SOURCE_DIR"); }
std::string RelocatedCore() { return testing::ZooDir() + "/cores/locals-relocated.core"; }

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("coroner-sources-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

Json Sources(const std::string& args) {
  auto r = testing::Coroner("sources --json " + args);
  EXPECT_EQ(r.status, 0) << r.err;
  return Json::parse(r.out);
}

// Line `n` of the crasher's source, read independently of coroner.
std::string SourceLine(int n) {
  std::ifstream in(Src() + "/tests/crashers/locals.c");
  std::string line;
  for (int i = 1; std::getline(in, line); ++i) {
    if (i == n) return line;
  }
  return "";
}

void ExpectCrashingLineFound(const Json& j, const std::string& how) {
  ASSERT_FALSE(j["frames"].empty());
  const Json& f0 = j["frames"][0];
  EXPECT_EQ(f0["function"], "charge");
  EXPECT_EQ(f0["line"], 35);
  EXPECT_EQ(f0["file"].get<std::string>().rfind(kPackagingPrefix, 0), 0u) << f0["file"];
  EXPECT_EQ(f0["found_by"], how);
  ASSERT_TRUE(f0["local"].is_string());
  EXPECT_TRUE(fs::equivalent(f0["local"].get<std::string>(), Src() + "/tests/crashers/locals.c"));
  bool marked = false;
  for (const auto& l : f0["source"]) {
    if (l["current"]) {
      marked = true;
      EXPECT_EQ(l["line"], 35);
      EXPECT_EQ(l["text"], SourceLine(35));
      EXPECT_NE(l["text"].get<std::string>().find("order->customer->credit -= amount"), std::string::npos);
    }
  }
  EXPECT_TRUE(marked);
  // The other two frames of the program are found the same way.
  EXPECT_EQ(j["frames"][1]["function"], "process_order");
  EXPECT_EQ(j["frames"][1]["source"].size(), 11u);  // 5 lines either side
  EXPECT_EQ(j["frames"][2]["function"], "main");
}

TEST(Sources, GdbAgreesOnTheCrashingLine) {
  // gdb's own frame 0 for this core (the zoo oracle) is locals.c:35.
  auto gdb = testing::ParseGdbOracle(testing::ZooDir() + "/oracle/locals-relocated.gdb");
  ASSERT_FALSE(gdb.frames.empty());
  const auto& f = gdb.frames.begin()->second.at(0);
  EXPECT_EQ(f.line, 35);
  EXPECT_EQ(f.file.rfind(kPackagingPrefix, 0), 0u) << f.file;
}

TEST(Sources, SourceMapRule) {
  std::string rule = std::string(kPackagingPrefix) + "src/coroner=" + Src();
  ExpectCrashingLineFound(Sources(RelocatedCore() + " --source-map '" + rule + "'"), "source map");
  // The same rule from a file.
  fs::path dir = TempDir("map");
  std::ofstream(dir / "map") << "# packaged builds\n" << rule << "\n";
  ExpectCrashingLineFound(Sources(RelocatedCore() + " --source-map-file " + (dir / "map").string()), "source map");
}

TEST(Sources, BuiltInPackagingPrefix) {
  // A checkout named after the repository in the prefix, as the workflow
  // clones rocm-systems to /workspace/rocm-systems.
  fs::path dir = TempDir("workspace");
  fs::create_directory_symlink(Src(), dir / "coroner");
  ExpectCrashingLineFound(Sources(RelocatedCore() + " --source-root " + (dir / "coroner").string()), "packaging prefix");
  // A directory that holds checkouts works too.
  ExpectCrashingLineFound(Sources(RelocatedCore() + " --source-root " + dir.string()), "packaging prefix");
  auto j = Sources(RelocatedCore() + " --source-root " + dir.string());
  EXPECT_EQ(j["frames"][0]["path_in_repository"], "tests/crashers/locals.c");
  EXPECT_EQ(j["frames"][0]["repository"], "coroner");
}

TEST(Sources, NothingFoundWithoutARoot) {
  auto j = Sources(RelocatedCore());
  EXPECT_EQ(j["version"], 1);
  EXPECT_TRUE(j["frames"][0]["local"].is_null());
  EXPECT_TRUE(j["frames"][0]["source"].empty());
  // What to check out names the program's build-id, and glibc's repository.
  std::string all = j["to_check_out"].dump();
  // The repository is the one the packaging prefix names.
  EXPECT_NE(all.find("coroner at build-id "), std::string::npos) << all;
  EXPECT_NE(all.find("bminor/glibc"), std::string::npos) << all;
  // The module's DWARF says how and where it was built.
  const Json& exe = j["modules"][0];
  EXPECT_NE(exe["producer"].get<std::string>().find("-O0"), std::string::npos);
  EXPECT_EQ(exe["comp_dir"].get<std::string>().rfind(kPackagingPrefix, 0), 0u);
  EXPECT_EQ(exe["build_id"], Shell("readelf -n " + testing::ZooDir() +
                                   "/bin/locals-relocated | sed -n 's/.*Build ID: //p'"));
}

TEST(Sources, CheckFixBothWays) {
  fs::path repo = TempDir("repo");
  std::string git = "git -C " + repo.string() + " -c user.name=t -c user.email=t@example.invalid ";
  ASSERT_EQ(std::system((git + "init -q -b main").c_str()), 0);
  std::ofstream(repo / "a.c") << "int a;\n";
  ASSERT_EQ(std::system((git + "add a.c && " + git + "commit -q -m base").c_str()), 0);
  std::ofstream(repo / "a.c") << "int a = 1; /* the fix */\n";
  ASSERT_EQ(std::system((git + "commit -q -am fix").c_str()), 0);
  std::string fix = Shell(git + "rev-parse HEAD");
  ASSERT_EQ(std::system((git + "checkout -q -b later HEAD~1").c_str()), 0);
  std::ofstream(repo / "b.c") << "int b;\n";
  ASSERT_EQ(std::system((git + "add b.c && " + git + "commit -q -m other").c_str()), 0);

  // On `later` (forked before the fix) the fix is not included.
  auto j = Sources(RelocatedCore() + " --check-fix " + fix + " --repo " + repo.string());
  EXPECT_EQ(j["fix"]["status"], "not-included");
  EXPECT_EQ(j["fix"]["head"], Shell(git + "rev-parse HEAD"));
  // On main it is, by full or abbreviated hash.
  ASSERT_EQ(std::system((git + "checkout -q main").c_str()), 0);
  EXPECT_EQ(Sources(RelocatedCore() + " --check-fix " + fix + " --repo " + repo.string())["fix"]["status"], "included");
  EXPECT_EQ(Sources(RelocatedCore() + " --check-fix " + fix.substr(0, 10) + " --repo " + repo.string())["fix"]["status"],
            "included");
  // A commit the repository does not have is unknown, with the reason; an
  // option-looking commit is not an option.
  auto u = Sources(RelocatedCore() + " --check-fix 0123456789abcdef0123456789abcdef01234567 --repo " + repo.string());
  EXPECT_EQ(u["fix"]["status"], "unknown");
  EXPECT_NE(u["fix"]["detail"].get<std::string>().find("is not in"), std::string::npos);
  EXPECT_EQ(Sources(RelocatedCore() + " --check-fix=--all --repo " + repo.string())["fix"]["status"], "unknown");
  // The text says so in words.
  auto t = testing::Coroner("sources " + RelocatedCore() + " --check-fix " + fix + " --repo " + repo.string());
  EXPECT_NE(t.out.find("upstream fix: Fixed: " + fix), std::string::npos) << t.out;
  // --check-fix needs --repo.
  EXPECT_EQ(testing::Coroner("sources " + RelocatedCore() + " --check-fix " + fix).status, 2);
}

TEST(Sources, InventoryOfThisMachine) {
  // Real captures of this machine: `dpkg -l` and `pip list --format json`.
  fs::path dir = TempDir("inventory");
  ASSERT_EQ(std::system(("dpkg -l > " + (dir / "dpkg-l.txt").string()).c_str()), 0);
  std::ofstream(dir / "pip.json") << R"([{"name": "jaxlib", "version": "0.4.35"}, {"name": "Jax-Rocm7-Plugin", "version": "0.7.1"}])";
  std::ofstream(dir / "notes.txt") << "nothing to see\n";
  auto j = Sources(RelocatedCore() + " --inventory-dir " + dir.string());
  bool saw_libc = false;
  for (const auto& m : j["modules"]) {
    if (m["path"].get<std::string>().find("/libc.so.6") == std::string::npos) continue;
    saw_libc = true;
    ASSERT_TRUE(m["package"].is_object()) << m;
    EXPECT_EQ(m["package"]["name"], "libc6");
    EXPECT_EQ(m["package"]["manager"], "dpkg");
    EXPECT_EQ(m["package"]["version"], Shell("dpkg-query -W -f '${Version}' libc6"));
  }
  EXPECT_TRUE(saw_libc);

  // The mapping rules on paths a GPU container has.
  auto inv = PackageInventory::Load(dir.string());
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(inv->skipped().size(), 1u);
  auto jaxlib = inv->For("/opt/venv/lib/python3.10/site-packages/jaxlib/xla_extension.so");
  ASSERT_TRUE(jaxlib);
  EXPECT_EQ(jaxlib->version, "0.4.35");
  EXPECT_EQ(jaxlib->manager, "pip");
  auto plugin = inv->For("/usr/lib/python3/dist-packages/jax_rocm7_plugin/xla_rocm_plugin.so");
  ASSERT_TRUE(plugin);
  EXPECT_EQ(plugin->name, "Jax-Rocm7-Plugin");
  auto loader = inv->For("/lib64/ld-linux-x86-64.so.2");
  ASSERT_TRUE(loader);
  EXPECT_EQ(loader->name, "libc6");
  auto gcc = inv->For("/usr/lib/x86_64-linux-gnu/libgcc_s.so.1");
  ASSERT_TRUE(gcc);
  EXPECT_EQ(gcc->name, "libgcc-s1");
  EXPECT_FALSE(inv->For("/opt/app/libmine.so.3"));
}

TEST(Sources, DpkgDatabaseCopy) {
  // A copy of this machine's dpkg database (status and the file lists), as
  // `--inventory-dir` takes it from a container: the module's owner comes
  // from the lists, its version from status, equal to dpkg-query's.
  fs::path dir = TempDir("dpkg-db");
  fs::create_directories(dir / "var/lib/dpkg/info");
  fs::copy_file("/var/lib/dpkg/status", dir / "var/lib/dpkg/status");
  for (const auto& e : fs::directory_iterator("/var/lib/dpkg/info")) {
    std::string name = e.path().filename().string();
    if (name.rfind("libc6:", 0) == 0 && name.size() > 5 && name.compare(name.size() - 5, 5, ".list") == 0) {
      fs::copy_file(e.path(), dir / "var/lib/dpkg/info" / name);
    }
  }
  auto inv = PackageInventory::Load(dir.string());
  ASSERT_TRUE(inv.ok());
  // libBrokenLocale.so.1 is libc6's by its list alone: its name would say
  // "libbrokenlocale1", a package that does not exist.
  std::string lib = Shell("dpkg -L libc6 | grep '/libBrokenLocale.so.1$' | head -n 1");
  ASSERT_FALSE(lib.empty());
  auto p = inv->For(lib);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "libc6");
  EXPECT_EQ(p->manager, "dpkg");
  EXPECT_EQ(p->version, Shell("dpkg-query -W -f '${Version}' libc6"));
  EXPECT_FALSE(inv->For("/opt/elsewhere/libBrokenLocale.so.1"));
}

TEST(Sources, RpmCapture) {
  // `rpm -qa` as a RHEL-family container prints it (written here: this
  // machine has no rpm database to capture).
  fs::path dir = TempDir("rpm");
  std::ofstream(dir / "rpm-qa.txt") << "glibc-2.34-100.el9.x86_64\nlibstdc++-11.4.1-3.el9.x86_64\n"
                                       "rocm-hip-runtime-6.2.4.60204-139.el9.x86_64\ntzdata-2024a-1.el9.noarch\n"
                                       "not a package line\n";
  auto inv = PackageInventory::Load(dir.string());
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE(inv->skipped().empty());
  auto libc = inv->For("/usr/lib64/libc.so.6");
  ASSERT_TRUE(libc);
  EXPECT_EQ(libc->name, "glibc");
  EXPECT_EQ(libc->version, "2.34-100.el9");
  EXPECT_EQ(libc->manager, "rpm");
  auto cxx = inv->For("/usr/lib64/libstdc++.so.6.0.29");
  ASSERT_TRUE(cxx);
  EXPECT_EQ(cxx->version, "11.4.1-3.el9");
  EXPECT_FALSE(inv->For("/usr/lib64/libz.so.1"));
}

// The Markdown report (`analyze --format md`) gains the source lines, the
// locals, the versions and the fix status when it is told where they are.
TEST(Sources, MarkdownReport) {
  fs::path dir = TempDir("md");
  ASSERT_EQ(std::system(("dpkg -l > " + (dir / "dpkg-l.txt").string()).c_str()), 0);
  fs::path repo = TempDir("md-repo");
  std::string git = "git -C " + repo.string() + " -c user.name=t -c user.email=t@example.invalid ";
  ASSERT_EQ(std::system((git + "init -q -b main && " + git + "commit -q --allow-empty -m fix").c_str()), 0);
  std::string fix = Shell(git + "rev-parse HEAD");
  std::string rule = std::string(kPackagingPrefix) + "src/coroner=" + Src();
  auto r = testing::Coroner("analyze --format md " + RelocatedCore() + " --source-map '" + rule + "' --inventory-dir " +
                            dir.string() + " --check-fix " + fix + " --repo " + repo.string());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string& md = r.out;
  // The crashing line, marked, under the evidence.
  EXPECT_NE(md.find("=>    35  " + SourceLine(35)), std::string::npos) << md;
  EXPECT_NE(md.find("Source of frame #0 (charge"), std::string::npos);
  // bt full's lines for the crashing frame (values checked against gdb in variables_oracle_test).
  EXPECT_NE(md.find("arguments: order = 0x"), std::string::npos);
  EXPECT_NE(md.find("small = -5 '\\373'"), std::string::npos);
  // The environment table has libc6's version from the capture.
  EXPECT_NE(md.find("| libc6 " + Shell("dpkg-query -W -f '${Version}' libc6") + " (dpkg) |"), std::string::npos) << md;
  EXPECT_NE(md.find("Fixed: " + fix), std::string::npos);
  // Without the flags the report says what it does not know.
  auto plain = testing::Coroner("analyze --format md " + RelocatedCore());
  EXPECT_NE(plain.out.find("### Upstream fix status\n\nNot checked"), std::string::npos);
  EXPECT_EQ(plain.out.find("Source of frame #0"), std::string::npos);
}

TEST(Sources, BadArguments) {
  EXPECT_EQ(testing::Coroner("sources " + RelocatedCore() + " --source-map nonsense").status, 2);
  EXPECT_EQ(testing::Coroner("sources " + RelocatedCore() + " --inventory-dir /nonexistent/dir").status, 2);
  EXPECT_EQ(testing::Coroner("analyze --format md " + RelocatedCore() + " --check-fix abc").status, 2);
  auto r = testing::Coroner("sources /nonexistent.core");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/nonexistent.core"), std::string::npos);
}

}  // namespace
}  // namespace coroner
