// Every zoo core read by coroner against gdb on the same core (registers of
// every thread, thread count, signal, si_code, fault address, mapped files),
// against the crasher's source (tests/crashers/expected.tsv), and the same
// again on a 64 KiB prefix of each core.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "core/core.h"
#include "core/signals.h"
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

}  // namespace
}  // namespace coroner
