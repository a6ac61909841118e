// Arguments and locals of the crashing thread's frames against gdb's
// `bt full` on the same core (gdb_frames.py records each value as gdb prints
// it). Every value coroner shows must be gdb's; a variable coroner calls
// `<optimized out>` must be one gdb cannot show either. On the `locals`
// crasher, built for it, every variable gdb shows must be shown, equal.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>

#include "report/value_printer.h"
#include "unit/run_coroner.h"
#include "zoo/analyzed_core.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

struct Compared {
  size_t equal = 0, unavailable = 0, missing = 0;
  size_t library_differ = 0;  // in optimized library frames (see below)
};

Compared CompareWithGdb(const testing::ZooCore& z, bool a64 = false) {
  Compared c;
  auto gdb = testing::ParseGdbOracle(z.oracle);
  auto a = a64 ? testing::AnalyzeCrossCore(z.core, testing::kA64Sysroot, testing::A64ExeFiles(z)) : testing::AnalyzeCore(z.core);
  const Thread& crashed = a->core->threads()[a->core->crashing_thread()];
  const auto& gframes = gdb.frames.at(crashed.tid);
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  // gdb's levels and coroner's frames count the same frames, tail calls'
  // included.
  std::map<int, size_t> ours_at;
  for (size_t level = 0; level < gframes.size() && level < bt.frames.size(); ++level) {
    if (gframes[level].pc != bt.frames[level].pc) break;
    ours_at[static_cast<int>(level)] = level;
  }
  for (const auto& g : gdb.variables) {
    auto at = ours_at.find(g.level);
    if (at == ours_at.end()) continue;
    const Frame& f = bt.frames[at->second];
    // A tail call's frame has no registers of its own; coroner reads no
    // variables there (gdb reads the callee's registers and entry values).
    if (f.trust == FrameTrust::kTailCall) continue;
    std::string where = z.variant + " frame " + std::to_string(at->second) + " " + g.name;
    // The zoo's own code is compared strictly. In the system libraries
    // (-O2, location lists, entry values) gdb and coroner sometimes pick a
    // different entry of a location list at a return address, one saying
    // <optimized out> where the other reads a register: counted, and bounded
    // below.
    bool own = f.module && f.module->module->path.find("/zoo/") != std::string::npos;
    const auto& vars = g.argument ? f.args : f.locals;
    const Variable* ours = nullptr;
    for (const auto& v : vars) {
      if (v.name == g.name && (!ours || (v.value && PrintValue(*v.value) == g.value))) ours = &v;
    }
    if (!ours) {
      if (g.value == "<optimized out>") continue;  // nothing to show either way
      if (!own) {
        ++c.library_differ;
        continue;
      }
      ++c.missing;
      ADD_FAILURE() << where << ": gdb shows " << g.value << ", coroner has no such variable";
      continue;
    }
    if (!ours->value) {
      if (std::getenv("CORONER_SHOW_DIFFERENCES") && g.value != "<optimized out>")
        std::printf("%s: coroner unavailable (%s), gdb %s\n", where.c_str(), ours->unavailable.c_str(), g.value.c_str());
      ++c.unavailable;
      continue;
    }
    if (g.value.rfind("<error:", 0) == 0) continue;
    // gdb's outermost frame: without its caller gdb has no call site to
    // take an entry value (DW_OP_entry_value) from (gdb-multiarch stops
    // at a return address signed with pointer authentication); coroner,
    // which unwinds further, may.
    if (g.value == "<optimized out>" && static_cast<size_t>(g.level) + 1 == gframes.size()) continue;
    std::string mine = PrintValue(*ours->value), theirs = g.value;
    if (!own && (mine == "<optimized out>") != (theirs == "<optimized out>")) {
      if (std::getenv("CORONER_SHOW_DIFFERENCES")) std::printf("%s: coroner %s, gdb %s\n", where.c_str(), mine.c_str(), theirs.c_str());
      ++c.library_differ;
      continue;
    }
    // gdb names a pointer into static data by its DWARF variable where it
    // finds one (`<last>` for the symbol `last.0`, `<initial>` in a library
    // whose symbol table coroner reads without it); coroner by the ELF symbol.
    // The address must be equal; a name both give must be the same up to
    // GCC's `.N` suffix for function-static variables.
    // (`<error: Cannot access memory ...>` is no name: compared whole.)
    static const std::regex kPointer(R"(^(0x[0-9a-f]+) <((?!error:)[^>+]+)(\+\d+)?>$)");
    std::smatch pm, gm;
    bool mine_named = std::regex_match(mine, pm, kPointer), theirs_named = std::regex_match(theirs, gm, kPointer);
    if (mine_named || theirs_named) {
      static const std::regex kSuffix(R"(\.\d+$)");
      auto address = [](const std::string& v) { return v.substr(0, v.find(' ')); };
      EXPECT_EQ(address(mine), address(theirs)) << where;
      if (mine_named && theirs_named) {
        EXPECT_EQ(std::regex_replace(pm[2].str(), kSuffix, ""), std::regex_replace(gm[2].str(), kSuffix, "")) << where;
      }
      if (address(mine) == address(theirs)) ++c.equal;
      continue;
    }
    // gdb cuts a run of bytes that are not valid UTF-8 one short at the end
    // of a char array and adds "..." (`'\375' <repeats 511 times>...` for
    // 512 such bytes): an artifact of its character iterator, accepted here.
    static const std::regex kCutRun(R"(^'(\\[0-7]{3})' <repeats (\d+) times>\.\.\.$)");
    std::smatch cm;
    if (std::regex_match(theirs, cm, kCutRun)) {
      theirs = "'" + cm[1].str() + "' <repeats " + std::to_string(std::stoul(cm[2].str()) + 1) + " times>";
    }
    EXPECT_EQ(mine, theirs) << where;
    if (mine == theirs) ++c.equal;
  }
  return c;
}

