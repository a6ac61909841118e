// The per-core report: the JSON contract of `coroner analyze --json`
// (docs/analyze-json.md) and the readable text summary, both rendered from
// the processor's CrashAnalysis.
#pragma once

#include <string>
#include <vector>

#include "core/core.h"
#include "processor/processor.h"
#include "text/json_writer.h"
#include "text/text.h"

namespace coroner {

// Version of the analyze JSON document; bump on any incompatible change.
constexpr int kAnalyzeJsonVersion = 1;

// One line of `analyze --json`: the analysis's JSON object, written as it
// goes (a streaming writer: no document tree is built).
std::string CoreToJson(const CrashAnalysis& analysis);

// The JSON object for an input that could not be analyzed at all.
std::string ErrorToJson(const std::string& path, const Error& error);

std::string CoreToText(const CrashAnalysis& analysis);

// "slurm job 48213 step 0, rank 17 of 64 on node gpu-a-05, GPUs
// HIP_VISIBLE_DEVICES=3": the job line of the text and Markdown reports.
std::string JobLine(const JobIdentity& job);

// The registers three to a line, in the same order, as the reports print them.
std::vector<std::string> RegisterGrid(const Registers& regs);

// "#3  0x00005555555551a0 in walk (/opt/app/prog) at prog.c:12", gdb's shape.
std::string FrameLine(const Frame& frame);

// A frame's arguments and locals for the text and Markdown reports, gdb's
// `bt full` lines ("amount = 250"); empty when they were not read.
std::vector<std::string> VariableLines(const Frame& frame);

}  // namespace coroner
