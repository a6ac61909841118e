// Evidence: what each diagnosis rule saw, as facts. One struct per rule;
// the rules read these and the labels, never words. The sentences a report
// prints for them are written in report/diagnosis_words.cc, once, for the
// text, the JSON and the Markdown.
//
// `where` fields are code locations as a reader names them ("walk+0x12
// (app)", "JIT code at 0x7f..."): names, not sentences; `instruction` fields
// are the disassembler's text of an instruction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/core.h"
#include "core/registers.h"
#include "diagnose/bit_flips.h"
#include "symbolize/disassembler.h"

namespace coroner {

// Addresses below this are never mapped (vm.mmap_min_addr).
inline constexpr uint64_t kNullPages = 65536;

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

// What a thread was doing when the process died, as readers of gdb's
// `info threads` put it.
enum class WaitKind {
  kRunning,
  kSpin,         // in a loop that polls one word (SpinLoopAt), on no system call
  kInterrupted,  // in a system call that returned EINTR
  kFutex,        // a mutex, a condition variable, a join
  kPoll,         // poll, select, epoll
  kSleep,
  kRead,
  kAccept,
  kWaitChild,
  kPause,
  kOtherSyscall,
};
struct ThreadWait {
  WaitKind kind = WaitKind::kRunning;
  std::optional<uint64_t> syscall;  // the system call it was blocked in
  Arch arch = Arch::kX86_64;        // whose system call numbers
  bool operator==(const ThreadWait&) const = default;
};
// The contract spelling (the JSON's thread `state`, the thread groups):
// "futex wait", "poll", "sleep", "read", "accept", "wait for child",
// "pause", "system call N (name)", "interrupted system call", "spinning"
// or "running".
std::string ThreadStateName(const ThreadWait& wait);
// "230 (clock_nanosleep)": the number, and the name of the calls threads
// wait in.
std::string SyscallName(uint64_t nr, Arch arch = Arch::kX86_64);

// A thread blocked taking a glibc mutex (pthread_mutex_lock, in
// __lll_lock_wait's futex wait), and the thread the mutex names as its
// owner (the mutex's __owner, a TID). Normal, recursive and error-checking
// mutexes; a priority-inheritance mutex, a read-write lock or a condition
// variable is not read.
struct LockWait {
  int tid = 0;
  std::string thread_name;  // a live snapshot's; empty for a core
  std::string where;        // the first function of the thread's own code
  uint64_t mutex = 0;
  std::string mutex_name;  // the variable's symbol, when the mutex is one
  int owner = 0;           // 0: no owner recorded
  bool owner_in_process = false;
};

// A thread spinning: in a loop that reads one word until it changes
// (SpinLoopAt), the word it polls and what the word held.
struct SpinWait {
  int tid = 0;
  std::string thread_name;  // a live snapshot's; empty for a core
  std::string where;        // the first function of the thread's own code
  std::string instruction;  // the loop's read, AT&T or A64 text
  std::optional<uint64_t> word;  // its address, when the registers give it
  std::string word_name;         // the variable's symbol, when the word is in one
  uint64_t word_offset = 0;      // into that variable
  std::optional<uint64_t> value;  // what the word held, `width` bytes
  bool value_hidden = false;      // not shown: it lies in or holds a hidden variable
  unsigned width = 0;
  bool pauses = false;  // the loop holds a spin-wait hint (pause, yield, wfe)
};

namespace evidence {

// A fatal-signal handler caught the fault and re-raised it (or aborted, or
// ended the process with another signal); the real fault was read from the
// kernel's signal frame.
struct HandlerCaughtFault {
  SignalInfo delivered;  // what the process died of
  SignalInfo fault;      // the real fault, from the signal frame
  uint64_t frame_address = 0;
};

// Another process sent the signal, or this one did while the thread sat in
// a system call.
struct SignalSent {
  SignalInfo signal;
  bool by_itself = false;  // the sender is this process
};

// What the thread that got a sent signal was doing.
struct ThreadWasIn {
  ThreadWait wait;
  std::string where;
};

// `ret` popped pc, which is not code. With `return_address`, the real one
// sat one slot away (rsp off by 8); without, it was overwritten.
struct RetPoppedNonCode {
  uint64_t pc = 0;
  std::optional<uint64_t> return_address;
  std::string return_into;  // where return_address returns to
};

struct PcNotCode {
  uint64_t pc = 0;
  AddressKind kind = AddressKind::kUnmapped;
};

// The faulting instruction is `ret` and the word at [rsp] is not code.
struct RetTargetNotCode {
  uint64_t target = 0;
};

// A SIGILL, SIGFPE, SIGBUS or other signal with nothing more specific.
struct SignalAt {
  SignalInfo signal;
  std::string where;
  std::optional<std::string> instruction;
};

// pc is 0: how control got there.
enum class PcZeroCause { kIndirectCall, kReturn, kCall, kUnknown };
struct PcZero {
  PcZeroCause cause = PcZeroCause::kUnknown;
  uint64_t return_address = 0;  // [rsp], for the calls
  std::string caller;           // where return_address returns to
};

// The fault address is below the stack mapping (in its guard gap).
struct BelowStack {
  uint64_t fault_address = 0, stack_start = 0, sp = 0;
  bool in_guard_page = false;
};
struct Recursion {
  std::string function;
  size_t count = 0, depth = 0;
};

// pc falls inside an instruction decoded from its function's start.
struct PcInsideInstruction {
  uint64_t pc = 0;
  Instruction instruction;
  std::string where;  // of the instruction
};

// The crashing frame's CFA is 8 off the ABI's 16 and the instruction needs
// an aligned operand.
struct MisalignedFrame {
  uint64_t cfa = 0;
  std::string instruction;
};
// An aligned access through rsp or rbp, misaligned.
struct MisalignedStackOperand {
  std::string instruction;
  SizedReg base;
  uint64_t value = 0;
};
// `ret` found no return address at [rsp], but one 8 bytes away.
struct ReturnAddressOneSlotAway {};

// The operand's base register held NULL or a small offset from it.
struct NullBaseRegister {
  SizedReg reg;
  uint64_t value = 0;
  std::optional<std::string> instruction;
  uint64_t pc = 0;
  std::string where;
  uint64_t address = 0;
};
// The fault address is in the never-mapped first pages.
struct NullPage {
  uint64_t address = 0;
  std::optional<std::string> instruction;
  uint64_t pc = 0;
  std::string where;
};

// kBeyondUserSpace: aarch64's non-canonical (bits 55-48 set under a top-byte
// tag); kTagMismatch: an MTE tag check fault (SEGV_MTESERR, SEGV_MTEAERR).
enum class BadAddress { kNonCanonical, kUnmapped, kMisaligned, kNoAccess, kBeyondUserSpace, kTagMismatch };
struct BadAccess {
  std::optional<std::string> instruction;
  std::string where;
  std::optional<uint64_t> address;  // absent: a general-protection fault with no operand to compute it from
  BadAddress why = BadAddress::kUnmapped;
  bool general_protection = false;  // SI_KERNEL: the kernel gives no address
  bool asynchronous = false;        // reported after the access (SEGV_MTEAERR): no address, not pc's instruction
};
// The value of the operand's base register.
struct BaseRegister {
  SizedReg reg;
  uint64_t value = 0;
};
struct PossibleBitFlip {
  BitFlip flip;
  AddressKind original_kind = AddressKind::kNull;
};

// The mapping a store hit, without write permission.
struct ReadonlyMapping {
  uint64_t start = 0, end = 0;
  bool read = true, exec = false;
  bool from_module_file = false;  // the core lacks it; the module's file maps it as code
  std::optional<std::string> path;
  uint64_t file_offset = 0;  // of the address written, when `path`
};
struct WroteReadonly {
  std::string instruction;
  std::string where;
  uint64_t address = 0;
  ReadonlyMapping mapping;
};

struct AssertionFailed {
  std::optional<std::string> message;
};
struct MallocAborted {
  std::optional<std::string> message;
};
struct Terminated {
  std::optional<std::string> type, what;
};
struct GpuRuntimeAborted {
  std::string function;  // the runtime's frame, or its pc
  std::string runtime;   // its module
};
struct AbortMessage {
  std::string message;
};
struct AbortCalled {
  SignalInfo signal;
  std::optional<std::string> message;
};

// The exception unwinder was running: seen on the stack, by a return
// address in the red zone, or by a code address in the dead stack below.
enum class UnwinderSeen { kOnStack, kInRedZone, kInDeadStack };
struct UnwinderRunning {
  UnwinderSeen seen = UnwinderSeen::kOnStack;
  std::string function;  // with "+0x.." in the dead stack
  uint64_t depth = 0;    // kInDeadStack: bytes below rsp
};
struct InSignalHandler {};
struct LoadingModule {
  std::string frame;
};
struct Exiting {
  std::string frame;
};
// Which library _Unwind_RaiseException binds to.
struct UnwinderBinding {
  std::string unwinder;
};
// A cycle of threads each waiting for a mutex the next one holds: the
// first waits for the mutex the second holds, ..., the last for the one
// the first holds.
struct Deadlock {
  std::vector<LockWait> cycle;
};
// Other threads in the crashing thread's function and state.
struct PossibleRace {
  size_t others = 0;
  ThreadWait state;
  std::string function;
};

}  // namespace evidence

using Evidence =
    std::variant<evidence::HandlerCaughtFault, evidence::SignalSent, evidence::ThreadWasIn, evidence::RetPoppedNonCode,
                 evidence::PcNotCode, evidence::RetTargetNotCode, evidence::SignalAt, evidence::PcZero,
                 evidence::BelowStack, evidence::Recursion, evidence::PcInsideInstruction, evidence::MisalignedFrame,
                 evidence::MisalignedStackOperand, evidence::ReturnAddressOneSlotAway, evidence::NullBaseRegister,
                 evidence::NullPage, evidence::BadAccess, evidence::BaseRegister, evidence::PossibleBitFlip,
                 evidence::WroteReadonly, evidence::AssertionFailed, evidence::MallocAborted, evidence::Terminated,
                 evidence::GpuRuntimeAborted, evidence::AbortMessage, evidence::AbortCalled,
                 evidence::UnwinderRunning, evidence::InSignalHandler, evidence::LoadingModule, evidence::Exiting,
                 evidence::UnwinderBinding, evidence::PossibleRace, evidence::Deadlock>;

}  // namespace coroner
