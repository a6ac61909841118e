// Finding module files: by the mapped path, under --sysroot, in --debug-dir's
// build-id layout, by --exe; a file with another build-id is never used.
#include <gtest/gtest.h>

#include <elf.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "symbolize/module_image.h"

#include "unit/run_coroner.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

using Json = nlohmann::json;
using testing::Coroner;
namespace fs = std::filesystem;

std::string Core(const std::string& v) { return testing::ZooDir() + "/cores/" + v + ".core"; }
std::string Bin(const std::string& v) { return testing::ZooDir() + "/bin/" + v; }

Json Analyze(const std::string& args) {
  auto r = Coroner("analyze --json " + args);
  EXPECT_EQ(r.status, 0) << r.err;
  return Json::parse(r.out);
}

const Json& Module(const Json& j, const std::string& path) {
  for (const auto& m : j["modules"]) {
    if (m["path"] == path) return m;
  }
  throw std::runtime_error("no module " + path);
}

TEST(Symbols, StrippedBinaryHasOnlyOffsetsWithoutItsDebugFile) {
  Json j = Analyze(Core("null_deref-stripped"));
  const Json& f0 = j["threads"][0]["frames"][0];
  EXPECT_TRUE(f0["function"].is_null());
  EXPECT_EQ(f0["module"], Bin("null_deref-stripped"));
  EXPECT_FALSE(f0["offset"].is_null());
  EXPECT_TRUE(f0["file"].is_null());
  // libc's frames are still named: its debug file is in /usr/lib/debug.
  EXPECT_EQ(j["threads"][0]["frames"][2]["function"], "__libc_start_call_main");
}

TEST(Symbols, DebugDirGivesNamesAndLines) {
  Json j = Analyze("--debug-dir " + testing::ZooDir() + "/debug " + Core("null_deref-stripped"));
  const Json& frames = j["threads"][0]["frames"];
  EXPECT_EQ(frames[0]["function"], "walk");
  EXPECT_EQ(fs::path(frames[0]["file"].get<std::string>()).filename(), "null_deref.c");
  EXPECT_EQ(frames[0]["line"], 13);  // null_deref.c: the return in walk()
  EXPECT_EQ(frames[1]["function"], "main");
  const Json& m = Module(j, Bin("null_deref-stripped"));
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["symbols"]["binary_found_by"], "path");
  EXPECT_EQ(m["symbols"]["debug_found_by"], "debug-dir");
  std::string debug = m["symbols"]["debug_file"];
  EXPECT_EQ(debug.rfind(testing::ZooDir() + "/debug/.build-id/" + m["build_id"].get<std::string>().substr(0, 2), 0), 0u)
      << debug;
}

TEST(Symbols, FileWithAnotherBuildIdIsNeverUsed) {
  // A sysroot where the executable's path holds a different build of it.
  fs::path root = fs::path(::testing::TempDir()) / "mismatch-root";
  fs::remove_all(root);
  fs::path at = root / fs::path(Bin("null_deref-O0")).relative_path();
  fs::create_directories(at.parent_path());
  fs::copy_file(Bin("null_deref-O2"), at);
  Json j = Analyze("--sysroot " + root.string() + " " + Core("null_deref-O0"));
  const Json& m = Module(j, Bin("null_deref-O0"));
  EXPECT_EQ(m["status"], "mismatched");
  EXPECT_TRUE(m["symbols"]["binary"].is_null());
  const Json& f0 = j["threads"][0]["frames"][0];
  EXPECT_TRUE(f0["function"].is_null()) << f0;  // not a name from the wrong file
  EXPECT_EQ(f0["module"], Bin("null_deref-O0"));
}

TEST(Symbols, ExeFindsAMovedBinaryByBuildId) {
  fs::path root = fs::path(::testing::TempDir()) / "empty-root";
  fs::create_directories(root);
  fs::path moved = fs::path(::testing::TempDir()) / "moved-binary";
  fs::copy_file(Bin("null_deref-O0"), moved, fs::copy_options::overwrite_existing);
  Json j = Analyze("--sysroot " + root.string() + " --exe " + moved.string() + " " + Core("null_deref-O0"));
  const Json& m = Module(j, Bin("null_deref-O0"));
  EXPECT_EQ(m["symbols"]["binary_found_by"], "exe");
  EXPECT_EQ(j["threads"][0]["frames"][0]["function"], "walk");
  EXPECT_EQ(j["threads"][0]["frames"][1]["function"], "main");
}

// ReadCode keeps the pages it read: the bytes must still be the file's,
// for reads that cross a page, end at the segment's end, or run past it.
TEST(Symbols, CodeBytesAreTheFilesAcrossPagesAndAtTheSegmentEnd) {
  const std::string path = "/lib/x86_64-linux-gnu/libc.so.6";
  std::ifstream in(path, std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(file.size(), sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  const Elf64_Phdr* text = nullptr;
  std::vector<Elf64_Phdr> phdrs(eh.e_phnum);
  std::memcpy(phdrs.data(), file.data() + eh.e_phoff, eh.e_phnum * sizeof(Elf64_Phdr));
  for (const auto& ph : phdrs)
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) text = &ph;
  ASSERT_NE(text, nullptr);
  auto image = ModuleImage::Open(path, path);
  ASSERT_NE(image, nullptr);
  auto expect = [&](uint64_t vaddr, size_t n, size_t want) {
    std::vector<std::byte> got(n);
    size_t r = image->ReadCode(vaddr, got);
    ASSERT_EQ(r, want) << std::hex << vaddr;
    uint64_t off = text->p_offset + (vaddr - text->p_vaddr);
    EXPECT_EQ(std::memcmp(got.data(), file.data() + off, r), 0) << std::hex << vaddr;
  };
  uint64_t start = text->p_vaddr, end = text->p_vaddr + text->p_filesz;
  uint64_t page = (text->p_offset + 4096) / 4096 * 4096 - text->p_offset + start;  // a file page boundary
  expect(page - 3, 8, 8);             // across it
  expect(page - 3, 8, 8);             // again, from the kept pages
  expect(page + 100, 16, 16);         // inside the next page
  expect(start, 15, 15);              // the segment's first bytes
  expect(end - 10, 10, 10);           // its last bytes
  expect(end - 10, 64, 10);           // a read past its end stops there
  expect(page + 4000, 9000, 9000);    // three pages at once
  std::vector<std::byte> none(8);
  EXPECT_EQ(image->ReadCode(end + 4096 * 1024, none), 0u);  // not code of this file
}

}  // namespace
}  // namespace coroner
