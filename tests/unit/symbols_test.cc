// Finding module files: by the mapped path, under --sysroot, in --debug-dir's
// build-id layout, by --exe; a file with another build-id is never used.
#include <gtest/gtest.h>

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "symbolize/decoded_debug_file.h"
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


// The sections of an ELF file by name: flags and bytes (as the file holds them).
struct SectionBytes {
  uint64_t flags = 0;
  std::string bytes;
};
std::map<std::string, SectionBytes> Sections(const std::string& path) {
  std::map<std::string, SectionBytes> out;
  elf_version(EV_CURRENT);
  int fd = ::open(path.c_str(), O_RDONLY);
  Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr;
  size_t shstrndx = 0;
  if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh)) continue;
      const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
      Elf_Data* raw = sh.sh_type == SHT_NOBITS ? nullptr : elf_rawdata(scn, nullptr);
      out[name ? name : ""] = {sh.sh_flags, raw && raw->d_buf ? std::string(static_cast<char*>(raw->d_buf), raw->d_size) : ""};
    }
  }
  if (elf) elf_end(elf);
  if (fd >= 0) ::close(fd);
  return out;
}

// A --debug-dir holding the zoo's debug file for null_deref-stripped with its
// sections compressed by objcopy (`how`: zlib or zstd); returns the file.
std::string CompressedDebugDir(const fs::path& dir, const std::string& how) {
  std::string id = FileBuildId(Bin("null_deref-stripped"));
  std::string rel = ".build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  fs::create_directories((dir / rel).parent_path());
  std::string out = (dir / rel).string();
  std::string cmd = "objcopy --compress-debug-sections=" + how + " " + testing::ZooDir() + "/debug/" + rel + " " + out;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

// What the analysis says of every thread's frames.
std::vector<std::string> FrameLines(const Json& j) {
  std::vector<std::string> lines;
  for (const auto& t : j["threads"]) {
    for (const auto& f : t["frames"]) lines.push_back(f.dump());
  }
  return lines;
}

// Runs coroner with CORONER_CACHE_DIR set to `cache` (unset: as the suite runs).
Json AnalyzeWithCache(const std::string& cache, const std::string& args) {
  const char* old = std::getenv("CORONER_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("CORONER_CACHE_DIR", cache.c_str(), 1);
  Json j = Analyze(args);
  if (old) {
    setenv("CORONER_CACHE_DIR", saved.c_str(), 1);
  } else {
    unsetenv("CORONER_CACHE_DIR");
  }
  return j;
}

TEST(Symbols, CompressedDebugSectionsAreDecodedOnceIntoTheCache) {
  std::string core = Core("null_deref-stripped");
  Json plain = Analyze("--debug-dir " + testing::ZooDir() + "/debug " + core);
  for (std::string how : {"zlib", "zstd"}) {
    SCOPED_TRACE(how);
    fs::path root = fs::path(::testing::TempDir()) / ("compressed-debug-" + how);
    fs::remove_all(root);
    std::string debug = CompressedDebugDir(root / "debug", how);
    auto original = Sections(debug);
    ASSERT_TRUE(original.count(".debug_info"));
    ASSERT_TRUE(original[".debug_info"].flags & SHF_COMPRESSED) << "objcopy did not compress";
    std::string cache = (root / "cache").string();
    std::string args = "--debug-dir " + (root / "debug").string() + " " + core;

    // First run: the decoded copy is written, and the frames are those of
    // the uncompressed debug file, names and lines (walk at null_deref.c:13).
    Json first = AnalyzeWithCache(cache, args);
    const Json& m = Module(first, Bin("null_deref-stripped"));
    EXPECT_EQ(m["symbols"]["debug_file"], debug);
    // Named by the build-id and the source file's identity.
    ASSERT_TRUE(m["symbols"]["debug_cache"].is_string());
    std::string copy = m["symbols"]["debug_cache"];
    EXPECT_EQ(copy.rfind(cache + "/debug/" + FileBuildId(debug) + "-", 0), 0u) << copy;
    EXPECT_EQ(copy.substr(copy.size() - 6), ".debug");
    EXPECT_EQ(first["threads"][0]["frames"][0]["function"], "walk");
    EXPECT_EQ(first["threads"][0]["frames"][0]["line"], 13);
    EXPECT_EQ(FrameLines(first), FrameLines(plain));

    // The copy's sections are binutils' decoding of them, byte for byte.
    std::string oracle = (root / "oracle.debug").string();
    ASSERT_EQ(std::system(("objcopy --decompress-debug-sections " + debug + " " + oracle).c_str()), 0);
    auto decoded = Sections(copy), expected = Sections(oracle);
    ASSERT_EQ(decoded.size(), expected.size());
    for (const auto& [name, section] : expected) {
      EXPECT_EQ(decoded[name].bytes, section.bytes) << name;
      EXPECT_EQ(decoded[name].flags & SHF_COMPRESSED, 0u) << name;
    }

    // Second run: the copy is read, not written again (the same file).
    struct stat before, after;
    ASSERT_EQ(stat(copy.c_str(), &before), 0);
    Json second = AnalyzeWithCache(cache, args);
    ASSERT_EQ(stat(copy.c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino);
    EXPECT_EQ(Module(second, Bin("null_deref-stripped"))["symbols"]["debug_cache"], copy);
    EXPECT_EQ(FrameLines(second), FrameLines(plain));

    // No cache: decoded in memory for the run, the same frames.
    Json none = AnalyzeWithCache("", args);
    EXPECT_TRUE(Module(none, Bin("null_deref-stripped"))["symbols"]["debug_cache"].is_null());
    EXPECT_EQ(FrameLines(none), FrameLines(plain));
  }
}

// A debug file with the build-id of null_deref-stripped and another source
// file's name in its DWARF ("evil_pwned.c"), compressed: what a program
// linked with someone else's build-id brings.
std::string LyingDebugDir(const fs::path& dir) {
  std::string id = FileBuildId(Bin("null_deref-stripped"));
  std::string rel = ".build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  std::string bytes = testing::ReadAll(testing::ZooDir() + "/debug/" + rel);
  size_t replaced = 0;
  for (size_t at = 0; (at = bytes.find("null_deref.c", at)) != std::string::npos; ++replaced) bytes.replace(at, 12, "evil_pwned.c");
  EXPECT_GT(replaced, 0u);
  fs::create_directories((dir / "plain" / rel).parent_path());
  fs::create_directories((dir / rel).parent_path());
  std::ofstream((dir / "plain" / rel).string(), std::ios::binary) << bytes;
  std::string cmd = "objcopy --compress-debug-sections=zlib " + (dir / "plain" / rel).string() + " " + (dir / rel).string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return (dir / rel).string();
}

// One hostile debug file must not poison later analyses: a copy is the
// copy of one source file, and another file of the same build-id gets its
// own.
TEST(DebugCache, AnotherFileWithTheSameBuildIdDoesNotPoisonTheCopy) {
  fs::path root = fs::path(::testing::TempDir()) / "poisoned-cache";
  fs::remove_all(root);
  std::string cache = (root / "cache").string(), core = Core("null_deref-stripped");
  LyingDebugDir(root / "lying");
  Json evil = AnalyzeWithCache(cache, "--debug-dir " + (root / "lying").string() + " " + core);
  ASSERT_EQ(evil["threads"][0]["frames"][0]["file"].get<std::string>().find("evil_pwned.c") != std::string::npos, true)
      << evil["threads"][0]["frames"][0].dump();
  CompressedDebugDir(root / "real", "zlib");
  Json plain = Analyze("--debug-dir " + testing::ZooDir() + "/debug " + core);
  Json real = AnalyzeWithCache(cache, "--debug-dir " + (root / "real").string() + " " + core);
  EXPECT_EQ(FrameLines(real), FrameLines(plain));
  EXPECT_NE(Module(real, Bin("null_deref-stripped"))["symbols"]["debug_cache"],
            Module(evil, Bin("null_deref-stripped"))["symbols"]["debug_cache"]);
}

// Links laid in the cache are never followed: not a copy's name pointing
// at a file of the user's, not a debug/ directory that is a link; a
// directory others may write is not used at all.
TEST(DebugCache, PlantedLinksAndSharedDirectoriesAreRefused) {
  fs::path root = fs::path(::testing::TempDir()) / "planted-cache";
  fs::remove_all(root);
  std::string core = Core("null_deref-stripped");
  CompressedDebugDir(root / "debug", "zlib");
  std::string args = "--debug-dir " + (root / "debug").string() + " " + core;
  Json plain = Analyze("--debug-dir " + testing::ZooDir() + "/debug " + core);
  std::string precious = (root / "precious.txt").string();
  std::ofstream(precious) << "the user's own file\n";

  // A copy's name made a link to the user's file: the next run writes a
  // new copy in its place and the user's file is untouched.
  std::string cache = (root / "cache").string();
  Json first = AnalyzeWithCache(cache, args);
  std::string copy = Module(first, Bin("null_deref-stripped"))["symbols"]["debug_cache"];
  fs::remove(copy);
  fs::create_symlink(precious, copy);
  Json again = AnalyzeWithCache(cache, args);
  EXPECT_EQ(FrameLines(again), FrameLines(plain));
  EXPECT_EQ(testing::ReadAll(precious), "the user's own file\n");
  EXPECT_FALSE(fs::is_symlink(copy));

  // debug/ a link to another directory: not used, nothing there evicted.
  std::string linked = (root / "linked-cache").string();
  fs::create_directories(root / "elsewhere");
  std::ofstream((root / "elsewhere" / "old.debug").string()) << "someone's file\n";
  fs::create_directories(linked);
  fs::create_directory_symlink(root / "elsewhere", linked + "/debug");
  Json through_link = AnalyzeWithCache(linked, args);
  EXPECT_TRUE(Module(through_link, Bin("null_deref-stripped"))["symbols"]["debug_cache"].is_null());
  EXPECT_EQ(FrameLines(through_link), FrameLines(plain));
  EXPECT_EQ(std::distance(fs::directory_iterator(root / "elsewhere"), fs::directory_iterator()), 1);

  // A debug/ directory others may write.
  std::string shared = (root / "shared-cache").string();
  fs::create_directories(shared + "/debug");
  fs::permissions(shared + "/debug", fs::perms::all);
  Json in_shared = AnalyzeWithCache(shared, args);
  EXPECT_TRUE(Module(in_shared, Bin("null_deref-stripped"))["symbols"]["debug_cache"].is_null());
  EXPECT_TRUE(fs::is_empty(shared + "/debug"));
}

// A section of 64 MiB of zeros compresses a thousandfold: refused before
// anything is decoded, and the analysis goes on without the copy.
TEST(DebugCache, ADecompressionBombIsRefusedUndecoded) {
  fs::path root = fs::path(::testing::TempDir()) / "bomb-debug";
  fs::remove_all(root);
  std::string id = FileBuildId(Bin("null_deref-stripped"));
  std::string rel = ".build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  fs::create_directories((root / "debug" / rel).parent_path());
  std::string zeros = (root / "zeros").string(), bomb = (root / "debug" / rel).string();
  { std::ofstream z(zeros, std::ios::binary); z << std::string(64u << 20, '\0'); }
  std::string added = (root / "added.debug").string();
  std::string cmd = "objcopy --add-section .debug_bomb=" + zeros + " " + testing::ZooDir() + "/debug/" + rel + " " +
                    added + " && objcopy --compress-debug-sections=zlib " + added + " " + bomb;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove(zeros);
  auto sections = Sections(bomb);
  ASSERT_TRUE(sections.count(".debug_bomb"));
  ASSERT_LT(sections[".debug_bomb"].bytes.size(), 1u << 20) << "objcopy did not compress it";
  elf_version(EV_CURRENT);
  int fd = ::open(bomb.c_str(), O_RDONLY);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  auto size = DecodedImageSize(elf);
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().message.find("decompression bomb"), std::string::npos) << size.error().message;
  elf_end(elf);
  ::close(fd);
  std::string cache = (root / "cache").string();
  Json j = AnalyzeWithCache(cache, "--debug-dir " + (root / "debug").string() + " " + Core("null_deref-stripped"));
  EXPECT_EQ(j["threads"][0]["frames"][0]["function"], "walk");
  EXPECT_TRUE(Module(j, Bin("null_deref-stripped"))["symbols"]["debug_cache"].is_null());
}

TEST(Symbols, ACompressedSectionThatDoesNotDecodeLeavesNoCopy) {
  fs::path root = fs::path(::testing::TempDir()) / "corrupt-compressed-debug";
  fs::remove_all(root);
  std::string debug = CompressedDebugDir(root / "debug", "zlib");
  // Find .debug_info's compressed bytes and overwrite some past its header.
  uint64_t at = 0, size = 0;
  {
    elf_version(EV_CURRENT);
    int fd = ::open(debug.c_str(), O_RDONLY);
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    size_t shstrndx = 0;
    ASSERT_EQ(elf_getshdrstrndx(elf, &shstrndx), 0);
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) && std::strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".debug_info") == 0) {
        at = sh.sh_offset;
        size = sh.sh_size;
      }
    }
    elf_end(elf);
    ::close(fd);
  }
  ASSERT_GT(size, sizeof(Elf64_Chdr) + 40);
  {
    std::fstream f(debug, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at + sizeof(Elf64_Chdr) + 8));
    std::string junk(32, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  std::string cache = (root / "cache").string();
  Json j = AnalyzeWithCache(cache, "--debug-dir " + (root / "debug").string() + " " + Core("null_deref-stripped"));
  // The symbol table is not compressed: walk is still named, from it.
  EXPECT_EQ(j["threads"][0]["frames"][0]["function"], "walk");
  EXPECT_TRUE(Module(j, Bin("null_deref-stripped"))["symbols"]["debug_cache"].is_null());
  bool any_copy = false;
  if (fs::exists(cache + "/debug")) {
    for (const auto& e : fs::directory_iterator(cache + "/debug")) {
      any_copy |= e.path().filename().string().find(FileBuildId(debug)) != std::string::npos;
    }
  }
  EXPECT_FALSE(any_copy) << "a copy (or a temporary file) of the corrupt file was left";
}

}  // namespace
}  // namespace coroner
