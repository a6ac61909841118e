// The diagnosis in words: every sentence a report prints about a crash
// (its evidence, summary, next steps, the handler line, what a register or
// a red-zone word is), written once from the typed facts and shared by the
// text, JSON and Markdown reports. The JSON's sentences are part of its
// contract (docs/analyze-json.md): change them deliberately.
#pragma once

#include <string>
#include <vector>

#include "diagnose/diagnosis.h"
#include "processor/processor.h"

namespace coroner {

std::string EvidenceSentence(const Evidence& e);
std::vector<std::string> EvidenceSentences(const Diagnosis& d);

// One plain sentence on the crash, and the steps an engineer would take.
// "ckpt_lock (0x...), held by thread 1553": a thread's lock wait.
std::string LockWaitText(const LockWait& w);
// "ready (0x...), which holds 0 (`mov 0x2ed6(%rip),%eax`)": what a spinning
// thread polls.
std::string SpinWaitText(const SpinWait& w);

std::string Summary(const Diagnosis& d);
std::vector<std::string> NextSteps(const Diagnosis& d);

// What a fatal-signal handler did with the fault it caught: "re-raised it
// (SIGSEGV, SI_TKILL)", "called abort() (SIGABRT, SI_TKILL)".
std::string HandlerEnding(const SignalInfo& delivered, const SignalInfo& fault);

// "zero", "return address into f+0x12 (app): a call from there returned", ...
std::string RedZoneMeaning(const RedZoneWord& w);
// "walk+0x8 (app)", "data of libc.so.6, misaligned for a pointer", ...
std::string RegisterDetail(const RegisterClass& r);

// Why a thread's walk ended: "end of stack (return address 0)", ...; empty
// for kNone.
std::string StopReasonText(const StopReason& r);

// "AMDGPU core state in the core's notes (N bytes): ROCgdb reads ...".
std::string GpuStateText(const GpuState& g);

}  // namespace coroner
