// Bad input is normal: every malformed, truncated or hostile core gets a clear
// one-line error or a partial result that says what is missing.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "core/core.h"
#include "unit/synth_core.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

using testing::SynthCore;

CoreOptions NoDisk() {
  CoreOptions o;
  o.check_module_files = false;
  return o;
}

Expected<std::unique_ptr<Core>> OpenBytes(std::vector<std::byte> bytes) {
  return Core::Open(MakeMemorySource(std::move(bytes)), NoDisk());
}

std::vector<std::byte> ReadFile(const std::string& path, size_t limit = SIZE_MAX) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (c.size() > limit) c.resize(limit);
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

void ExpectOneLine(const Error& e) {
  EXPECT_FALSE(e.message.empty());
  EXPECT_EQ(e.message.find('\n'), std::string::npos) << e.message;
}

SynthCore OneThread() {
  SynthCore s;
  s.AddNote("CORE", 1, SynthCore::Prstatus(100, 11, 0x401000, 0x7ffc0000));
  s.AddNote("CORE", 0x53494749, SynthCore::Siginfo(11, 1, 0x8));
  return s;
}

TEST(BadInput, EmptyFile) {
  auto c = OpenBytes({});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kNotElf);
  EXPECT_EQ(c.error().message, "empty file");
}

TEST(BadInput, RandomBytes) {
  std::mt19937 rng(7);
  std::vector<std::byte> b(4096);
  for (auto& x : b) x = std::byte(rng() & 0xff);
  auto c = OpenBytes(b);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kNotElf);
  ExpectOneLine(c.error());
}

TEST(BadInput, ThirtyTwoBitElf) {
  SynthCore s = OneThread();
  s.elf_class = 1;
  auto c = OpenBytes(s.Build());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kUnsupported);
  EXPECT_NE(c.error().message.find("32-bit"), std::string::npos);
}

TEST(BadInput, BigEndianAndOtherMachine) {
  SynthCore be = OneThread();
  be.data_encoding = 2;
  auto c = OpenBytes(be.Build());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kUnsupported);
  SynthCore riscv = OneThread();
  riscv.machine = 243;  // EM_RISCV
  c = OpenBytes(riscv.Build());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kUnsupported);
  EXPECT_NE(c.error().message.find("machine 243, not x86_64 (62) or aarch64 (183)"), std::string::npos)
      << c.error().message;
  // An aarch64 core whose NT_PRSTATUS has x86_64's size (336 bytes) is too
  // short for aarch64's registers (392): the thread is left out, and said so.
  SynthCore arm = OneThread();
  arm.machine = 183;  // EM_AARCH64
  c = OpenBytes(arm.Build());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)->arch(), Arch::kAarch64);
  EXPECT_TRUE((*c)->threads().empty());
  ASSERT_FALSE((*c)->soft_errors().empty());
  EXPECT_NE((*c)->soft_errors()[0].find("expected 392; thread skipped"), std::string::npos) << (*c)->soft_errors()[0];
}

TEST(BadInput, NonCoreElfIsARealExecutable) {
  // A zoo binary: a real ELF executable, not a core.
  auto zoo = testing::LoadZoo();
  ASSERT_FALSE(zoo.empty());
  auto c = OpenBytes(ReadFile(zoo[0].binary));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kUnsupported);
  EXPECT_NE(c.error().message.find("not a core dump"), std::string::npos) << c.error().message;
}

TEST(BadInput, WrongPhentsizeAndNoProgramHeaders) {
  SynthCore s = OneThread();
  s.phentsize = 32;
  auto c = OpenBytes(s.Build());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kMalformed);
  SynthCore z = OneThread();
  z.fake_phnum = 0;
  c = OpenBytes(z.Build());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::kMalformed);
}

TEST(BadInput, ProgramHeaderCountBeyondTheData) {
  // 65534 program headers claimed in a core of a few hundred bytes: no huge
  // allocation, the ones present are read and the rest reported missing.
  SynthCore s = OneThread();
  s.fake_phnum = 0xfffe;
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE((*c)->truncated());
  ASSERT_FALSE((*c)->missing().empty());
  EXPECT_NE((*c)->missing()[0].find("program headers cut short"), std::string::npos);
}

TEST(BadInput, ProgramHeadersOffTheEnd) {
  SynthCore s = OneThread();
  s.fake_phoff = 0xffffffffffffff00ull;
  auto c = OpenBytes(s.Build());
  ASSERT_FALSE(c.ok());
  ExpectOneLine(c.error());
}

TEST(BadInput, NoteWithAbsurdSizes) {
  SynthCore s = OneThread();
  s.notes.push_back({"CORE", 1, SynthCore::Prstatus(101, 11, 1, 2), std::nullopt, 0xfffffff0u});
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)->threads().size(), 1u);  // the good thread before it survives
  EXPECT_EQ((*c)->threads()[0].tid, 100);
  EXPECT_FALSE((*c)->soft_errors().empty());
  EXPECT_FALSE((*c)->missing().empty());

  SynthCore n = OneThread();
  n.notes.insert(n.notes.begin(), {"CORE", 1, {}, 0xffffffffu, std::nullopt});
  c = OpenBytes(n.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->threads().empty());
  EXPECT_FALSE((*c)->missing().empty());
}

TEST(BadInput, ShortPrstatusIsSkippedNotRead) {
  SynthCore s = OneThread();
  auto short_desc = SynthCore::Prstatus(200, 11, 1, 2);
  short_desc.resize(100);
  s.AddNote("CORE", 1, short_desc);
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->threads().size(), 1u);
  EXPECT_FALSE((*c)->soft_errors().empty());
}

