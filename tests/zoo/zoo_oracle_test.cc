// Every zoo core read by coroner against gdb on the same core (registers of
// every thread, thread count, signal, si_code, fault address, mapped files),
// against the crasher's source (tests/crashers/expected.tsv), and the same
// again on a 64 KiB prefix of each core.
#include <gtest/gtest.h>

#include <fstream>

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "core/core.h"
#include "core/signals.h"
#include "processor/processor.h"
#include "report/diagnosis_words.h"
#include "source/byte_source.h"
#include "zoo/analyzed_core.h"
#include "zoo/gdb_compare.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

using testing::GdbOracle;
using testing::ZooCore;

std::unique_ptr<Core> OpenOrDie(const std::string& path, std::optional<uint64_t> max_bytes = {}) {
  auto source = OpenCoreSource(path, max_bytes);
  if (!source.ok()) throw std::runtime_error(path + ": " + source.error().message);
  auto core = Core::Open(std::move(*source));
  if (!core.ok()) throw std::runtime_error(path + ": " + core.error().message);
  return std::move(*core);
}

class ZooCoreTest : public ::testing::TestWithParam<ZooCore> {};

TEST_P(ZooCoreTest, MatchesGdb) {
  const ZooCore& z = GetParam();
  GdbOracle gdb = testing::ParseGdbOracle(z.oracle);
  auto core = OpenOrDie(z.core);
  EXPECT_FALSE(core->truncated());
  EXPECT_TRUE(core->missing().empty()) << core->missing().front();
  EXPECT_EQ(static_cast<int>(core->threads().size()), gdb.thread_count);
  EXPECT_EQ(gdb.threads.size(), core->threads().size());
  testing::ExpectRegistersMatch(gdb, *core, true);
  testing::ExpectSignalMatches(gdb, *core);
  // The first thread is the one gdb calls current (thread 1).
  ASSERT_FALSE(gdb.threads.empty());
  EXPECT_EQ(core->threads()[core->crashing_thread()].tid, gdb.threads.back().tid);

  std::vector<testing::GdbMapping> ours;
  for (const auto& f : core->files()) ours.push_back({f.start, f.end, f.offset, f.path});
  EXPECT_EQ(ours, gdb.mappings);
}

TEST_P(ZooCoreTest, MatchesItsSource) {
  const ZooCore& z = GetParam();
  auto expect = testing::LoadExpectations().at(z.crasher);
  auto core = OpenOrDie(z.core);
  ASSERT_TRUE(core->signal());
  const SignalInfo& s = *core->signal();
  EXPECT_EQ(SignalName(s.signo), expect.signal);
  if (expect.code == "*") {
    EXPECT_GT(s.code, 0);
  } else {
    EXPECT_EQ(SignalCodeName(s.signo, s.code).value_or("?"), expect.code);
  }
  const Thread& crashed = core->threads()[core->crashing_thread()];
  if (expect.fault_address == "rip") {
    ASSERT_TRUE(s.fault_address);
    EXPECT_EQ(*s.fault_address, crashed.registers.pc());
  } else if (expect.fault_address != "-") {
    ASSERT_TRUE(s.fault_address);
    EXPECT_EQ(*s.fault_address, std::stoull(expect.fault_address, nullptr, 16));
  }
  EXPECT_EQ(static_cast<int>(core->threads().size()), expect.threads);
  ASSERT_TRUE(core->process());
  // pr_fname is the executable's name cut to 15 characters.
  std::string base = z.binary.substr(z.binary.rfind('/') + 1);
  EXPECT_EQ(core->process()->comm, base.substr(0, 15));
  // The process id is the main thread's id; the crashing thread may be another.
  EXPECT_NE(testing::FindThread(*core, core->process()->pid), nullptr);
  if (expect.threads == 1) {
    EXPECT_EQ(core->process()->pid, crashed.tid);
  }
  EXPECT_EQ(core->auxv().execfn.value_or(""), z.binary);
}

