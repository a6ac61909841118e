#include "zoo/gdb_compare.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/signals.h"
#include "report/diagnosis_words.h"
#include "symbolize/demangle.h"
#include "symbolize/disassembler.h"

namespace coroner::testing {

const Thread* FindThread(const Core& core, int tid) {
  for (const auto& t : core.threads()) {
    if (t.tid == tid) return &t;
  }
  return nullptr;
}

void ExpectRegistersMatch(const GdbOracle& gdb, const Core& core, bool all_threads_present) {
  for (const auto& g : gdb.threads) {
    const Thread* t = FindThread(core, g.tid);
    if (!t) {
      EXPECT_FALSE(all_threads_present) << "thread " << g.tid << " missing";
      continue;
    }
    ASSERT_GE(g.registers.size(), 20u) << "gdb printed too few registers for " << g.tid;
    for (const auto& [name, value] : g.registers) {
      auto reg = RegFromName(name);
      if (!reg) continue;  // k0-k7 and other registers coroner does not model
      EXPECT_EQ(t->registers[*reg], value) << "thread " << g.tid << " register " << name;
    }
  }
}

void ExpectSignalMatches(const GdbOracle& gdb, const Core& core) {
  ASSERT_TRUE(core.signal());
  const SignalInfo& s = *core.signal();
  EXPECT_EQ(SignalName(s.signo), gdb.signal_name);
  ASSERT_TRUE(gdb.sig_signo && gdb.sig_code) << "gdb could not print $_siginfo";
  EXPECT_EQ(s.signo, *gdb.sig_signo);
  EXPECT_EQ(s.code, *gdb.sig_code);
  if (s.fault_address) {
    ASSERT_TRUE(gdb.sig_addr);
    EXPECT_EQ(*s.fault_address, *gdb.sig_addr);
  } else {
    EXPECT_FALSE(SignalHasFaultAddress(s.signo, s.code));
  }
}

size_t ExpectSameFrames(const std::vector<GdbFrame>& gdb_all, const Backtrace& ours_all, const std::string& what,
                        const ModuleMap& modules, bool stop_outside_modules) {
  std::vector<GdbFrame> gdb = gdb_all;
  // gdb shows the native frames; the Python frames placed among them are
  // checked against the scripts' source (python_stacks_test).
  Backtrace ours = ours_all;
  std::erase_if(ours.frames, [](const Frame& f) { return f.trust == FrameTrust::kPython; });
  // Past pc 0, gdb takes [rsp] for the return address whatever it holds; a
  // "frame" at a pc that is not code is that guess, and ends the comparison.
  for (size_t i = 1; i < gdb.size(); ++i) {
    if (!modules.IsCode(gdb[i].pc) || (stop_outside_modules && !modules.Find(gdb[i].pc))) {
      gdb.resize(i);
      break;
    }
  }
  EXPECT_GE(ours.frames.size(), std::min<size_t>(gdb.size(), 64)) << what << ": " << StopReasonText(ours.stop_reason);
  size_t n = std::min(gdb.size(), ours.frames.size());
  for (size_t i = 0; i < n; ++i) {
    const auto& g = gdb[i];
    const Frame& f = ours.frames[i];
    std::string where = what + " frame " + std::to_string(i);
    EXPECT_EQ(f.pc, g.pc) << where;
    if (g.type == "sigtramp") {
      EXPECT_TRUE(f.signal_trampoline) << where;
      continue;
    }
    EXPECT_FALSE(f.signal_trampoline) << where;
    EXPECT_EQ(f.trust == FrameTrust::kTailCall, g.type == "tailcall") << where;
    EXPECT_EQ(f.inlined, gdb.size() > i + 1 && g.type == "inline") << where;
    if (g.function != "??") {
      std::string theirs = StripParameters(g.function);
      // Two names of one function in a library without debug information
      // (`__clone` and its weak alias `clone`): gdb takes the one last in
      // its name order, coroner the global one. The same address is the
      // same function.
      bool alias = f.function != theirs && f.module && f.module->image &&
                   f.module->image->SymbolAddress(f.function).has_value() &&
                   f.module->image->SymbolAddress(f.function) == f.module->image->SymbolAddress(theirs);
      if (!alias) {
        EXPECT_EQ(f.function, theirs) << where;
      }
    }
    if (f.pc != g.pc) break;  // the rest would only repeat the first difference
  }
  return n;
}

void ExpectCrashingInstructionMatches(const GdbOracle& gdb, const Core& core, const ModuleMap& modules) {
  const Thread& t = core.threads()[core.crashing_thread()];
  auto ins = Disassemble(modules, t.registers.pc(), true);
  if (gdb.instructions.empty()) {
    // gdb could not read code at pc (pc 0): neither is there any to show.
    EXPECT_TRUE(ins.empty());
    return;
  }
  ASSERT_EQ(gdb.instructions.size(), 2u);
  auto cur = std::find_if(ins.begin(), ins.end(), [](const Instruction& i) { return i.current; });
  ASSERT_NE(cur, ins.end());
  EXPECT_EQ(cur->address, gdb.instructions[0].address);
  EXPECT_EQ(cur->address + cur->bytes.size() / 2, gdb.instructions[1].address);
  EXPECT_EQ(cur->text, gdb.instructions[0].text);
}

}  // namespace coroner::testing
