// Diagnosis: the crash's syndrome and context, with the evidence for them,
// made from the snapshot (registers, memory, modules) and the backtraces.
//
// The syndrome strings and context strings are a contract (JSON
// `diagnosis.syndrome`, `diagnosis.context`; the dataset and the
// epidemiology group by them). When a handler re-raised the signal, the
// diagnosis is made from the real fault's context recovered from the signal
// frame.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/core.h"
#include "diagnose/bit_flips.h"
#include "diagnose/evidence.h"
#include "symbolize/module_map.h"
#include "unwind/backtrace.h"
#include "unwind/signal_context.h"
#include "unwind/stack_memory.h"

namespace coroner {

// One word of the red zone (the 128 bytes below the crashing rsp).
struct RedZoneWord {
  int64_t offset;  // from rsp: -8 ... -128
  uint64_t value;
  AddressKind kind = AddressKind::kNull;
  bool return_address = false;  // a code address just after a call: a return address
  std::string where;            // of a code address (of the call, for a return address); a report's only
};

// What kind of crash it was, and in what state the process was. The
// contract strings (docs/analyze-json.md, the dataset) are SyndromeName and
// ContextName; the rules and the tests decide on these values.
enum class Syndrome {
  kNullDeref,
  kBadPointer,
  kWriteToReadonly,  // a store to a mapped page without write permission
  kReturnToNull,
  kCallToNull,
  kWildJump,
  kMisalignedStack,
  kStackOverflow,
  kAbortAssert,
  kUncaughtException,
  kHeapCorruption,
  kAbort,
  kIllegalInstruction,
  kFpe,
  kBusError,
  kGpuFault,        // the GPU runtime (ROCr, the CUDA driver) aborted the process after a GPU fault
  kExternalSignal,  // sent by another process: no instruction of this one faulted
  kDeadlock,        // threads wait, in a cycle, for glibc mutexes the others hold
  kSnapshot,        // no signal: a running process's snapshot (analyze --pid, gcore)
  kOther,
};
enum class CrashContext {
  kRuntime,
  kExitTime,
  kSignalHandler,
  kExceptionUnwind,
  kModuleLoad,
};
std::string_view SyndromeName(Syndrome syndrome);
std::string_view ContextName(CrashContext context);
// The syndrome a stored name spells (a dataset's column); nullopt for a
// name no syndrome has.
std::optional<Syndrome> SyndromeFromName(std::string_view name);

// A general register of the crashing thread, as what it points at.
struct RegisterClass {
  Reg reg;
  uint64_t value;
  AddressKind kind;
  std::string where;                // kCode: the code it points at; kData: the module whose data it is
  bool misaligned_pointer = false;  // into memory, but not at a multiple of 8 (rsp and rbp aside)
};

struct ThreadGroup {
  std::string function;  // the first frame of the threads' own code (past libc, libstdc++, ...)
  ThreadWait state;      // shared by the group
  std::vector<int> tids;
  bool with_crashing_thread = false;
};

// Where the fault happened, for the summary and the advice.
struct FaultSite {
  std::string where;   // the faulting frame's function, else the pc's module and offset
  std::string caller;  // the function of the frame that called it; empty when unknown
  uint64_t pc = 0;     // the fault's pc (the real fault's behind a re-raise)
  SignalInfo signal;     // the fault's signal (the real fault's behind a re-raise)
  SignalInfo delivered;  // the signal the process died of
  std::optional<int> process_pid;
};

struct Diagnosis {
  Syndrome syndrome = Syndrome::kOther;
  CrashContext context = CrashContext::kRuntime;
  bool classified = false;         // the core had a thread and a signal to classify
  std::vector<Evidence> evidence;  // in the order the rules found it
  std::optional<FaultSite> site;   // at a report's depth

  // Details behind the evidence.
  std::string faulting_instruction;       // AT&T text at the fault pc
  std::optional<SizedReg> null_register;  // the register that held NULL (null-deref)
  std::optional<evidence::ReadonlyMapping> readonly_mapping;  // the mapping written to (write-to-readonly)
  std::optional<std::string> abort_message;  // glibc's __abort_msg
  std::optional<std::string> exception_type, exception_what;
  std::optional<std::string> unwinder;    // "GNU libunwind (libunwind.so.8)" or "libgcc (libgcc_s.so.1)"
  std::vector<RedZoneWord> red_zone;
  std::vector<RegisterClass> registers;
  std::vector<ThreadGroup> thread_groups;   // of 2 or more threads
  std::vector<ThreadWait> thread_states;    // of each thread, in thread order
  // The threads blocked taking a glibc mutex, in thread order (at a
  // report's depth: every thread's frames are needed).
  std::vector<LockWait> lock_waits;
  // The threads spinning on a word, in thread order (at a report's depth).
  std::vector<SpinWait> spin_waits;
  std::vector<BitFlip> possible_bit_flips;  // of a bad pointer (bad-pointer)
  // A register state compiled code cannot produce (rsp off the ABI's
  // alignment where an instruction needs it, the return address one slot
  // from where `ret` looked, a pc inside an instruction): the evidence that
  // shows it, when there is one. Software (hand-written assembly, a
  // setcontext race) can cause it, and so can a bad CPU; epi counts these
  // per host.
  std::optional<Evidence> impossible_state;
  std::string gpu_runtime;  // gpu-fault: the runtime's module ("libhsa-runtime64.so.1")
};

ThreadWait ThreadWaitOf(const Registers& regs, const ModuleMap& modules);

// The mutex thread `tid` waits for, if it waits for one.
const LockWait* LockWaitOf(const Diagnosis& d, int tid);
// The word thread `tid` spins on, if it spins.
const SpinWait* SpinWaitOf(const Diagnosis& d, int tid);

// The libraries every program runs on (glibc, the dynamic loader, the C++
// runtime and its unwinders), by the module's path: a thread's own code is
// its first frame outside them, and an unnamed frame in one is machinery.
bool IsRuntimeLibrary(std::string_view path);

// How much a diagnosis says. A dataset row needs only the labels (the
// syndrome, the context and what decides them); a report also wants every
// register classified, the thread groups, the summary and the next steps,
// which cost more than the labels themselves.
enum class DiagnosisDepth { kLabels, kReport };

// `threads` holds every thread of the core, in its order, each with its
// frames (none where it was not unwound: the frame-based rules then do not
// apply to it).
Diagnosis Diagnose(const Core& core, const ModuleMap& modules, const std::vector<Backtrace>& threads,
                   const std::optional<FaultContext>& fault_context, StackMemory& memory,
                   DiagnosisDepth depth = DiagnosisDepth::kReport);

// The frames that describe where the fault happened: all of them, or, when
// the fault was re-raised, the ones past the signal frame that held it.
// The index of the first of those frames.
size_t FaultOrigin(const Backtrace* bt, const std::optional<FaultContext>& fc);
std::vector<const Frame*> EffectiveFrames(const Backtrace* bt, const std::optional<FaultContext>& fc);

}  // namespace coroner
