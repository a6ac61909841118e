// The per-core report: the JSON contract of `coroner analyze --json`
// (docs/analyze-json.md) and the readable text summary, both rendered from
// the processor's CrashAnalysis.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/core.h"
#include "processor/processor.h"
#include "text/text.h"

namespace coroner {

// Version of the analyze JSON document; bump on any incompatible change.
constexpr int kAnalyzeJsonVersion = 1;

nlohmann::ordered_json CoreToJson(const CrashAnalysis& analysis);

// A JSON object for an input that could not be analyzed at all.
nlohmann::ordered_json ErrorToJson(const std::string& path, const Error& error);

std::string CoreToText(const CrashAnalysis& analysis);

// "slurm job 48213 step 0, rank 17 of 64 on node gpu-a-05, GPUs
// HIP_VISIBLE_DEVICES=3": the job line of the text and Markdown reports.
std::string JobLine(const JobIdentity& job);

// {"rip": "0x...", ...} in gdb's register order (RegistersJsonText's object).
nlohmann::ordered_json RegistersJson(const Registers& r);
// The registers three to a line, in the same order, as the reports print them.
std::vector<std::string> RegisterGrid(const Registers& regs);

// "#3  0x00005555555551a0 in walk (/opt/app/prog) at prog.c:12", gdb's shape.
std::string FrameLine(const Frame& frame);

// A frame's arguments and locals for the text and Markdown reports, gdb's
// `bt full` lines ("amount = 250"); empty when they were not read.
std::vector<std::string> VariableLines(const Frame& frame);

}  // namespace coroner
