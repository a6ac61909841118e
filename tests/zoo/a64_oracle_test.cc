// The aarch64 crash zoo against gdb-multiarch on the same cores: the
// crashers built with Debian's cross toolchain (-O0 with frame pointers,
// -O2 without, -O2 with pointer authentication and BTI) and run under
// qemu-user, whose cores hold no NT_FILE, no NT_SIGINFO and no header
// pages. Registers, frames (pc and name, every thread), the crashing
// instruction, the modules the dynamic linker's list gives, and the
// syndrome each crasher's source calls for (tests/crashers/expected.tsv).
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <regex>
#include <set>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "core/module_files.h"
#include "diagnose/bit_flips.h"
#include "diagnose/diagnosis.h"
#include "symbolize/disassembler.h"
#include "unwind/signal_context.h"
#include "text/text.h"
#include "unwind/backtrace.h"
#include "zoo/analyzed_core.h"
#include "unit/run_coroner.h"
#include "zoo/gdb_compare.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

// The handler crashers have no gdb oracle (the Makefile says why).
#define SKIP_WITHOUT_ORACLE(z) \
  if ((z).oracle == "-") GTEST_SKIP() << "no gdb-multiarch oracle: it does not finish on qemu's signal frames"

std::unique_ptr<testing::AnalyzedCore> Analyze(const testing::ZooCore& z) {
  return testing::AnalyzeCrossCore(z.core, testing::kA64Sysroot, testing::A64ExeFiles(z));
}

// gdb (binutils) writes some immediates in decimal ("#1") where Capstone
// writes hex ("#0x1"): the same instruction, compared with each immediate
// as its value.
std::string Immediates(const std::string& text) {
  static const std::regex kImmediate("#(-?)(0x[0-9a-f]+|[0-9]+)");
  std::string out;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), kImmediate), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    out += "#" + (*it)[1].str() + std::to_string(std::stoull((*it)[2].str(), nullptr, 0));
    last = (*it)[0].second;
  }
  out.append(last, text.cend());
  return out;
}

class A64ZooTest : public ::testing::TestWithParam<testing::ZooCore> {};

TEST_P(A64ZooTest, IsAnAarch64CoreWithoutFileNotes) {
  auto a = Analyze(GetParam());
  EXPECT_EQ(a->core->arch(), Arch::kAarch64);
  for (const Thread& t : a->core->threads()) EXPECT_EQ(t.registers.arch, Arch::kAarch64);
  // What qemu-user leaves out, said as missing.
  auto missing = a->core->missing();
  EXPECT_TRUE(std::any_of(missing.begin(), missing.end(), [](const std::string& m) {
    return m.find("modules from the dynamic linker's list") != std::string::npos;
  }));
}

TEST_P(A64ZooTest, RegistersMatchGdb) {
  const auto& z = GetParam();
  SKIP_WITHOUT_ORACLE(z);
  auto gdb = testing::ParseGdbOracle(z.oracle);
  auto a = Analyze(z);
  ASSERT_EQ(gdb.threads.size(), a->core->threads().size());
  testing::ExpectRegistersMatch(gdb, *a->core, true);
  // gdb calls pstate cpsr; the names coroner reports are gdb's.
  ASSERT_FALSE(gdb.threads.empty());
  EXPECT_TRUE(gdb.threads[0].registers.count("cpsr"));
  EXPECT_EQ(RegFromName("cpsr"), Reg::pstate);
}

TEST_P(A64ZooTest, ModulesAreTheLinkersList) {
  auto a = Analyze(GetParam());
  // The executable, the dynamic linker and libc, each with the build-id of
  // its file and the load bias the list gives.
  std::map<std::string, const Module*> by_name;
  for (const Module& m : a->core->modules()) by_name[Basename(m.path)] = &m;
  for (const char* name : {"ld-linux-aarch64.so.1", "libc.so.6"}) {
    ASSERT_TRUE(by_name.count(name)) << name;
    const Module& m = *by_name[name];
    EXPECT_EQ(m.file_status, ModuleFileStatus::kOk) << name;
    EXPECT_EQ(m.build_id, LookUpModuleFile(std::string(testing::kA64Sysroot) + "/lib/" + name).build_id) << name;
  }
  const Module* exe = a->core->executable();
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(exe->path, GetParam().binary);
  EXPECT_EQ(exe->build_id, LookUpModuleFile(GetParam().binary).build_id);
  // qemu loads a PIE executable at 0x5500000000; a non-PIE one where it was linked.
  EXPECT_EQ(exe->load_bias, GetParam().variant.ends_with("-pie") ? 0x5500000000u : 0u);
}