TEST(BadInput, FileNoteWithAbsurdCount) {
  SynthCore s = OneThread();
  std::vector<std::byte> file;
  testing::Put64(file, 0, 1ull << 60);  // count
  testing::Put64(file, 8, 4096);        // page size
  testing::Put64(file, 16, 0x1000);
  s.AddNote("CORE", 0x46494c45, file);
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->files().empty());
  bool said = false;
  for (const auto& e : (*c)->soft_errors()) said |= e.find("NT_FILE") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(BadInput, FileNoteWithoutNames) {
  SynthCore s = OneThread();
  std::vector<std::byte> file;
  testing::Put64(file, 0, 2);
  testing::Put64(file, 8, 4096);
  for (int i = 0; i < 2; ++i) {
    testing::Put64(file, 16 + 24 * i, 0x400000 + 0x1000 * i);
    testing::Put64(file, 24 + 24 * i, 0x401000 + 0x1000 * i);
    testing::Put64(file, 32 + 24 * i, i);
  }
  s.AddNote("CORE", 0x46494c45, file);  // no strings after the entries
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->files().empty());
  EXPECT_FALSE((*c)->soft_errors().empty());
}

TEST(BadInput, OverlappingSegmentsKeepTheFirst) {
  SynthCore s = OneThread();
  std::vector<std::byte> a(4096, std::byte{0xaa}), b(4096, std::byte{0xbb});
  s.AddLoad(0x10000, 0x1000, a).AddLoad(0x10800, 0x1000, b);
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->memory().segments().size(), 1u);
  EXPECT_EQ((*c)->memory().Read<uint8_t>(0x10900).value_or(0), 0xaa);
  EXPECT_FALSE((*c)->memory().Read<uint8_t>(0x11100).has_value());
  ASSERT_FALSE((*c)->soft_errors().empty());
  EXPECT_NE((*c)->soft_errors()[0].find("overlaps"), std::string::npos);
}

TEST(BadInput, SegmentBeyondTheDataIsMappedButAbsent) {
  SynthCore s = OneThread();
  s.AddLoad(0x20000, 0x2000, std::vector<std::byte>(0x1000, std::byte{1}));
  s.loads.back().fake_filesz = 0x2000;  // claims more than the file holds
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->truncated());
  EXPECT_EQ((*c)->memory().State(0x20010), AddressState::kPresent);
  EXPECT_EQ((*c)->memory().State(0x21010), AddressState::kAbsent);
  EXPECT_EQ((*c)->memory().State(0x30000), AddressState::kUnmapped);
}

TEST(BadInput, SegmentThatWrapsTheAddressSpace) {
  SynthCore s = OneThread();
  s.AddLoad(0xfffffffffffff000ull, 0x2000, {});
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE((*c)->memory().segments().empty());
  EXPECT_FALSE((*c)->soft_errors().empty());
}

TEST(BadInput, AuxvStringsInUnmappedOrUnterminatedMemory) {
  SynthCore s = OneThread();
  // AT_EXECFN (31) unmapped; AT_PLATFORM (15) in a segment with no NUL.
  s.AddNote("CORE", 6, SynthCore::Auxv({{31, 0xdead0000}, {15, 0x30000}, {6, 4096}}));
  s.AddLoad(0x30000, 0x100, std::vector<std::byte>(0x100, std::byte{'x'}));
  auto c = OpenBytes(s.Build());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->auxv().pagesz.value_or(0), 4096u);
  EXPECT_FALSE((*c)->auxv().execfn.has_value());
  EXPECT_FALSE((*c)->auxv().platform.has_value());
}

TEST(BadInput, SyntheticSignalIsRead) {
  // The builder itself, checked once on a well-formed core.
  auto c = OpenBytes(OneThread().Build());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->signal());
  EXPECT_EQ((*c)->signal()->signo, 11);
  EXPECT_EQ((*c)->signal()->fault_address.value_or(1), 0x8u);
  EXPECT_EQ((*c)->threads()[0].registers.pc(), 0x401000u);
}

// Real cores cut at every 4 KiB boundary of their first 64 KiB (and a few
// odd places): a clear error, or a partial result that says what is missing.
TEST(BadInput, RealCoresCutEverywhere) {
  std::string dir = testing::ZooDir() + "/cores/";
  for (std::string name : {"null_deref-O0.core", "many_threads-O0.core", "null_deref-O0-gcore.core",
                           "abort_assert-static.core"}) {
    auto whole = ReadFile(dir + name, 1 << 20);
    std::vector<size_t> cuts = {1, 3, 4, 16, 63, 64, 65, 100, 120, 121};
    for (size_t k = 4096; k <= 65536; k += 4096) {
      cuts.push_back(k);
      cuts.push_back(k - 1);
    }
    for (size_t cut : cuts) {
      std::vector<std::byte> part(whole.begin(), whole.begin() + std::min(cut, whole.size()));
      auto c = OpenBytes(part);
      if (!c.ok()) {
        ExpectOneLine(c.error());
        EXPECT_TRUE(c.error().kind == ErrorKind::kTruncated || c.error().kind == ErrorKind::kNotElf)
            << name << " cut at " << cut << ": " << c.error().message;
        continue;
      }
      EXPECT_TRUE((*c)->truncated()) << name << " cut at " << cut;
      EXPECT_FALSE((*c)->missing().empty()) << name << " cut at " << cut;
    }
  }
}

}  // namespace
}  // namespace coroner