// The executable's module carries the build-id that readelf reads from the binary.
TEST_P(ZooCoreTest, ExecutableBuildIdMatchesReadelf) {
  const ZooCore& z = GetParam();
  auto core = OpenOrDie(z.core);
  std::string cmd = "readelf -n '" + z.binary + "' 2>/dev/null";
  std::string expected;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char line[512];
    while (fgets(line, sizeof line, p)) {
      std::string l(line);
      auto at = l.find("Build ID: ");
      if (at != std::string::npos) expected = l.substr(at + 10, l.find_first_of("\r\n", at) - at - 10);
    }
    pclose(p);
  }
  ASSERT_FALSE(expected.empty()) << "readelf found no build-id in " << z.binary;
  const Module* exe = nullptr;
  for (const auto& m : core->modules()) {
    if (m.path == z.binary) exe = &m;
  }
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->build_id, expected);
  EXPECT_EQ(exe->build_id_source, Module::BuildIdSource::kCore);
  EXPECT_EQ(exe->file_status, ModuleFileStatus::kOk);
  for (const auto& m : core->modules()) {
    if (!m.is_vdso) {
      EXPECT_EQ(m.file_status, ModuleFileStatus::kOk) << m.path;
    }
  }
}

TEST_P(ZooCoreTest, PrefixOf64KiBGivesRegistersAndSignal) {
  const ZooCore& z = GetParam();
  GdbOracle gdb = testing::ParseGdbOracle(z.oracle);
  auto full = OpenOrDie(z.core);
  auto prefix = OpenOrDie(z.core, 65536);
  EXPECT_LE(prefix->bytes_read(), 65536u);
  if (z.variant.ends_with("-gcore")) {
    // gdb writes the notes after the memory: a prefix holds no registers, and says so.
    EXPECT_TRUE(prefix->threads().empty());
    EXPECT_TRUE(prefix->truncated());
    bool says_notes = false;
    for (const auto& m : prefix->missing()) says_notes |= m.find("no NT_PRSTATUS") != std::string::npos;
    EXPECT_TRUE(says_notes);
    return;
  }
  ASSERT_FALSE(prefix->threads().empty());
  bool all = prefix->threads().size() == full->threads().size();
  testing::ExpectRegistersMatch(gdb, *prefix, all);
  testing::ExpectSignalMatches(gdb, *prefix);
  // Whatever the prefix lacks is said, never silently dropped.
  EXPECT_TRUE(prefix->truncated());
  EXPECT_FALSE(prefix->missing().empty());
  if (!all) {
    bool says_threads = false;
    for (const auto& m : prefix->missing()) says_threads |= m.find("threads") != std::string::npos;
    EXPECT_TRUE(says_threads);
  }
  // A single-threaded kernel core keeps all its notes in the first 64 KiB.
  if (full->threads().size() == 1) {
    EXPECT_TRUE(all);
  }
}

std::vector<ZooCore> Zoo() { return testing::LoadZoo(); }

INSTANTIATE_TEST_SUITE_P(Zoo, ZooCoreTest, ::testing::ValuesIn(Zoo()),
                         testing::ZooTestName);

TEST(ZooTest, HasEveryCrasher) {
  std::set<std::string> crashers;
  for (const auto& z : testing::LoadZoo()) crashers.insert(z.crasher);
  for (const auto& [name, e] : testing::LoadExpectations()) {
    EXPECT_TRUE(crashers.count(name)) << name;
  }
  EXPECT_GE(testing::LoadZoo().size(), 30u);
}

// Compressed cores, decoded as streams, read exactly like the plain ones.
TEST(ZooTest, CompressedCoresMatchPlain) {
  std::string dir = testing::ZooDir() + "/cores/";
  for (std::string name : {"null_deref-O0.core.zst", "null_deref-O0.core.lz4", "many_threads-O0.core.xz"}) {
    std::string plain_path = dir + name.substr(0, name.rfind('.'));
    auto plain = OpenOrDie(plain_path);
    auto packed = OpenOrDie(dir + name);
    ASSERT_EQ(packed->threads().size(), plain->threads().size()) << name;
    for (size_t i = 0; i < plain->threads().size(); ++i) {
      EXPECT_EQ(packed->threads()[i].registers.value, plain->threads()[i].registers.value);
    }
    ASSERT_EQ(packed->modules().size(), plain->modules().size());
    for (size_t i = 0; i < plain->modules().size(); ++i) {
      EXPECT_EQ(packed->modules()[i].build_id, plain->modules()[i].build_id);
    }
    EXPECT_EQ(packed->auxv().execfn, plain->auxv().execfn);
    // Counted in compressed bytes: never more than the file holds.
    auto file = OpenFileSource(dir + name);
    ASSERT_TRUE(file.ok());
    EXPECT_LE(packed->bytes_read(), *(*file)->Size());
  }
}