TEST_P(A64ZooTest, FramesMatchGdb) {
  const auto& z = GetParam();
  SKIP_WITHOUT_ORACLE(z);
  if (z.variant.ends_with("-pie")) GTEST_SKIP() << "gdb does not relocate a PIE executable in a qemu-user core: PieExecutableUnwindsLikeItsTwin";
  auto gdb = testing::ParseGdbOracle(z.oracle);
  auto a = Analyze(z);
  for (const Backtrace& t : a->threads()) {
    int tid = t.thread->tid;
    ASSERT_TRUE(gdb.frames.count(tid)) << tid;
    const auto& g = gdb.frames.at(tid);
    ASSERT_FALSE(g.empty());
    EXPECT_GE(testing::ExpectSameFrames(g, t, "thread " + std::to_string(tid), *a->analysis.modules), 1u);
  }
  // file:line of frame 0 where gdb has it.
  const Backtrace& crashed = a->threads()[a->core->crashing_thread()];
  const auto& g0 = gdb.frames.at(crashed.thread->tid)[0];
  if (g0.file != "-") {
    EXPECT_EQ(Basename(crashed.frames[0].file), Basename(g0.file));
    EXPECT_EQ(crashed.frames[0].line, g0.line);
  }
}

TEST_P(A64ZooTest, CrashingInstructionMatchesGdb) {
  const auto& z = GetParam();
  SKIP_WITHOUT_ORACLE(z);
  if (z.variant.ends_with("-pie")) GTEST_SKIP() << "gdb does not relocate a PIE executable in a qemu-user core";
  auto gdb = testing::ParseGdbOracle(z.oracle);
  auto a = Analyze(z);
  const Thread& t = a->core->threads()[a->core->crashing_thread()];
  auto ins = Disassemble(*a->analysis.modules, t.registers.pc(), true);
  if (gdb.instructions.empty()) {
    EXPECT_TRUE(ins.empty());  // pc 0: no code for either
    return;
  }
  auto cur = std::find_if(ins.begin(), ins.end(), [](const Instruction& i) { return i.current; });
  ASSERT_NE(cur, ins.end());
  EXPECT_EQ(cur->address, gdb.instructions[0].address);
  EXPECT_EQ(cur->bytes.size(), 8u);  // every instruction is four bytes
  EXPECT_EQ(Immediates(cur->text), Immediates(gdb.instructions[0].text));
}

TEST_P(A64ZooTest, SyndromeIsTheCrashersOwn) {
  const auto& z = GetParam();
  auto expected = testing::LoadExpectations();
  ASSERT_TRUE(expected.count(z.crasher)) << z.crasher;
  const auto& e = expected.at(z.crasher);
  auto a = Analyze(z);
  ASSERT_TRUE(a->analysis.diagnosis);
  const Diagnosis& d = *a->analysis.diagnosis;
  EXPECT_EQ(SyndromeName(d.syndrome), e.syndrome);
  EXPECT_EQ(ContextName(d.context), e.context);
  EXPECT_EQ(static_cast<int>(a->core->threads().size()), e.threads);
  // A handler's re-raise: the real fault from the signal frame, with its
  // siginfo when the handler took one (SA_SIGINFO), else from the
  // sigcontext's fault_address (qemu saves no exception syndrome).
  if (z.crasher == "reraise" || z.crasher == "reraise_siginfo") {
    ASSERT_TRUE(a->analysis.fault_context) << z.variant;
    const SignalInfo& real = a->analysis.fault_context->signal;
    EXPECT_EQ(real.signo, SIGSEGV);
    EXPECT_EQ(real.code, SEGV_MAPERR);
    EXPECT_EQ(real.fault_address, z.crasher == "reraise" ? 0x0u : 0x10000000u);
    EXPECT_EQ(real.source, z.crasher == "reraise" ? SignalInfo::Source::kSigcontext : SignalInfo::Source::kSignalFrame);
  } else {
    EXPECT_FALSE(a->analysis.fault_context) << z.variant;  // handler_crash's handler faulted itself
  }
  if (z.crasher == "bad_pointer") {
    // 0xdead00000000beef: the top byte is a tag the hardware ignores; the
    // rest lies beyond the 48-bit user address space.
    const evidence::BadAccess* bad = nullptr;
    for (const auto& ev : d.evidence)
      if (auto* b = std::get_if<evidence::BadAccess>(&ev)) bad = b;
    ASSERT_NE(bad, nullptr);
    EXPECT_EQ(bad->why, evidence::BadAddress::kBeyondUserSpace);
    EXPECT_EQ(bad->address, 0x00ad00000000beefu);
  }
  if (e.syndrome == "null-deref") {
    // The register that held NULL is named, as on x86_64.
    ASSERT_TRUE(d.null_register);
    EXPECT_GE(d.null_register->reg, kA64First);
    EXPECT_LT(SizedRegValue(a->core->threads()[a->core->crashing_thread()].registers, *d.null_register), 65536u);
  }
}

