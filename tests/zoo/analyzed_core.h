// A zoo core analyzed the way `coroner analyze` does it (backtraces, fault
// context, disassembly, diagnosis), for the tests that look inside.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "report/core_report.h"
#include "symbolize/symbol_provider.h"
#include "zoo/zoo.h"

namespace coroner::testing {

struct AnalyzedCore {
  std::unique_ptr<Core> core;
  CrashAnalysis analysis;
  // Every thread with its frames (CrashAnalysis::threads).
  const std::vector<Backtrace>& threads() const { return analysis.threads; }
};

// The zoo's symbol provider: its stripped binaries' debug files are under
// zoo/debug, and gdb's oracle was told the same.
FileSymbolProvider& ZooSymbols();

// Throws on a core that does not open (the zoo's cores all do).
std::unique_ptr<AnalyzedCore> AnalyzeCore(const std::string& path);
// A core of another machine, as `analyze --sysroot SYSROOT --exe FILE...`
// reads it.
std::unique_ptr<AnalyzedCore> AnalyzeCrossCore(const std::string& path, const std::string& sysroot,
                                               const std::vector<std::string>& exe_files);
// The same, of a core's bytes (`path` names it in errors).
std::unique_ptr<AnalyzedCore> AnalyzeCrossSource(std::unique_ptr<ByteSource> source, const std::string& path,
                                                 const std::string& sysroot, const std::vector<std::string>& exe_files);

// A gtest-safe name for a zoo core parameter ("null_deref_O0").
std::string ZooTestName(const ::testing::TestParamInfo<ZooCore>& info);

}  // namespace coroner::testing