// The end of the last PT_NOTE segment of a plain core: what registers-only
// needs of it.
uint64_t NotesEnd(const std::string& plain) {
  std::FILE* f = std::fopen(plain.c_str(), "rb");
  if (!f) throw std::runtime_error(plain + ": cannot open");
  Elf64_Ehdr eh{};
  uint64_t end = 0;
  if (std::fread(&eh, sizeof eh, 1, f) == 1) {
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph{};
      if (std::fseek(f, static_cast<long>(eh.e_phoff + i * sizeof ph), SEEK_SET) != 0 || std::fread(&ph, sizeof ph, 1, f) != 1) break;
      if (ph.p_type == PT_NOTE) end = std::max<uint64_t>(end, ph.p_offset + ph.p_filesz);
    }
  }
  std::fclose(f);
  return end;
}

// A compressed core is decoded once, whatever order the analysis reads in:
// the reads it will make after the notes (stacks, module headers, JIT code)
// are planned when the notes are read, and blocks of zeros are remembered.
// Registers-only decodes only the prefix that holds the notes. Counted in
// decoded bytes, not time.
TEST(ZooTest, CompressedCoresAreDecodedOnce) {
  constexpr uint64_t kBlock = 64 << 10;  // the stream source's unit of decoding
  std::string dir = testing::ZooDir() + "/cores/";
  for (std::string name : {"many_threads-O0", "stack_overflow-O0", "locals-O0", "abort_assert-O0", "inlined-O2g",
                           "reraise-O2"}) {
    SCOPED_TRACE(name);
    std::string plain = dir + name + ".core";
    std::string packed = ::testing::TempDir() + name + ".core.zst";
    ASSERT_EQ(std::system(("zstd -q -1 -f '" + plain + "' -o '" + packed + "'").c_str()), 0);
    auto plain_size = OpenFileSource(plain);
    ASSERT_TRUE(plain_size.ok());
    uint64_t size = *(*plain_size)->Size();

    auto full = testing::AnalyzeCore(packed);
    EXPECT_LE(full->core->source().BytesDecoded(), size) << "decoded more than once";
    auto reference = testing::AnalyzeCore(plain);
    ASSERT_TRUE(full->analysis.diagnosis && reference->analysis.diagnosis);
    EXPECT_EQ(Summary(*full->analysis.diagnosis), Summary(*reference->analysis.diagnosis));
    EXPECT_EQ(EvidenceSentences(*full->analysis.diagnosis), EvidenceSentences(*reference->analysis.diagnosis));
    const Backtrace& ours = full->threads()[full->core->crashing_thread()];
    const Backtrace& want = reference->threads()[reference->core->crashing_thread()];
    ASSERT_EQ(ours.frames.size(), want.frames.size());
    for (size_t i = 0; i < want.frames.size(); ++i) EXPECT_EQ(ours.frames[i].pc, want.frames[i].pc) << i;

    auto source = OpenCoreSource(packed, std::nullopt);
    ASSERT_TRUE(source.ok());
    CoreOptions notes_only;
    notes_only.notes_only = true;
    auto core = Core::Open(std::move(*source), notes_only);
    ASSERT_TRUE(core.ok());
    ProcessOptions registers;
    registers.depth = AnalysisDepth::kRegisters;
    ProcessCore(**core, testing::ZooSymbols(), registers);
    uint64_t notes_end = NotesEnd(plain);
    ASSERT_GT(notes_end, 0u);
    EXPECT_LE((*core)->source().BytesDecoded(), (notes_end + kBlock - 1) / kBlock * kBlock);
    ASSERT_EQ((*core)->threads().size(), reference->core->threads().size());
    for (size_t i = 0; i < (*core)->threads().size(); ++i) {
      EXPECT_EQ((*core)->threads()[i].registers.value, reference->core->threads()[i].registers.value);
    }
    std::remove(packed.c_str());
  }
}