// bit_flip.c sets bit 40 of a heap pointer: found on aarch64 as on x86_64,
// from the register and from the fault address. A tag in the top byte, or
// a code in pointer authentication's bits, is no flip on aarch64: the
// hardware ignores the one, and a signed pointer used unchecked has the
// other's bits set by a hash (the false positives that made rust-minidump
// drop its ARM64 hints). Checked against the same core's memory.
TEST(A64Zoo, BitFlipsKnowTagsAndPointerAuthentication) {
  std::map<std::string, testing::ZooCore> zoo;
  for (const auto& z : testing::LoadA64Zoo()) zoo[z.variant] = z;
  ASSERT_TRUE(zoo.count("bit_flip-O2"));
  for (const char* v : {"bit_flip-O0", "bit_flip-O2", "bit_flip-pac"}) {
    auto a = Analyze(zoo.at(v));
    const Diagnosis& d = *a->analysis.diagnosis;
    ASSERT_EQ(d.possible_bit_flips.size(), 2u) << v;
    for (const BitFlip& f : d.possible_bit_flips) {
      EXPECT_EQ(f.bit, 40) << v;
      EXPECT_EQ(f.value ^ f.original, uint64_t{1} << 40) << v;
    }
  }
  auto a = Analyze(zoo.at("bit_flip-O2"));
  const BitFlip& flip = a->analysis.diagnosis->possible_bit_flips[0];
  const Memory& memory = a->core->memory();
  const uint64_t good = flip.original;  // the heap pointer the program made
  auto flips = [&](uint64_t v, Arch arch) { return PossibleBitFlips({{"x0", v}}, memory, arch).size(); };
  EXPECT_EQ(flips(good ^ (uint64_t{1} << 40), Arch::kAarch64), 1u);
  // A top-byte tag: the same address to the hardware, so no fault it explains.
  EXPECT_EQ(flips((good ^ (uint64_t{1} << 40)) | (uint64_t{0x2a} << 56), Arch::kAarch64), 1u);
  EXPECT_EQ(flips(good | (uint64_t{1} << 57), Arch::kAarch64), 0u);
  EXPECT_EQ(flips(good | (uint64_t{1} << 57), Arch::kX86_64), 1u);  // x86_64 has no TBI: a flip
  // One bit in pointer authentication's field (48-54): a hash, not a flip.
  EXPECT_EQ(flips(good | (uint64_t{1} << 50), Arch::kAarch64), 0u);
  // ... unless the core's PAC mask says the field is elsewhere.
  EXPECT_EQ(PossibleBitFlips({{"x0", good | (uint64_t{1} << 50)}}, memory, Arch::kAarch64, 0xff80000000000000ull).size(), 1u);
}

