// The per-core report: the JSON contract of `coroner analyze --json`
// (docs/analyze-json.md) and the readable text summary. Both are built from
// the Core snapshot only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/core.h"
#include "text/text.h"
#include "diagnose/diagnosis.h"
#include "provenance/source_report.h"
#include "symbolize/disassembler.h"
#include "symbolize/module_map.h"
#include "unwind/backtrace.h"
#include "unwind/signal_context.h"

namespace coroner {

// Version of the analyze JSON document; bump on any incompatible change.
constexpr int kAnalyzeJsonVersion = 1;

// What the report is made from: the core, and (unless registers only) its
// module map and one backtrace per thread, in thread order.
struct CoreAnalysis {
  const Core* core = nullptr;
  std::string path;
  const ModuleMap* modules = nullptr;
  std::vector<Backtrace> backtraces;
  // The real fault behind a re-raised signal, for the crashing thread.
  std::optional<FaultContext> fault_context;
  // Instructions around the pc of the first kDisassembledFrames unwound
  // (physical) frames of the crashing thread, and around the real fault's pc
  // when recovered.
  std::vector<std::vector<Instruction>> crashing_disassembly;
  std::vector<Instruction> fault_disassembly;
  std::optional<Diagnosis> diagnosis;
  // The source side (files, versions, fix status) for the Markdown report.
  std::optional<SourceReport> sources;
};

constexpr size_t kDisassembledFrames = 64;
// Frames unwound for all the threads of one core together (each thread is
// also bounded by UnwindOptions::max_frames): 1,000 threads of 60 frames fit.
constexpr size_t kMaxFramesPerCore = 65536;

// The instructions around the fault: the real fault's when a handler
// re-raised it, else frame 0's. Empty when there are none.
const std::vector<Instruction>& CrashingInstructions(const CoreAnalysis& analysis);

// Fills backtraces, fault_context, the disassembly and the diagnosis from
// the core and its module map.
void AnalyzeThreads(CoreAnalysis& analysis, const ModuleMap& modules, StackMemory& stack,
                    const UnwindOptions& options);

nlohmann::ordered_json CoreToJson(const CoreAnalysis& analysis);

// A JSON object for an input that could not be analyzed at all.
nlohmann::ordered_json ErrorToJson(const std::string& path, const Error& error);

std::string CoreToText(const CoreAnalysis& analysis);

// {"rip": "0x...", ...} in gdb's register order.
nlohmann::ordered_json RegistersJson(const Registers& r);
// The same object as compact JSON text (RegistersJson(r).dump()), built
// directly: a scan stores one per thread.
std::string RegistersJsonText(const Registers& r);

// As the process named it (AT_EXECFN), else the executable's module path;
// empty when neither is known.
std::string ExePath(const Core& core);

// "#3  0x00005555555551a0 in walk (/opt/app/prog) at prog.c:12", gdb's shape.
std::string FrameLine(const Frame& frame);

// A frame's arguments and locals for the text and Markdown reports, gdb's
// `bt full` lines ("amount = 250"); empty when they were not read.
std::vector<std::string> VariableLines(const Frame& frame);

}  // namespace coroner