class VariablesTest : public ::testing::TestWithParam<testing::ZooCore> {};

TEST_P(VariablesTest, ValuesMatchGdb) {
  Compared c = CompareWithGdb(GetParam());
  if (GetParam().variant == "locals-O0" || GetParam().variant == "locals-relocated") {
    // Built for this: -O0, every variable in memory gdb and coroner can read.
    EXPECT_EQ(c.unavailable, 0u);
    EXPECT_GE(c.equal, 20u);  // 7 in charge, 8 in process_order, 5 in main
  }
}

// Callee-saved registers the CFI says nothing about keep their value into
// the caller (the SysV ABI; gdb reads them so too): glibc's
// __libc_start_main_impl keeps argv in rbx through two calls, and it must be
// the argv main received (read from main's -O0 stack slot).
TEST(Variables, CalleeSavedRegistersCarryIntoCallers) {
  auto a = testing::AnalyzeCore(testing::ZooDir() + "/cores/locals-O0.core");
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  const Variable *in_main = nullptr, *in_libc = nullptr;
  bool libc_has_dwarf = false;
  for (const auto& f : bt.frames) {
    if (f.function == "__libc_start_main_impl") libc_has_dwarf = f.variables_read;
    for (const auto& v : f.args) {
      if (v.name != "argv") continue;
      if (f.function == "main") in_main = &v;
      if (f.function == "__libc_start_main_impl") in_libc = &v;
    }
  }
  ASSERT_TRUE(in_main && in_main->value);
  if (!libc_has_dwarf) GTEST_SKIP() << "no DWARF for glibc (libc6-dbg)";
  ASSERT_TRUE(in_libc);
  ASSERT_TRUE(in_libc->value) << in_libc->unavailable;
  EXPECT_EQ(PrintValue(*in_libc->value), PrintValue(*in_main->value));
}