// Exception syndromes as the Arm ARM encodes them (EC in bits 31-26, IL bit
// 25, the fault status in ISS bits 5-0, WnR in bit 6), in the words a
// report gives them.
TEST(A64Zoo, ExceptionSyndromesInWords) {
  EXPECT_EQ(EsrDescription(0x92000006), "data abort, translation fault (level 2), read");
  EXPECT_EQ(EsrDescription(0x92000046), "data abort, translation fault (level 2), write");
  EXPECT_EQ(EsrDescription(0x9200004f), "data abort, permission fault (level 3), write");
  EXPECT_EQ(EsrDescription(0x92000061), "data abort, alignment fault, write");
  EXPECT_EQ(EsrDescription(0x92000011), "data abort, tag check fault (MTE), read");
  EXPECT_EQ(EsrDescription(0x8200000f), "instruction abort, permission fault (level 3)");
  EXPECT_EQ(EsrDescription(0xf20003e8), "brk 0x3e8");
  EXPECT_EQ(EsrDescription(0x9a000000), "SP alignment fault");
  EXPECT_EQ(EsrDescription(0x02000000), "undefined instruction");
  EXPECT_EQ(EsrDescription(0xbe000000), "");  // SError: not a class a user fault has
  // The signal the kernel raises for each (arch/arm64/mm/fault.c): a
  // translation fault's code is the mappings' to decide.
  using Sig = std::pair<int, int>;
  auto sig = [](uint64_t esr, bool mapped) {
    auto s = SignalFromEsr(esr, 0x7f0000001000, 0x400000, mapped);
    return s ? Sig{s->signo, s->code} : Sig{0, 0};
  };
  EXPECT_EQ(sig(0x92000046, true), Sig(SIGSEGV, SEGV_ACCERR));  // a write to a read-only page never touched
  EXPECT_EQ(sig(0x92000046, false), Sig(SIGSEGV, SEGV_MAPERR));
  EXPECT_EQ(sig(0x9200004f, true), Sig(SIGSEGV, SEGV_ACCERR));  // permission fault
  EXPECT_EQ(sig(0x92000010, true), Sig(SIGBUS, BUS_OBJERR));    // synchronous external abort: memory error
  EXPECT_EQ(sig(0x92000018, true), Sig(SIGBUS, BUS_OBJERR));    // parity or ECC error
  EXPECT_EQ(sig(0x92000061, true), Sig(SIGBUS, BUS_ADRALN));
  EXPECT_EQ(sig(0x92000011, true), Sig(SIGSEGV, 9));            // SEGV_MTESERR
  EXPECT_EQ(sig(0xbe000000, true), Sig(0, 0));
}

INSTANTIATE_TEST_SUITE_P(A64Zoo, A64ZooTest, ::testing::ValuesIn(testing::LoadA64Zoo()), testing::ZooTestName);

// A PIE executable, relocated by qemu, unwinds to the same functions as its
// non-PIE twin (gdb cannot relocate it in such a core, so it is the oracle).
TEST(A64Zoo, PieExecutableUnwindsLikeItsTwin) {
  std::map<std::string, testing::ZooCore> zoo;
  for (const auto& z : testing::LoadA64Zoo()) zoo[z.variant] = z;
  ASSERT_TRUE(zoo.count("null_deref-pie") && zoo.count("null_deref-O0"));
  auto pie = Analyze(zoo["null_deref-pie"]), twin = Analyze(zoo["null_deref-O0"]);
  const auto& pf = pie->threads()[0].frames;
  const auto& tf = twin->threads()[0].frames;
  ASSERT_EQ(pf.size(), tf.size());
  for (size_t i = 0; i < pf.size(); ++i) EXPECT_EQ(pf[i].function, tf[i].function) << i;
  EXPECT_EQ(pf[0].function, "walk");
  EXPECT_EQ(pf[0].line, tf[0].line);
}

