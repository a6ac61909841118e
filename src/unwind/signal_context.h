// The fault a fatal-signal handler hid by re-raising it or by aborting.
//
// A handler that catches SIGSEGV and re-raises it from inside itself (LLVM's,
// folly's, glog's, Abseil's) leaves a core whose registers sit in raise() and
// whose siginfo says SI_TKILL. The kernel's rt_sigframe for the first signal
// is still on the stack, just above the handler: the ucontext with the
// registers at the fault and the siginfo with the real si_code and address.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/core.h"
#include "unwind/backtrace.h"
#include "unwind/stack_memory.h"

namespace coroner {

struct FaultContext {
  uint64_t frame_address = 0;  // where the rt_sigframe's ucontext is (x86_64), the frame itself (aarch64)
  Registers registers;         // from uc_mcontext; fs_base/gs_base are the thread's own
  SignalInfo signal;           // from the frame's siginfo
  // aarch64: the exception syndrome the kernel saved (esr_context in the
  // sigcontext's __reserved records) for a fault, and what it says.
  std::optional<uint64_t> esr;
};

// An aarch64 exception syndrome in words: "data abort, translation fault
// (level 3), write", "instruction abort, permission fault", "brk #0x3e8",
// "SP alignment fault". Empty for a class it does not know.
std::string EsrDescription(uint64_t esr);

// The signal the kernel raises for an aarch64 exception syndrome at
// `fault_address` (arch/arm64/mm/fault.c's table): a translation fault is
// SEGV_ACCERR where a mapping holds the address (`mapped`: a write to a
// read-only page never touched) and SEGV_MAPERR where none does; an access
// flag or permission fault SEGV_ACCERR; a synchronous external abort or a
// parity/ECC error (a hardware memory error) SIGBUS, BUS_OBJERR. nullopt
// for a class no user fault has.
std::optional<SignalInfo> SignalFromEsr(uint64_t esr, uint64_t fault_address, uint64_t pc, bool mapped);

// The kernel's rt_sigframe above the signal trampoline frame `trampoline`
// (on x86_64 its sp is the ucontext's address; on aarch64 the frame's, the
// siginfo first): registers and siginfo. The siginfo is
// the frame's when it names the trap the sigcontext records, else it is
// derived from the trap (`core`'s mappings tell SEGV_ACCERR from MAPERR).
std::optional<FaultContext> ReadSignalFrame(const Core& core, const Thread& thread, uint64_t ucontext,
                                            StackMemory& memory);

// The real fault behind a re-raised signal: when the core's signal was sent
// (si_code <= 0) and a signal frame on the crashing thread's stack holds a
// fault the kernel raised (SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGTRAP with a
// positive code), that frame's context. nullopt otherwise.
std::optional<FaultContext> RecoverFaultContext(const Core& core, const Backtrace& crashing,
                                                StackMemory& memory);

}  // namespace coroner