// Characters as gdb prints them in a UTF-8 locale, asked of gdb itself: a
// printable character as itself, an unassigned code point (U+07BC: the
// bytes a freed chunk's pointer once held) or a control character escaped
// byte by byte, ASCII's escapes as C writes them.
TEST(Variables, CharactersPrintAsGdbPrintsThem) {
  // Ill-formed sequences that look like UTF-8 (past U+10FFFF, overlong, a
  // surrogate, a lone lead byte) are a character per byte for gdb, which
  // counts them so against `print elements`: the second string is cut after
  // 200 of them, wherever a wrong count would cut it.
  std::string cycle;
  for (int k = 0; k < 220; ++k) cycle += static_cast<char>('a' + k % 26);
  const std::string strings[] = {
      "\xde\xbc" "x\xc3\xa9\x01\"\\\n\xe4\xb8\xad\xc2\x85\xf0\x9f\x98\x80\xff",
      "\xf4\xbc\x88\x82" "\xe0\x80\x80" "\xed\xa0\x80" "\xf0\x80\x80\x80" "\xc0\xaf" "\xf4\x8f\xbf\xbf" + cycle,
  };
  for (const std::string& bytes : strings) {
    std::string octal;
    for (unsigned char c : bytes) octal += fmt::format("\\{:03o}", c);
    std::string cmd = "LC_ALL=C.UTF-8 timeout 300 gdb -nx -batch -ex 'print \"" + octal + "\"' 2>&1";
    std::string out = testing::Run(cmd).out;
    ASSERT_EQ(out.rfind("$1 = ", 0), 0u) << out;
    std::string gdb = out.substr(5, out.find_last_not_of('\n') - 4);
    Value v;
    v.kind = Value::Kind::kChars;
    v.text = bytes;
    EXPECT_EQ(PrintValue(v), gdb);
  }
}