// `--sysroot` takes one tree for every machine and one per machine.
TEST(A64Zoo, SysrootPerMachine) {
  auto parsed = ParseSysroot({"/srv/any", "aarch64=/srv/arm", "x86_64=/srv/x86=odd"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->For(Arch::kAarch64), "/srv/arm");
  EXPECT_EQ(parsed->For(Arch::kX86_64), "/srv/x86=odd");
  EXPECT_EQ(ParseSysroot({"/srv/any"})->For(Arch::kAarch64), "/srv/any");
  EXPECT_EQ(ParseSysroot({"/a=b"})->For(Arch::kX86_64), "/a=b");  // no machine before '=': a path
  auto twice = testing::Coroner("analyze --sysroot aarch64=/a --sysroot aarch64=/b /dev/null");
  EXPECT_EQ(twice.status, 2);
  EXPECT_NE(twice.err.find("--sysroot: aarch64 given twice"), std::string::npos) << twice.err;
  auto two = testing::Coroner("analyze --sysroot /a --sysroot /b /dev/null");
  EXPECT_EQ(two.status, 2);
  EXPECT_NE(two.err.find("two trees for every machine"), std::string::npos) << two.err;
}

// `scan --exe` gives the programs of qemu cores, as `analyze --exe` does:
// each row's signature is analyze's, named from the program's symbols;
// without the programs the same cores' signatures are not.
TEST(A64Zoo, ScanTakesTheProgramFilesAsAnalyzeDoes) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("coroner-a64-exe-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cores");
  const std::set<std::string> variants = {"null_deref-O0", "call_null-O2", "abort_assert-pac", "locals-O2"};
  std::string exes;
  std::map<std::string, std::string> want;  // core name -> analyze's signature
  for (const auto& z : testing::LoadA64Zoo()) {
    if (!variants.count(z.variant)) continue;
    std::string name = z.variant + ".core";
    fs::create_symlink(z.core, dir / "cores" / name);
    exes += " --exe " + z.binary;
    auto one = testing::Coroner("analyze --json --sysroot aarch64=" + std::string(testing::kA64Sysroot) + " --exe " +
                                z.binary + " " + z.core);
    ASSERT_EQ(one.status, 0) << one.err;
    want[name] = nlohmann::json::parse(one.out)["diagnosis"]["signature"];
    EXPECT_NE(want[name].find(" | "), std::string::npos) << want[name];  // a function of the program
  }
  ASSERT_EQ(want.size(), variants.size());
  auto signatures = [&](const std::string& flags) {
    std::string db = (dir / "exe.db").string();
    fs::remove(db);
    auto scan = testing::Coroner("scan --db " + db + " --sysroot aarch64=" + testing::kA64Sysroot + flags + " " +
                                 (dir / "cores").string());
    EXPECT_EQ(scan.status, 0) << scan.err;
    auto rows = testing::Coroner("query --json --db " + db + " \"SELECT path, signature FROM cores\"");
    EXPECT_EQ(rows.status, 0) << rows.err;
    std::map<std::string, std::string> got;
    for (const auto& r : nlohmann::json::parse(rows.out))
      got[fs::path(r["path"].get<std::string>()).filename()] = r["signature"].is_string() ? r["signature"] : "";
    return got;
  };
  EXPECT_EQ(signatures(exes), want);
  auto without = signatures("");
  for (const auto& [name, signature] : without) EXPECT_NE(signature, want[name]) << name;
  // One file given is the program of the cores that name it and of no
  // other: another program's crash is never signed with its functions.
  std::string null_deref;
  for (const auto& z : testing::LoadA64Zoo())
    if (z.variant == "null_deref-O0") null_deref = z.binary;
  for (const auto& [name, signature] : signatures(" --exe " + null_deref))
    EXPECT_EQ(signature, name == "null_deref-O0.core" ? want[name] : without[name]) << name;
  fs::remove_all(dir);
}

// A qemu core (no NT_FILE) whose program's file is not where it was: the
// program is listed as a module whose file is missing (its mappings from
// the core's segments), its code is the program's, and nothing says JIT.
TEST(A64Zoo, CodeOfAMissingProgramIsNotCalledJit) {
  namespace fs = std::filesystem;
  fs::path empty = fs::temp_directory_path() / ("coroner-a64-empty-" + std::to_string(::getpid()));
  fs::create_directories(empty);
  for (const auto& z : testing::LoadA64Zoo()) {
    if (z.variant != "null_deref-O0") continue;
    auto r = testing::Coroner("analyze --json --sysroot aarch64=" + empty.string() + " " + z.core);
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    for (const auto& f : j["threads"][0]["frames"]) EXPECT_FALSE(f["jit"].get<bool>()) << f.dump();
    EXPECT_EQ(r.out.find("JIT"), std::string::npos) << r.out.substr(0, 3000);
    // The program is a module whose file is missing, and the crashing
    // frame is in it.
    ASSERT_EQ(j["modules"].size(), 1u) << j["modules"].dump();
    EXPECT_EQ(j["modules"][0]["path"], z.binary);
    EXPECT_EQ(j["modules"][0]["status"], "missing");
    EXPECT_EQ(j["threads"][0]["frames"][0]["module"], z.binary) << j["threads"][0]["frames"][0].dump();
    EXPECT_NE(j["core"]["missing"].dump().find("the program's file " + z.binary + " is missing"), std::string::npos)
        << j["core"]["missing"].dump();
    auto text = testing::Coroner("analyze --sysroot aarch64=" + empty.string() + " " + z.core);
    EXPECT_EQ(text.out.find("outside any module"), std::string::npos) << text.out.substr(0, 2000);
    // With the program's file given, the frame is its function.
    auto found = testing::Coroner("analyze --json --sysroot aarch64=" + std::string(testing::kA64Sysroot) + " --exe " +
                                  z.binary + " " + z.core);
    ASSERT_EQ(found.status, 0) << found.err;
    auto frame = nlohmann::json::parse(found.out)["threads"][0]["frames"][0];
    EXPECT_TRUE(frame["function"].is_string() && !frame["function"].get<std::string>().empty()) << frame.dump();
  }
  fs::remove_all(empty);
}

