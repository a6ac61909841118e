// Comparisons of what coroner reads from a core with what gdb says of the
// same core (its oracle, zoo.h): shared by the zoo's tests and the
// real-programs corpus.
#pragma once

#include <string>
#include <vector>

#include "core/core.h"
#include "symbolize/module_map.h"
#include "unwind/backtrace.h"
#include "zoo/zoo.h"

namespace coroner::testing {

const Thread* FindThread(const Core& core, int tid);

// Every register gdb printed for each thread equals ours; a thread gdb has
// and the core lacks is a failure when `all_threads_present`.
void ExpectRegistersMatch(const GdbOracle& gdb, const Core& core, bool all_threads_present);

// Signal name, number, si_code and fault address.
void ExpectSignalMatches(const GdbOracle& gdb, const Core& core);

// One thread's frames against gdb's, in order: pc, inline or not, signal
// trampolines, and the function wherever gdb names one. gdb's synthesized
// tail-call frames are left out (coroner reports physical frames). The
// comparison ends where gdb's frames stop being evidence: at a pc that is
// not code (past pc 0 gdb takes [rsp] whatever it holds) and, with
// `stop_outside_modules`, at the first pc in no module (JIT code, where gdb
// has no unwind information and guesses). Returns how many were compared.
size_t ExpectSameFrames(const std::vector<GdbFrame>& gdb_all, const Backtrace& ours, const std::string& what,
                        const ModuleMap& modules, bool stop_outside_modules = false);

// The crashing instruction against gdb's `x/2i $pc`: same address, same
// length (where the next one starts), same text.
void ExpectCrashingInstructionMatches(const GdbOracle& gdb, const Core& core, const ModuleMap& modules);

}  // namespace coroner::testing