// The values as read, before gdb's printer: each kind and number is the
// one locals.c gives its variable (charge(), process_order(), main()).
TEST(Variables, TypedValuesAreTheSourcesOwn) {
  auto a = testing::AnalyzeCore(testing::ZooDir() + "/cores/locals-O0.core");
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  std::map<std::string, const Value*> vars;  // "function.name"
  for (const auto& f : bt.frames) {
    for (const auto* list : {&f.args, &f.locals}) {
      for (const auto& v : *list) {
        if (v.value) vars[f.function + "." + v.name] = &*v.value;
      }
    }
  }
  auto at = [&](const std::string& name) -> const Value& {
    static const Value kMissing{};
    auto it = vars.find(name);
    EXPECT_NE(it, vars.end()) << name;
    return it == vars.end() ? kMissing : *it->second;
  };
  using Kind = Value::Kind;
  auto expect = [&](const std::string& name, Kind kind, uint64_t bits) {
    const Value& v = at(name);
    EXPECT_EQ(v.kind, kind) << name;
    EXPECT_EQ(v.bits, bits) << name;
  };
  expect("charge.amount", Kind::kSigned, 250);
  expect("charge.grade", Kind::kChar, 'B');
  expect("charge.small", Kind::kChar, static_cast<uint64_t>(int64_t{-5}));  // int8_t is a signed char
  expect("charge.port", Kind::kUnsigned, 8080);
  expect("charge.retried", Kind::kBool, 1);
  double quarter = 0.25;
  uint64_t quarter_bits;
  std::memcpy(&quarter_bits, &quarter, 8);
  expect("charge.ratio", Kind::kDouble, quarter_bits);
  expect("process_order.total", Kind::kUnsigned, 0xfeedface12345678ull);
  expect("process_order.level", Kind::kEnumerator, 7);
  EXPECT_EQ(at("process_order.level").text, "PRIORITY_HIGH");
  const Value& where = at("process_order.where");
  EXPECT_EQ(where.kind, Kind::kStruct);
  ASSERT_EQ(where.children.size(), 2u);
  EXPECT_EQ(where.children[0].name, "x");
  EXPECT_EQ(where.children[0].bits, 3u);
  EXPECT_EQ(where.children[1].name, "y");
  EXPECT_EQ(static_cast<int64_t>(where.children[1].bits), -4);
  const Value& history = at("process_order.history");
  EXPECT_EQ(history.kind, Kind::kArray);
  ASSERT_EQ(history.children.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(history.children[i].bits, 10 * (i + 1));
  // A char pointer carries the string it points at; the 230-character note
  // in .rodata is read from the executable's file, 200 bytes of it.
  const Value& label = at("process_order.label");
  EXPECT_EQ(label.kind, Kind::kPointer);
  ASSERT_EQ(label.children.size(), 1u);
  EXPECT_EQ(label.children[0].kind, Kind::kChars);
  EXPECT_EQ(label.children[0].text, "express");
  const Value& note = at("process_order.note");
  ASSERT_EQ(note.children.size(), 1u);
  EXPECT_EQ(note.children[0].kind, Kind::kChars);
  EXPECT_EQ(note.children[0].text.size(), kStringBytesRead);
  EXPECT_TRUE(note.children[0].truncated);
  EXPECT_EQ(note.children[0].text.rfind("Deliver to the loading dock", 0), 0u);
  const Value& order = at("main.order");
  EXPECT_EQ(order.kind, Kind::kStruct);
  ASSERT_EQ(order.children.size(), 3u);
  EXPECT_EQ(order.children[0].kind, Kind::kPointer);
  EXPECT_EQ(order.children[0].bits, 0u);  // customer = NULL: the fault
  EXPECT_EQ(order.children[1].bits, 3u);
  EXPECT_EQ(order.children[2].text, "PRIORITY_HIGH");
  expect("main.calls", Kind::kSigned, 17);
  // argc is 1 (the zoo runs each crasher without arguments): 1 + 41.
  expect("main.count", Kind::kUnsigned, 42);
}

// Parameters an optimized function no longer holds are read from its
// caller's call site (DW_OP_entry_value, DW_TAG_call_site_parameter): glibc's
// __assert_fail_base is passed the assertion's text, file, line and function
// by __assert_fail; the values are the crasher's own (abort_assert.c:7).
TEST(Variables, EntryValuesFromTheCallersCallSite) {
  auto a = testing::AnalyzeCore(testing::ZooDir() + "/cores/abort_assert-O0.core");
  const Backtrace& bt = a->threads()[a->core->crashing_thread()];
  const Frame* base = nullptr;
  for (const auto& f : bt.frames) {
    if (f.function == "__assert_fail_base") base = &f;
  }
  ASSERT_TRUE(base);
  if (!base->variables_read) GTEST_SKIP() << "no DWARF for glibc (libc6-dbg)";
  std::map<std::string, std::string> args;
  for (const auto& v : base->args) args[v.name] = v.value ? PrintValue(*v.value) : "unavailable: " + v.unavailable;
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  EXPECT_TRUE(ends_with(args["assertion"], "\"b >= 0 && \\\"balance must not go negative\\\"\"")) << args["assertion"];
  EXPECT_TRUE(ends_with(args["file"], "/tests/crashers/abort_assert.c\"")) << args["file"];
  EXPECT_EQ(args["line"], "7");
  EXPECT_TRUE(ends_with(args["function"], "\"check_balance\"")) << args["function"];
}

INSTANTIATE_TEST_SUITE_P(Zoo, VariablesTest, ::testing::ValuesIn(testing::LoadZoo()), testing::ZooTestName);

// The aarch64 zoo's variables against gdb-multiarch's: DWARF locations in
// aarch64's register numbers (x29-based frame bases, x19-x28 carried into
// callers). Its handler crashers have no oracle.
class A64VariablesTest : public ::testing::TestWithParam<testing::ZooCore> {};

TEST_P(A64VariablesTest, ValuesMatchGdb) {
  Compared c = CompareWithGdb(GetParam(), true);
  EXPECT_EQ(c.missing, 0u);
  // locals-O0 (every variable in memory): 7 in charge, 8 in process_order, 5 in main.
  if (GetParam().variant == "locals-O0") {
    EXPECT_GE(c.equal, 20u);
  }
}

std::vector<testing::ZooCore> A64ZooWithOracle() {
  std::vector<testing::ZooCore> out;
  for (const auto& z : testing::LoadA64Zoo())
    if (z.oracle != "-") out.push_back(z);
  return out;
}
INSTANTIATE_TEST_SUITE_P(A64Zoo, A64VariablesTest, ::testing::ValuesIn(A64ZooWithOracle()), testing::ZooTestName);

// Across the zoo, the -O0 builds' variables are read, not only skipped.
TEST(Variables, MostOfTheZooIsShown) {
  size_t equal = 0, unavailable = 0, library_differ = 0;
  for (const auto& z : testing::LoadZoo()) {
    if (z.variant.find("-O0") == std::string::npos) continue;
    Compared c = CompareWithGdb(z);
    equal += c.equal;
    unavailable += c.unavailable;
    library_differ += c.library_differ;
  }
  std::printf("-O0 cores: %zu values equal to gdb's, %zu unavailable, %zu library differences\n", equal, unavailable,
              library_differ);
  EXPECT_EQ(library_differ, 0u);
  // The unavailable ones are library frames' entry values and the like.
  EXPECT_GT(equal, 440u);
  EXPECT_GT(equal, 10 * unavailable) << equal << " equal, " << unavailable << " unavailable";
}

}  // namespace
}  // namespace coroner