// A mixed fleet: the x86_64 zoo's kernel-made cores and the aarch64 zoo's
// qemu-made ones scanned into one dataset, as a scan of a bucket of both
// reads them, the aarch64 ones with their machine's tree
// (`--sysroot aarch64=DIR`). Every core is an `ok` row with its machine in `arch`, and
// epi's populations are the signatures: one machine's crash site is not
// merged with another's unless the signatures agree.
TEST(A64Zoo, MixedFleetScansIntoOneDatasetAndEpiKeepsThePopulations) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("coroner-mixed-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cores");
  std::map<std::string, std::string> want_arch;
  for (const auto& z : testing::LoadA64Zoo()) {
    fs::create_symlink(z.core, dir / "cores" / ("a64-" + z.variant + ".core"));
    want_arch["a64-" + z.variant + ".core"] = "aarch64";
  }
  for (const auto& z : testing::LoadZoo()) {
    if (!z.variant.ends_with("-O0") || z.variant.find("race") != std::string::npos) continue;
    fs::create_symlink(z.core, dir / "cores" / ("x86-" + z.variant + ".core"));
    want_arch["x86-" + z.variant + ".core"] = "x86_64";
  }
  // The x86_64 cores keep this machine's own files (no sysroot for them).
  fs::path root = testing::MakeA64Root((dir / "aarch64-root").string());
  std::string db = (dir / "fleet.db").string();
  auto scan = testing::Coroner("scan --db " + db + " --jobs 2 --sysroot aarch64=" + root.string() + " " +
                               (dir / "cores").string());
  ASSERT_EQ(scan.status, 0) << scan.err;
  // Each core's libc was found in its machine's tree.
  auto libc = testing::Coroner("query --json --db " + db +
                               " \"SELECT c.path, m.status FROM modules m JOIN cores c ON m.core = c.id "
                               "WHERE m.path LIKE '%/libc.so.6'\"");
  ASSERT_EQ(libc.status, 0) << libc.err;
  auto libc_rows = nlohmann::json::parse(libc.out);
  EXPECT_EQ(libc_rows.size(), want_arch.size());
  for (const auto& r : libc_rows) EXPECT_EQ(r["status"], "ok") << r["path"];
  auto rows = testing::Coroner("query --json --db " + db +
                               " \"SELECT c.path, c.status, c.signature, a.value AS arch FROM cores c "
                               "LEFT JOIN attributes a ON a.core = c.id AND a.key = 'arch'\"");
  ASSERT_EQ(rows.status, 0) << rows.err;
  auto json = nlohmann::json::parse(rows.out);
  ASSERT_EQ(json.size(), want_arch.size());
  std::map<std::string, int> per_signature;
  std::map<std::string, std::set<std::string>> arches_of;
  for (const auto& r : json) {
    std::string name = fs::path(r["path"].get<std::string>()).filename();
    EXPECT_EQ(r["status"], "ok") << name;
    ASSERT_TRUE(r["arch"].is_string()) << name;
    EXPECT_EQ(r["arch"], want_arch[name]) << name;
    ASSERT_TRUE(r["signature"].is_string()) << name;
    ++per_signature[r["signature"]];
    arches_of[r["signature"]].insert(r["arch"]);
  }
  // Some crash sites are one machine's only, some both machines' (the
  // same source crashes at the same function).
  EXPECT_TRUE(std::any_of(arches_of.begin(), arches_of.end(), [](const auto& a) { return a.second.size() == 2; }));
  EXPECT_TRUE(std::any_of(arches_of.begin(), arches_of.end(),
                          [](const auto& a) { return a.second == std::set<std::string>{"aarch64"}; }));
  auto epi = testing::Coroner("epi --json --db " + db);
  ASSERT_EQ(epi.status, 0) << epi.err;
  auto report = nlohmann::json::parse(epi.out);
  EXPECT_EQ(report["cores"], static_cast<int>(want_arch.size()));
  std::map<std::string, int> clustered;
  for (const auto& c : report["clusters"]) clustered[c["signature"]] += c["count"].get<int>();
  EXPECT_EQ(clustered, per_signature);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace coroner