// A stream source says which reads would decode it again from the start,
// and is right: reading such a block costs a decode, reading one it says is
// held (or ahead) costs none beyond the decoding forward.
TEST(ZooTest, AStreamSaysWhichReadsWouldDecodeItAgain) {
  constexpr uint64_t kBlock = 64 << 10;
  // 40 MiB of bytes that are not zeros (blocks of zeros are always held).
  std::string plain = ::testing::TempDir() + "rereads.bin";
  std::string packed = plain + ".zst";
  {
    std::ofstream out(plain, std::ios::binary);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < (40u << 20) / 8; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      out.write(reinterpret_cast<const char*>(&x), 8);
    }
  }
  ASSERT_EQ(std::system(("zstd -q -1 -f '" + plain + "' -o '" + packed + "'").c_str()), 0);
  auto source = OpenCoreSource(packed, std::nullopt);
  ASSERT_TRUE(source.ok());
  ByteSource& s = **source;
  uint64_t size = 40u << 20;
  std::byte b[16];
  EXPECT_FALSE(s.Rereads(0, 16));  // nothing decoded yet: forward
  ASSERT_TRUE(s.ReadUpTo(0, b).ok());
  EXPECT_FALSE(s.Rereads(0, 16));  // held in the window
  ASSERT_TRUE(s.ReadUpTo(size - 16, b).ok());  // the window moves to the end
  uint64_t decoded = s.BytesDecoded();
  // Some early block is no longer held (the window is 16 MiB); the source
  // says so, and reading it decodes again.
  uint64_t behind = UINT64_MAX;
  for (uint64_t off = 0; off + kBlock < size - (32u << 20); off += kBlock) {
    if (s.Rereads(off, 16)) {
      behind = off;
      break;
    }
  }
  ASSERT_NE(behind, UINT64_MAX);
  EXPECT_FALSE(s.Rereads(size - 16, 16));
  ASSERT_TRUE(s.ReadUpTo(size - 16, b).ok());
  EXPECT_EQ(s.BytesDecoded(), decoded);
  ASSERT_TRUE(s.ReadUpTo(behind, b).ok());
  EXPECT_GT(s.BytesDecoded(), decoded);
  std::remove(packed.c_str());
  std::remove(plain.c_str());
}

// A plan may name many more blocks than the source keeps, as long as most
// of them are zeros (a process with hundreds of threads names five blocks
// of stack each): every block it names is served from the one decoding.
TEST(ZooTest, APlanOfManyBlocksMostlyZerosIsServedFromOneDecoding) {
  constexpr uint64_t kBlock = 64 << 10, kBlocks = 4000;
  std::string plain = ::testing::TempDir() + "wide_plan.bin";
  std::string packed = plain + ".zst";
  {
    // Every eighth block holds bytes that are not zeros; the rest are holes.
    std::ofstream out(plain, std::ios::binary);
    uint64_t x = 88172645463325252ull;
    for (uint64_t block = 0; block < kBlocks; block += 8) {
      out.seekp(static_cast<std::streamoff>(block * kBlock));
      for (size_t i = 0; i < kBlock / 8; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        out.write(reinterpret_cast<const char*>(&x), 8);
      }
    }
    out.seekp(static_cast<std::streamoff>(kBlocks * kBlock - 1));
    out.put('\0');
  }
  ASSERT_EQ(std::system(("zstd -q -1 -f '" + plain + "' -o '" + packed + "'").c_str()), 0);
  auto source = OpenCoreSource(packed, std::nullopt);
  ASSERT_TRUE(source.ok());
  ByteSource& s = **source;
  std::vector<std::pair<uint64_t, uint64_t>> plan;
  for (uint64_t block = 0; block < kBlocks; ++block) plan.emplace_back(block * kBlock, block * kBlock + 16);
  s.Retain(plan);
  std::byte b[16];
  ASSERT_TRUE(s.ReadUpTo(kBlocks * kBlock - 16, b).ok());  // decoded to the end once
  uint64_t once = s.BytesDecoded();
  EXPECT_EQ(once, kBlocks * kBlock);
  for (uint64_t block = 0; block < kBlocks; ++block) {
    EXPECT_FALSE(s.Rereads(block * kBlock, 16)) << block;
    ASSERT_TRUE(s.ReadUpTo(block * kBlock, b).ok());
  }
  EXPECT_EQ(s.BytesDecoded(), once) << "a planned block was decoded again";
  std::remove(packed.c_str());
  std::remove(plain.c_str());
}

}  // namespace
}  // namespace coroner
