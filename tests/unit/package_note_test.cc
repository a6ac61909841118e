// The package metadata note (`.note.package`): a program linked with one
// by the linker's --package-metadata (tests/CMakeLists.txt), its kernel
// core analyzed and scanned. Oracle: readelf's own reading of the note in
// the program's file. And the note's JSON as the untrusted text it is.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "core/package_note.h"
#include "unit/run_coroner.h"

namespace coroner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Coroner;
using testing::Run;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string Work() {
  static const std::string dir = ::testing::TempDir() + "/package-" + std::to_string(getpid());
  fs::create_directories(dir);
  return dir;
}

std::string MakeCore(const std::string& binary, const std::string& name) {
  std::string core = Work() + "/" + name + ".core";
  if (!fs::exists(core)) {
    auto r = Run(Env("CORONER_SOURCE_DIR") + "/tests/fixtures/make_core.sh '" + binary + "' '" + core + "' 2>&1");
    EXPECT_EQ(r.status, 0) << r.out;
  }
  return core;
}

// readelf's reading of the note: the JSON after "Packaging Metadata: ".
json ReadelfPackage(const std::string& binary) {
  auto r = Run("readelf -n '" + binary + "'");
  std::smatch m;
  static const std::regex kNote(R"(Packaging Metadata: (\{.*\}))");
  if (!std::regex_search(r.out, m, kNote)) return nullptr;
  return json::parse(m[1].str(), nullptr, false);
}

const json* ModuleOf(const json& j, const std::string& path) {
  for (const auto& m : j["modules"])
    if (m["path"] == path) return &m;
  return nullptr;
}

TEST(PackageNote, TheExecutablesPackageAsReadelfReadsIt) {
  const std::string bin = fs::canonical(Env("CORONER_PACKAGE_CRASH")).string();
  json theirs = ReadelfPackage(bin);
  ASSERT_TRUE(theirs.is_object()) << "readelf finds no package note in " << bin;
  std::string core = MakeCore(bin, "package");
  auto r = Coroner("analyze --json " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  const json* exe = ModuleOf(j, bin);
  ASSERT_TRUE(exe) << j["modules"].dump();
  const json& ours = (*exe)["package"];
  ASSERT_TRUE(ours.is_object()) << exe->dump();
  EXPECT_EQ(ours["type"], theirs["type"]);
  EXPECT_EQ(ours["name"], theirs["name"]);
  EXPECT_EQ(ours["version"], theirs["version"]);
  EXPECT_EQ(ours["architecture"], theirs["architecture"]);
  EXPECT_EQ(ours["os"], theirs["os"]);
  EXPECT_EQ(ours["os_version"], theirs["osVersion"]);
  EXPECT_EQ(ours["debug_info_url"], theirs["debugInfoUrl"]);
  // Debian's libc carries no note.
  for (const auto& m : j["modules"]) {
    if (m["path"].get<std::string>().find("libc.so") != std::string::npos) {
      EXPECT_TRUE(m["package"].is_null()) << m;
    }
  }

  auto text = Coroner("analyze " + core);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find(bin + " [ok] " + theirs["name"].get<std::string>() + " " + theirs["version"].get<std::string>()),
            std::string::npos)
      << text.out;

  std::string db = Work() + "/package.db";
  fs::remove(db);
  ASSERT_EQ(Coroner("scan " + core + " --db " + db).status, 0);
  auto q = Coroner("query --json --db " + db +
                   " \"SELECT key, value FROM attributes WHERE key IN ('package', 'package_version') ORDER BY key\"");
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_EQ(json::parse(q.out), json::parse(R"([{"key": "package", "value": ")" + theirs["name"].get<std::string>() +
                                            R"("}, {"key": "package_version", "value": ")" +
                                            theirs["version"].get<std::string>() + R"("}])"));

  // `sources`, without a captured inventory: the note names the executable's package.
  auto src = Coroner("sources --json " + core);
  ASSERT_EQ(src.status, 0) << src.err;
  json sj = json::parse(src.out);
  const json* sexe = nullptr;
  for (const auto& m : sj["modules"])
    if (m["path"] == bin) sexe = &m;
  ASSERT_TRUE(sexe) << sj["modules"].dump();
  EXPECT_EQ((*sexe)["package"], json::parse(R"({"name": ")" + theirs["name"].get<std::string>() + R"(", "version": ")" +
                                            theirs["version"].get<std::string>() + R"(", "manager": "package-note"})"));
}

TEST(PackageNote, AProgramWithoutOneHasNone) {
  const std::string bin = fs::canonical(Env("CORONER_SETENV_CRASH")).string();
  ASSERT_TRUE(ReadelfPackage(bin).is_null());
  std::string core = MakeCore(bin, "none");
  auto r = Coroner("analyze --json " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  for (const auto& m : j["modules"]) EXPECT_TRUE(m["package"].is_null()) << m;
}

// The note is the image's own bytes: anything but an object with a string
// name is no package, and what is kept is bounded, valid UTF-8.
TEST(PackageNote, HostileJsonIsNoPackage) {
  for (const char* bad : {"", "{", "[]", "\"x\"", "{\"name\": 7}", "{\"version\": \"1\"}", "{\"name\": \"\"}",
                          "{\"name\": \"a\"} trailing", "null"})
    EXPECT_FALSE(ParsePackageNote(bad)) << bad;
  auto p = ParsePackageNote(R"({"name": "x", "version": 12, "os": ["debian"], "type": "rpm", "extra": {"a": 1}})");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "x");
  EXPECT_EQ(p->version, "");
  EXPECT_EQ(p->os, "");
  EXPECT_EQ(p->type, "rpm");
  auto long_name = ParsePackageNote("{\"name\": \"" + std::string(10000, 'n') + "\"}");
  ASSERT_TRUE(long_name);
  EXPECT_EQ(long_name->name.size(), 256u);
  auto bad_utf8 = ParsePackageNote("{\"name\": \"a\\u00e9b\", \"version\": \"" + std::string(255, 'v') + "\\u00e9\"}");
  ASSERT_TRUE(bad_utf8);
  EXPECT_EQ(bad_utf8->name, "a\xc3\xa9" "b");
  EXPECT_LE(bad_utf8->version.size(), 258u);  // the cut character replaced, never a half one
  EXPECT_EQ(bad_utf8->version.find('\xc3'), std::string::npos);
}

}  // namespace
}  // namespace coroner
