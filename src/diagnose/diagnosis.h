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
#include "symbolize/module_map.h"
#include "unwind/backtrace.h"
#include "unwind/signal_context.h"
#include "unwind/stack_memory.h"

namespace coroner {

// One word of the red zone (the 128 bytes below the crashing rsp).
struct RedZoneWord {
  int64_t offset;  // from rsp: -8 ... -128
  uint64_t value;
  std::string meaning;  // "zero", "return address into f+0x12", "pointer to stack", ...
  bool return_address = false;  // the word is a return address (a call's next instruction)
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

// What a value is as an address in the process: what a register or a
// stack word points at. Its contract spelling (AddressKindName) is only for
// the JSON and the reports; rules compare the enum.
enum class AddressKind {
  kNull,
  kSmall,         // in the first pages: a NULL pointer plus an offset
  kNonCanonical,  // not an x86-64 address at all
  kUnmapped,
  kCode,
  kStack,
  kData,  // a module's writable data
  kHeap,  // other writable memory
  kReadOnly,
  kNoAccess,
};
std::string_view AddressKindName(AddressKind kind);

struct RegisterClass {
  std::string name;  // "rax"
  uint64_t value;
  AddressKind kind;
  std::string detail;  // "walk+0x8 in /opt/app", "misaligned", ...
};

struct ThreadGroup {
  std::string function;  // the first frame of the threads' own code (past libc, libstdc++, ...)
  std::string state;     // ThreadWait::state, shared by the group
  std::vector<int> tids;
  bool with_crashing_thread = false;
};

struct Diagnosis {
  Syndrome syndrome = Syndrome::kOther;
  CrashContext context = CrashContext::kRuntime;
  std::string summary;   // one plain-English sentence
  std::vector<std::string> evidence;
  std::vector<std::string> next_steps;

  // Details behind the evidence.
  std::string faulting_instruction;       // AT&T text at the fault pc
  std::string null_register;              // the register that held NULL (null-deref)
  std::string readonly_mapping;           // the mapping written to (write-to-readonly), described
  std::optional<std::string> abort_message;  // glibc's __abort_msg
  std::optional<std::string> exception_type, exception_what;
  std::optional<std::string> unwinder;    // "GNU libunwind (libunwind.so.8)" or "libgcc (libgcc_s.so.1)"
  std::vector<RedZoneWord> red_zone;
  std::vector<RegisterClass> registers;
  std::vector<ThreadGroup> thread_groups;  // of 2 or more threads
  std::vector<std::string> thread_states;  // ThreadWait::state of each thread, in thread order
  std::vector<BitFlip> possible_bit_flips;  // of a bad pointer (bad-pointer)
  // A register state compiled code cannot produce (rsp off the ABI's
  // alignment where an instruction needs it, the return address one slot
  // from where `ret` looked): why, when there is one. Software (hand-written
  // assembly, a setcontext race) can cause it, and so can a bad CPU; epi
  // counts these per host.
  std::optional<std::string> impossible_state;
  std::string gpu_runtime;  // gpu-fault: the runtime's module ("libhsa-runtime64.so.1")
};

// What a thread was doing when the process died, as readers of gdb's
// `info threads` put it.
struct ThreadWait {
  std::optional<uint64_t> syscall;  // the system call it was blocked in
  bool interrupted = false;         // in a system call that returned EINTR
  // "futex wait" (a mutex, a condition variable, a join), "poll" (poll,
  // select, epoll), "sleep", "read", "accept", "wait for child", "pause",
  // "system call N (name)", "interrupted system call" or "running".
  std::string state;
};
ThreadWait ThreadWaitOf(const Registers& regs, const ModuleMap& modules);

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
std::vector<const Frame*> EffectiveFrames(const Backtrace* bt, const std::optional<FaultContext>& fc);

// Every syndrome's and context's name, in the enums' order.
extern const std::vector<std::string> kSyndromes;
extern const std::vector<std::string> kContexts;

}  // namespace coroner
