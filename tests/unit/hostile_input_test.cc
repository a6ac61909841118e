// Hostile and benign input that once crashed, leaked or passed for complete:
// strings that are not UTF-8, DWARF paths naming local files, NT_FILE paths
// climbing out of --sysroot, cut compressed cores, a decode budget, sidecars
// that are FIFOs, links or nested without end, kernel logs and inventories
// too large, merged shards that carry SQL, empty notes. Each test fails
// without the fix it stands for.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/core.h"
#include "core/module_files.h"
#include "dataset/dataset.h"
#include "dataset/merge.h"
#include "dataset/metadata.h"
#include "epi/kernel_log.h"
#include "source/byte_source.h"
#include "text/text.h"
#include "unit/run_coroner.h"
#include "unit/synth_core.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::Coroner;

std::string Core(const std::string& variant) { return testing::ZooDir() + "/cores/" + variant + ".core"; }

// A directory of this test's own, removed at the end.
class Scratch {
 public:
  explicit Scratch(const std::string& name)
      : dir_(fs::path(::testing::TempDir()) / ("hostile-" + name + "-" + std::to_string(getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  std::string operator/(const std::string& name) const { return (dir_ / name).string(); }
  std::string str() const { return dir_.string(); }

 private:
  fs::path dir_;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool HasWarning(const Metadata& md, const std::string& text) {
  for (const auto& w : md.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

// Runs a program to its crash and keeps the core (the kernel's, else gdb's).
void MakeCore(const std::string& binary, const std::string& core) {
  std::string cmd = std::string(std::getenv("CORONER_SOURCE_DIR")) + "/tests/fixtures/make_core.sh '" + binary +
                    "' '" + core + "' >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

// --- Text that leaves coroner -------------------------------------------

TEST(Text, ValidUtf8RefusesWhatRfc3629Refuses) {
  const std::string r = "\xef\xbf\xbd";  // U+FFFD
  // Overlong forms (C0, C1 leads; E0 80-9F; F0 80-8F), UTF-16 surrogates
  // (ED A0-BF), past U+10FFFF (F4 90+, F5-FF), lone continuation bytes.
  EXPECT_EQ(ValidUtf8(std::string("a\xc1\x81z")), "a" + r + r + "z");
  EXPECT_EQ(ValidUtf8(std::string("\xc0\xaf")), r + r);
  EXPECT_EQ(ValidUtf8(std::string("\xe0\x80\xaf")), r + r + r);
  EXPECT_EQ(ValidUtf8(std::string("\xed\xa0\x80")), r + r + r);
  EXPECT_EQ(ValidUtf8(std::string("\xf0\x80\x80\xaf")), r + r + r + r);
  EXPECT_EQ(ValidUtf8(std::string("\xf4\x90\x80\x80")), r + r + r + r);
  EXPECT_EQ(ValidUtf8(std::string("\xf5\x80\x80\x80")), r + r + r + r);
  EXPECT_EQ(ValidUtf8(std::string("\x80")), r);
  EXPECT_EQ(ValidUtf8(std::string("cut \xe2\x82")), "cut " + r + r);
  // Control characters but tab, C1's (U+0080 to U+009F) among them.
  EXPECT_EQ(ValidUtf8(std::string("a\nb\tc\x01")), "a" + r + "b\tc" + r);
  EXPECT_EQ(ValidUtf8(std::string("job\xc2\x9b" "2J\xc2\x9d" "52;c;\xc2\x80")), "job" + r + "2J" + r + "52;c;" + r);
  // Well-formed sequences stay, at the edges of each range.
  for (const char* ok : {"\xc2\xa0", "\xdf\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf",
                         "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "caf\xc3\xa9"}) {
    EXPECT_EQ(ValidUtf8(std::string(ok)), ok);
  }
  // Whatever ValidUtf8 returns, the JSON library takes as it is.
  for (const char* bad : {"\xc1\x81", "\xed\xa0\x80", "\xf5\x80", "\xff"}) {
    Json j = ValidUtf8(std::string(bad));
    EXPECT_NO_THROW(j.dump()) << bad;
  }
  // JsonText never throws, even on a string nobody made valid.
  Json raw = std::string("h\xc1\x81st");
  EXPECT_EQ(JsonText(raw), "\"h" + r + r + "st\"");
}

// A C1 control (CSI, OSC: valid UTF-8) moves a terminal as an ESC does:
// a text line escapes it as it escapes C0's; JSON keeps it, escaped by
// the writer or not, as the character it is.
TEST(Text, C1ControlsAreEscapedLikeC0s) {
  EXPECT_EQ(EscapedLine("a\x1b[2Jb"), "a\\x1b[2Jb");
  EXPECT_EQ(EscapedLine("a\xc2\x9b" "2Jb\xc2\x9d" "52;c;x\xc2\x85"), "a\\x9b2Jb\\x9d52;c;x\\x85");
  EXPECT_EQ(EscapedLine("caf\xc3\xa9 \xc2\xa0"), "caf\xc3\xa9 \xc2\xa0");  // é and NBSP are text
  EXPECT_EQ(ValidUtf8KeepingControls("x\xc2\x9by\n"), "x\xc2\x9by\n");
}

// `query`'s table is read on a terminal: a cell from a core (a job id, a
// node name) cannot clear the screen or write the clipboard (OSC 52).
TEST(Text, AQueryTableCellCannotDriveTheTerminal) {
  QueryResult r;
  r.columns = {"job_id"};
  QueryValue v;
  v.type = QueryValue::Type::kText;
  v.text = "j\x1b[2J\xc2\x9d" "52;c;aGk=\x07";
  r.rows = {{v}};
  std::string table = QueryResultToTable(r);
  for (char c : table) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << table;
  EXPECT_EQ(table.find("\xc2\x9d"), std::string::npos) << table;
  EXPECT_NE(table.find("j\\x1b[2J\\x9d52;c;aGk=\\x07"), std::string::npos) << table;
}

TEST(Text, BasenameIsTheLastComponent) {
  EXPECT_EQ(Basename("/lib/x86_64-linux-gnu/libc.so.6"), "libc.so.6");
  EXPECT_EQ(Basename("/opt/src/repo/"), "repo");
  EXPECT_EQ(Basename("libc.so.6"), "libc.so.6");
  EXPECT_EQ(Basename("/"), "/");
  EXPECT_EQ(Basename(""), "");
}

TEST(Text, MarkdownCodeCannotBeClosedFromInside) {
  EXPECT_EQ(MarkdownCode("plain"), "`plain`");
  // glibc's assertion text with a backtick: the fence is longer than any run
  // inside, and the HTML stays inside the span.
  std::string assertion = "prog: x.c:3: f: Assertion `strcmp(s, \"<img src=x onerror=alert(1)>\") == 0' failed.";
  std::string span = MarkdownCode(assertion);
  EXPECT_EQ(span, "``" + assertion + "``");
  EXPECT_EQ(MarkdownCode("a``b"), "```a``b```");
  EXPECT_EQ(MarkdownCode("`edge`"), "`` `edge` ``");
  EXPECT_EQ(MarkdownCode("two\nlines"), "`two lines`");
  EXPECT_EQ(MarkdownEscape("a`b<c>\n"), "a\\`b\\<c\\> ");
  EXPECT_EQ(MarkdownFenced("```\nx\n~~~"), "'''\nx\n'''");
}

// A program whose file name is not UTF-8 (bytes C1 81): its core, between two
// good ones in one `analyze --json` call, still gives three JSON objects.
TEST(HostileInput, ACoreWhoseNameIsNotUtf8DoesNotStopTheOthers) {
  Scratch s("utf8");
  std::string bin = s / "na\xc1\x81me";
  fs::copy_file(testing::ZooDir() + "/bin/null_deref-O0", bin);
  MakeCore(bin, s / "bad.core");
  auto r = Coroner("analyze --json " + Core("null_deref-O0") + " '" + s / "bad.core" + "' " + Core("abort_assert-O0"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<Json> objects;
  for (std::string line; std::getline(lines, line);) objects.push_back(Json::parse(line));
  ASSERT_EQ(objects.size(), 3u) << r.out;
  EXPECT_EQ(objects[1]["process"]["comm"], "na\xef\xbf\xbd\xef\xbf\xbdme");
  EXPECT_EQ(objects[2]["diagnosis"]["syndrome"], "abort-assert");
  // The text and Markdown forms of the same core are valid UTF-8 too.
  for (const char* format : {"text", "md"}) {
    auto t = Coroner(std::string("analyze --format ") + format + " '" + s / "bad.core" + "'");
    ASSERT_EQ(t.status, 0) << t.err;
    std::istringstream text(t.out);
    for (std::string line; std::getline(text, line);) EXPECT_EQ(ValidUtf8(line), line) << format;
  }
}

// A crash line whose host is not UTF-8 once made `epi --json` abort for the
// whole dataset.
TEST(HostileInput, ACrashLineWithABadHostLeavesEpiJsonValid) {
  Scratch s("crash-line");
  std::string line =
      "pod-1 coroner-crash: v=1 pid=7 tid=7 time=1791947520.000000000 host=h%c1%81st comm=c sig=11 code=1 addr=0x0 "
      "regs=rax:0x0,rbx:0x0,rcx:0x0,rdx:0x0,rsi:0x0,rdi:0x0,rbp:0x1000,rsp:0x2000,r8:0x0,r9:0x0,r10:0x0,r11:0x0,"
      "r12:0x0,r13:0x0,r14:0x0,r15:0x0,rip:0x0,eflags:0x0,csgsfs:0x0,err:0x0,trapno:0x0,oldmask:0x0,cr2:0x0 "
      "stack=0x1f80:0x0,-,0x1 bt=0x0,ab+0x10 fps=0x1000 stackmap=0x1000-0x3000 mods=ab@0x0@/bin/x "
      "segs=0:0x400000-0x401000:0x0:rx\n";
  WriteText(s / "crash.log", line + line);
  auto scan = Coroner("scan --log " + s / "crash.log" + " --db " + s / "d.db");
  ASSERT_EQ(scan.status, 0) << scan.err;
  auto host = Coroner("query --db " + s / "d.db" + " --json \"SELECT value FROM attributes WHERE key = 'host'\"");
  ASSERT_EQ(host.status, 0) << host.err;
  EXPECT_EQ(Json::parse(host.out)[0]["value"], "h\xef\xbf\xbd\xef\xbf\xbdst");
  auto epi = Coroner("epi --db " + s / "d.db" + " --json");
  ASSERT_EQ(epi.status, 0) << epi.err;
  EXPECT_EQ(Json::parse(epi.out)["cores"], 2);
}

// --- Source files named by DWARF ------------------------------------------

// A program built with `#line 1 "<a local file>"`: its DWARF names a file the
// user never pointed coroner at. Neither `sources` nor the Markdown report
// reads it: not as it stands, and not through `..` from a source root.
TEST(HostileInput, ADwarfPathIsNeverReadAsItStands) {
  Scratch s("dwarf-path");
  std::string secret = s / "secret.txt";
  WriteText(secret, "TOPSECRET-1\nTOPSECRET-2\nTOPSECRET-3\nTOPSECRET-4\n");
  WriteText(s / "prog.c", "#line 1 \"" + secret + "\"\nint main(void) { volatile int *p = 0; return *p; }\n");
  ASSERT_EQ(std::system(("cc -O0 -g -o '" + s / "prog" + "' '" + s / "prog.c" + "'").c_str()), 0);
  MakeCore(s / "prog", s / "prog.core");
  fs::create_directories(s / "root/sub");
  for (const std::string& flags : {std::string(), " --source-root " + s / "root/sub"}) {
    auto src = Coroner("sources " + s / "prog.core" + flags);
    ASSERT_EQ(src.status, 0) << src.err;
    EXPECT_EQ(src.out.find("TOPSECRET"), std::string::npos) << src.out;
    auto md = Coroner("analyze --format md " + s / "prog.core" + flags);
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_EQ(md.out.find("TOPSECRET"), std::string::npos) << md.out;
  }
  // Under a root that holds it, by its trailing components, it is found:
  // the lookup works, only the escape is closed.
  fs::create_directories(s / "checkout");
  fs::copy_file(secret, s / "checkout/secret.txt");
  auto found = Coroner("sources " + s / "prog.core --source-root " + s / "checkout");
  ASSERT_EQ(found.status, 0) << found.err;
  EXPECT_NE(found.out.find("TOPSECRET-1"), std::string::npos) << found.out;
}

// --- Hostile DWARF ---------------------------------------------------------

// A member whose offset wraps past the object's end once printed coroner's
// own heap; a struct made of itself took exponential time. Each is now
// shown as unavailable, with the reason.
TEST(HostileInput, HostileDwarfTypesAreBoundedAndChecked) {
  Scratch s("dwarf-types");
  std::string src = std::string(std::getenv("CORONER_SOURCE_DIR")) + "/tests/unit/hostile_dwarf.s";
  WriteText(s / "main.c", "void crash_here(void);\nint main(void) { crash_here(); return 0; }\n");
  ASSERT_EQ(std::system(("cc -O0 -g -fno-omit-frame-pointer -o '" + s / "prog" + "' '" + s / "main.c" + "' '" + src + "'").c_str()), 0);
  MakeCore(s / "prog", s / "prog.core");
  auto r = Coroner("analyze " + s / "prog.core");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\n        w = <unavailable: a member outside the object is not shown>\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n        l = <unavailable: it holds more than 4096 values>\n"), std::string::npos) << r.out;
}

// --- --sysroot ----------------------------------------------------------

TEST(HostileInput, SysrootPathsResolveInsideTheSysroot) {
  Scratch s("sysroot");
  std::string root = s / "root";
  fs::create_directories(root + "/usr/lib");
  WriteText(root + "/usr/lib/libx.so", "inside");
  fs::create_directory_symlink("/usr/lib", root + "/lib");          // absolute: the sysroot's /usr/lib
  fs::create_directory_symlink("../../../../..", root + "/up");     // climbs: stops at the top
  fs::create_symlink("loop-b", root + "/loop-a");
  fs::create_symlink("loop-a", root + "/loop-b");
  EXPECT_EQ(InSysroot(root, "/lib/libx.so"), root + "/usr/lib/libx.so");
  EXPECT_EQ(InSysroot(root, "/../../../etc/passwd"), root + "/etc/passwd");
  EXPECT_EQ(InSysroot(root, "/up/usr/lib/libx.so"), root + "/usr/lib/libx.so");
  EXPECT_EQ(InSysroot(root, "/usr/./lib/../lib/libx.so"), root + "/usr/lib/libx.so");
  EXPECT_EQ(InSysroot(root, "/loop-a/x"), "");
  EXPECT_EQ(InSysroot("", "/usr/lib/x"), "/usr/lib/x");  // no sysroot: the host's path
  // The tree's own file named by its host path (qemu-user's program): its
  // rest is resolved inside the tree, so it cannot climb out either.
  EXPECT_EQ(InSysroot(root, root + "/usr/lib/libx.so"), root + "/usr/lib/libx.so");
  EXPECT_EQ(InSysroot(root, root + "/lib/libx.so"), root + "/usr/lib/libx.so");
  EXPECT_EQ(InSysroot(root, root + "/../../../etc/passwd"), root + "/etc/passwd");
  EXPECT_EQ(InSysroot(root + "/", root + "/usr/lib/libx.so"), root + "/usr/lib/libx.so");

  // End to end: a core whose NT_FILE names `/../<outside>/libc.so.6`, with
  // an ELF file really there outside the sysroot: the module is missing.
  std::string outside = s / "outside";
  fs::create_directories(outside);
  fs::copy_file(testing::ZooDir() + "/bin/null_deref-O0", outside + "/libc.so.6");
  std::string hostile = "/../../../../../../.." + outside + "/libc.so.6";
  std::vector<std::byte> file_note(16 + 24 + hostile.size() + 1);
  testing::Put64(file_note, 0, 1);       // one entry
  testing::Put64(file_note, 8, 4096);    // page size
  testing::Put64(file_note, 16, 0x7f0000000000);
  testing::Put64(file_note, 24, 0x7f0000001000);
  testing::Put64(file_note, 32, 0);
  std::memcpy(file_note.data() + 40, hostile.data(), hostile.size());
  testing::SynthCore synth;
  synth.AddNote("CORE", 1, testing::SynthCore::Prstatus(100, 11, 0x7f0000000100, 0x7ffc0000));
  synth.AddNote("CORE", 0x46494c45, file_note);  // NT_FILE
  synth.AddLoad(0x7f0000000000, 0x1000, std::vector<std::byte>(16), 5);  // r-x: code mapped
  auto bytes = synth.Build();
  CoreOptions options;
  options.sysroot = root;
  auto core = Core::Open(MakeMemorySource(bytes), options);
  ASSERT_TRUE(core.ok()) << core.error().message;
  bool seen = false;
  for (const auto& m : (*core)->modules()) {
    if (m.path != hostile) continue;
    seen = true;
    EXPECT_EQ(m.file_status, ModuleFileStatus::kMissing);
  }
  EXPECT_TRUE(seen);
}

// --- Cut and costly compressed cores ----------------------------------------

TEST(HostileInput, CutCompressedCoresSayTheyAreCut) {
  Scratch s("cut");
  struct Case {
    const char* core;
    size_t keep;
  };
  for (Case c : {Case{"null_deref-O0.core.zst", 8000}, Case{"many_threads-O0.core.xz", 2000},
                 Case{"null_deref-O0.core.lz4", 8000}, Case{"null_deref-O0.core.lz4", 40},
                 Case{"null_deref-O0.core.zst", 40}}) {
    std::string whole = ReadText(testing::ZooDir() + "/cores/" + c.core);
    ASSERT_GT(whole.size(), c.keep) << c.core;
    std::string cut = s / (std::to_string(c.keep) + "-" + c.core);
    WriteText(cut, whole.substr(0, c.keep));
    auto r = Coroner("analyze --json " + cut);
    Json j = Json::parse(r.out);
    if (r.status == 0) {
      EXPECT_EQ(j["core"]["truncated"], true) << c.core;
      std::string missing = j["core"]["missing"].dump();
      EXPECT_NE(missing.find("stream cut"), std::string::npos) << c.core << ": " << missing;
    } else {  // nothing decodable: the error says why, and the core is still cut
      EXPECT_NE(j["error"]["message"].get<std::string>().find("stream cut"), std::string::npos) << r.out;
      EXPECT_EQ(j["error"]["kind"], "truncated") << r.out;
      EXPECT_EQ(j["core"]["truncated"], true) << r.out;
    }
    // scan: a row that says it is cut, ok or error.
    std::string db = cut + ".db";
    ASSERT_EQ(Coroner("scan " + cut + " --db " + db).status, 0);
    auto rows = Coroner("query --db " + db + " \"SELECT truncated FROM cores\"");
    EXPECT_NE(rows.out.find("1"), std::string::npos) << c.core << ": " << rows.out;
    // The whole stream is not cut.
    auto w = Coroner("analyze --json " + testing::ZooDir() + "/cores/" + c.core);
    ASSERT_EQ(w.status, 0) << w.err;
    EXPECT_EQ(Json::parse(w.out)["core"]["truncated"], false) << c.core;
  }
}

// 4,096 threads whose stacks lie over 60,000 one-byte segments: the read
// plan (one range per thread and overlapping segment, before) stays small
// and quick, and the core is analyzed (a hang here is the test's timeout).
TEST(HostileInput, ThousandsOfThreadsOverTinySegmentsKeepThePlanSmall) {
  Scratch s("plan");
  constexpr uint64_t kBase = 0x7f0000000000;
  testing::SynthCore core;
  for (int t = 0; t < 4096; ++t)
    core.AddNote("CORE", 1, testing::SynthCore::Prstatus(1000 + t, t == 0 ? 11 : 0, 0, kBase + 16 * (t % 1024)));
  for (int i = 0; i < 60000; ++i) core.AddLoad(kBase + 16 * static_cast<uint64_t>(i), 16, {std::byte{0x11}}, 6);
  std::string path = s / "plan.core";
  auto bytes = core.Build();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
  auto r = Coroner("analyze --json " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["threads"].size(), 4096u);
}

// A compressed core whose decoder fails after the notes (a flipped byte in
// its checksum or its data): the failure is the source's problem, said in
// `missing` and `truncated`, and the scan's row is an io error (which the
// next scan retries), never an `ok` row with a short signature.
TEST(HostileInput, ACorruptCompressedStreamIsASourceProblem) {
  Scratch s("corrupt");
  for (const char* name : {"null_deref-O0.core.zst", "null_deref-O0.core.lz4", "many_threads-O0.core.xz"}) {
    SCOPED_TRACE(name);
    std::string whole = ReadText(testing::ZooDir() + "/cores/" + name);
    ASSERT_GT(whole.size(), 4096u);
    std::string bad = whole;
    bad[bad.size() - 3] = static_cast<char>(bad[bad.size() - 3] ^ 0x55);  // the stream's check, or its footer
    std::string path = s / (std::string("flipped-") + name);
    WriteText(path, bad);
    auto r = Coroner("analyze --json " + path);
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    Json j = Json::parse(r.out);
    EXPECT_EQ(j["core"]["truncated"], true);
    std::string missing = j["core"]["missing"].dump();
    EXPECT_NE(missing.find("bytes decoded"), std::string::npos) << missing;
    std::string db = path + ".db";
    ASSERT_EQ(Coroner("scan " + path + " --db " + db).status, 0);
    auto rows = Coroner("query --json --db " + db + " \"SELECT status, error FROM cores\"");
    Json row = Json::parse(rows.out).at(0);
    EXPECT_EQ(row["status"], "error") << rows.out;
    EXPECT_EQ(row["error"].get<std::string>().rfind("io: ", 0), 0u) << rows.out;
  }
}

// Reads that alternate between the two ends of a long stream restart the
// decoder each time; past three passes over the stream plus 4 GiB of
// decoding, such reads are refused and the source says so.
TEST(HostileInput, DecodingIsBoundedAndSaysWhenItStops) {
  // 96 MiB of a short repeating pattern: a few KiB compressed, and no block
  // of zeros (which the source keeps without decoding again).
  const size_t size = 96u << 20;
  std::vector<char> pattern(size);
  for (size_t i = 0; i < size; ++i) pattern[i] = static_cast<char>(1 + i % 251);
  std::vector<std::byte> packed(ZSTD_compressBound(size));
  size_t n = ZSTD_compress(packed.data(), packed.size(), pattern.data(), size, 1);
  ASSERT_FALSE(ZSTD_isError(n));
  packed.resize(n);
  auto source = MakeCompressedSource(MakeMemorySource(packed), Compression::kZstd);
  ASSERT_TRUE(source.ok());
  // Two far places more than the 16 MiB window apart, each followed by the
  // head: every read of the head restarts, every far read decodes anew.
  std::byte b[8];
  size_t served = 0, refused = 0;
  for (int i = 0; i < 400 && refused == 0; ++i) {
    uint64_t far_at = i % 2 ? size - 8 : size / 2;
    auto far = (*source)->ReadUpTo(far_at, b);
    auto near = (*source)->ReadUpTo(0, b);
    ASSERT_TRUE(far.ok() && near.ok());
    served += *far == 8;
    (*near == 8 ? served : refused) += 1;
  }
  EXPECT_GT(served, 10u);
  EXPECT_EQ(refused, 1u);
  auto problems = (*source)->Problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, SourceProblem::Kind::kBudget);
  EXPECT_NE(problems[0].what.find("not served"), std::string::npos) << problems[0].what;
}

// --- Sidecars --------------------------------------------------------------

TEST(HostileInput, SidecarsAreRegularFilesInTheTreeAndShallow) {
  Scratch s("sidecar");
  fs::create_directories(s / "fleet/host");
  std::string core = s / "fleet/host/core.1";
  WriteText(core, "not a core");
  // A link out of the fleet's tree: a credentials file is not metadata.
  WriteText(s / "credentials.json", "{\"secret\": \"hunter2\"}");
  fs::create_symlink(s / "credentials.json", core + ".json");
  Metadata md = ReadMetadata(core, std::nullopt);
  EXPECT_FALSE(md.Get("secret"));
  EXPECT_TRUE(HasWarning(md, "symbolic link out of the core's directory")) << ::testing::PrintToString(md.warnings);
  // A link inside it is followed.
  fs::remove(core + ".json");
  WriteText(s / "fleet/host/meta.json", "{\"host\": \"h1\"}");
  fs::create_symlink("meta.json", core + ".json");
  md = ReadMetadata(core, std::nullopt);
  ASSERT_TRUE(md.Get("host"));
  EXPECT_EQ(*md.Get("host"), "h1");
  // Nested 100,000 deep: refused before any recursive walk.
  fs::remove(core + ".json");
  WriteText(core + ".json", "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}");
  md = ReadMetadata(core, std::nullopt);
  EXPECT_FALSE(md.Get("a"));
  EXPECT_TRUE(HasWarning(md, "nested deeper than 32 levels")) << ::testing::PrintToString(md.warnings);
  // Brackets inside strings are not nesting.
  WriteText(core + ".json", "{\"a\": \"" + std::string(100, '[') + "\"}");
  md = ReadMetadata(core, std::nullopt);
  ASSERT_TRUE(md.Get("a"));
  EXPECT_EQ(*md.Get("a"), std::string(100, '['));
}

// --- Sizes ----------------------------------------------------------------

TEST(HostileInput, KernelLogsKeepABoundedNumberOfEvents) {
  Scratch s("kernel-log");
  std::string path = s / "node-1.log";
  {
    std::ofstream out(path);
    for (int i = 0; i < 250000; ++i)
      out << "2026-10-14T03:12:00+00:00 node-1 kernel: mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 4\n";
    out << "2026-10-14T03:12:01+00:00 node-1 kernel: no newline at the end";
  }
  auto log = LoadKernelLog(path, 2026);
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_EQ(log->lines, 250001u);
  EXPECT_EQ(log->events.size(), 200000u);
  EXPECT_EQ(log->events[0].kind, EventKind::kMce);
  EXPECT_EQ(log->events[0].host, "node-1");
  bool warned = false;
  for (const auto& w : log->warnings) warned |= w.find("50000 kernel log events past the first 200000") != std::string::npos;
  EXPECT_TRUE(warned);
  // The same text parsed whole gives the same events: the block reader
  // splits no line.
  auto whole = ParseKernelLog(ReadText(path), "node-1", 2026);
  EXPECT_EQ(whole.lines, log->lines);
  EXPECT_EQ(whole.events.size(), log->events.size());
}

TEST(HostileInput, AnInventoryTooLargeIsRefusedUnread) {
  Scratch s("inventory");
  std::string path = s / "hosts.csv";
  WriteText(path, "host,valid_from,valid_to\n");
  ASSERT_EQ(truncate(path.c_str(), (256 << 20) + 1), 0);  // sparse: nothing to read, a size to refuse
  auto inv = Inventory::Load(path);
  ASSERT_FALSE(inv.ok());
  EXPECT_NE(inv.error().message.find("larger than 256 MiB"), std::string::npos) << inv.error().message;
}

// 100 threads whose frame-pointer chains each go on past the 1,024-frame
// limit: the first 64 threads unwind in full, and the frames of all threads
// stop at 65,536; the threads cut by that budget say so.
TEST(HostileInput, AllThreadsTogetherHaveAFrameBudget) {
  Scratch s("frames");
  const uint64_t code = 0x400000, stack = 0x7ff000000000;
  const size_t links = 2000;
  std::vector<std::byte> chain(16 * (links + 1));
  for (size_t i = 0; i < links; ++i) {
    testing::Put64(chain, 16 * i, stack + 16 * (i + 1));  // the caller's rbp
    testing::Put64(chain, 16 * i + 8, code + 0x100);      // a return address into code
  }
  testing::SynthCore synth;
  for (int t = 0; t < 100; ++t) {
    auto prstatus = testing::SynthCore::Prstatus(1000 + t, t == 0 ? 11 : 0, code + 0x100, stack);
    testing::Put64(prstatus, 112 + 4 * 8, stack);  // rbp
    synth.AddNote("CORE", 1, prstatus);
  }
  synth.AddLoad(code, 0x1000, std::vector<std::byte>(0x1000, std::byte{0x90}), 5);  // r-x: nops
  synth.AddLoad(stack, chain.size(), chain, 6);                                       // rw-
  auto bytes = synth.Build();
  WriteText(s / "frames.core", std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  auto r = Coroner("analyze --json " + s / "frames.core");
  ASSERT_EQ(r.status, 0) << r.err;
  Json j = Json::parse(r.out);
  ASSERT_EQ(j["threads"].size(), 100u);
  size_t total = 0;
  for (size_t t = 0; t < 100; ++t) {
    const Json& thread = j["threads"][t];
    total += thread["frames"].size();
    if (t < 64) {
      EXPECT_EQ(thread["frames"].size(), 1024u) << t;
    } else {
      EXPECT_EQ(thread["frames"].size(), 1u) << t;
      EXPECT_NE(thread["stop_reason"].get<std::string>().find("budget of 65536 frames"), std::string::npos)
          << thread["stop_reason"];
    }
  }
  EXPECT_EQ(total, 64u * 1024 + 36);
}

// --- Merge ---------------------------------------------------------------

TEST(HostileInput, AShardWithATriggerIsNotMerged) {
  Scratch s("merge");
  auto scan = Coroner("scan " + Core("null_deref-O0") + " --db " + s / "a.db");
  ASSERT_EQ(scan.status, 0) << scan.err;
  scan = Coroner("scan " + Core("abort_assert-O0") + " --db " + s / "b.db");
  ASSERT_EQ(scan.status, 0) << scan.err;
  {
    auto ds = Dataset::Open(s / "a.db", false);
    ASSERT_TRUE(ds.ok());
    ASSERT_TRUE(ds->Query("CREATE TRIGGER wipe AFTER INSERT ON cores BEGIN DELETE FROM attributes; END").ok());
  }
  auto merged = MergeDatasets(s / "out.db", {s / "a.db", s / "b.db"});
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.error().message.find("not merged: its schema has an object"), std::string::npos)
      << merged.error().message;
  EXPECT_NE(merged.error().message.find("trigger wipe"), std::string::npos) << merged.error().message;
  EXPECT_FALSE(fs::exists(s / "out.db"));
  // Without the trigger the same shards merge.
  {
    auto ds = Dataset::Open(s / "a.db", false);
    ASSERT_TRUE(ds->Query("DROP TRIGGER wipe").ok());
  }
  auto clean = MergeDatasets(s / "out.db", {s / "a.db", s / "b.db"});
  ASSERT_TRUE(clean.ok()) << clean.error().message;
}

// --- Commands that must not write ---------------------------------------------

// `coroner query` reads: VACUUM INTO, ATTACH and writes are refused, and
// no file appears; reading statements still work.
TEST(HostileInput, QueryWritesNoFile) {
  Scratch s("query");
  auto scan = Coroner("scan " + Core("null_deref-O0") + " --db " + s / "a.db");
  ASSERT_EQ(scan.status, 0) << scan.err;
  for (const std::string& sql :
       {"VACUUM INTO '" + s / "copy.db" + "'", "ATTACH DATABASE '" + s / "copy.db" + "' AS x",
        std::string("DELETE FROM cores"), std::string("PRAGMA journal_mode = DELETE"),
        std::string("CREATE TEMP TABLE t AS SELECT 1")}) {
    SCOPED_TRACE(sql);
    auto q = Coroner("query --db " + s / "a.db" + " \"" + sql + "\"");
    EXPECT_NE(q.status, 0) << q.out;
    EXPECT_FALSE(fs::exists(s / "copy.db"));
  }
  auto q = Coroner("query --db " + s / "a.db" + " \"SELECT count(*) AS n FROM cores\"");
  ASSERT_EQ(q.status, 0) << q.err;
  EXPECT_NE(q.out.find("1"), std::string::npos) << q.out;
  q = Coroner("query --db " + s / "a.db" + " \"PRAGMA table_info(cores)\"");
  EXPECT_EQ(q.status, 0) << q.err;
}

// `coroner demo --out DIR` never replaces what it did not make.
TEST(HostileInput, DemoLeavesADirectoryItDidNotMakeAlone) {
  Scratch s("demo");
  fs::create_directories(s / "fleet/host-1");
  WriteText(s / "fleet/host-1/core.1", "a real fleet's core");
  WriteText(s / "dataset.db", "a real dataset");
  auto r = Coroner("demo --out " + s.str());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("not a directory an earlier demo made"), std::string::npos) << r.err;
  EXPECT_EQ(ReadText(s / "fleet/host-1/core.1"), "a real fleet's core");
  EXPECT_EQ(ReadText(s / "dataset.db"), "a real dataset");
}

// An inventory of 2,000 long column names and 2,000 rows of empty cells
// stores each name once: a few MB of text, not a gigabyte of copies.
TEST(HostileInput, AnInventoryStoresEachColumnNameOnce) {
  std::string header = "host";
  for (int i = 0; i < 2000; ++i) header += "," + std::string(1000, 'c') + std::to_string(i);
  std::string empty_cells(2000, ',');
  std::string text = header + "\n";
  for (int r = 0; r < 2000; ++r) text += "h" + std::to_string(r) + empty_cells + "\n";
  auto inv = Inventory::Parse(text);
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->rows().size(), 2000u);
  for (const auto& row : inv->rows()) EXPECT_TRUE(row.columns.empty());
  // A row with values names its columns by the header's own strings.
  auto two = Inventory::Parse("host,rack,zone\nh1,r7,\nh2,r8,z2\n");
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->rows()[0].columns.size(), 1u);
  EXPECT_EQ(two->rows()[0].columns[0].first, "rack");
  EXPECT_EQ(two->rows()[0].columns[0].second, "r7");
  ASSERT_EQ(two->rows()[1].columns.size(), 2u);
  EXPECT_EQ(two->rows()[1].columns[0].first.data(), two->rows()[0].columns[0].first.data());
  Inventory copy = *two;  // a copy keeps the names alive
  two = Inventory::Parse("host\n");
  EXPECT_EQ(copy.rows()[1].columns[1].first, "zone");
}

// --- Empty notes -------------------------------------------------------------

// An empty PT_NOTE inside the first 64 bytes, read through a file: the
// head cache once copied from a null pointer (UBSan).
TEST(HostileInput, AnEmptyNoteNearTheHeadReadsNothing) {
  Scratch s("empty-note");
  testing::SynthCore synth;
  synth.AddNote("CORE", 1, testing::SynthCore::Prstatus(100, 11, 0x401000, 0x7ffc0000));
  auto bytes = synth.Build();
  // A second PT_NOTE header: offset 16, no bytes. Appended after the table
  // by moving it: simplest is to point the first note's header there.
  uint64_t phoff = 0;
  std::memcpy(&phoff, bytes.data() + 32, 8);
  uint16_t phnum = 0;
  std::memcpy(&phnum, bytes.data() + 56, 2);
  for (uint16_t i = 0; i < phnum; ++i) {
    size_t ph = phoff + 56u * i;
    uint32_t type = 0;
    std::memcpy(&type, bytes.data() + ph, 4);
    if (type != 4) continue;  // PT_NOTE
    testing::Put64(bytes, ph + 8, 16);   // p_offset
    testing::Put64(bytes, ph + 32, 0);   // p_filesz
  }
  std::string path = s / "empty-note.core";
  WriteText(path, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  auto source = OpenCoreSource(path, std::nullopt);
  ASSERT_TRUE(source.ok());
  CoreOptions options;
  options.check_module_files = false;
  auto core = Core::Open(std::move(*source), options);
  ASSERT_TRUE(core.ok()) << core.error().message;
  EXPECT_TRUE((*core)->threads().empty());
}

}  // namespace
}  // namespace coroner
