#include "diagnose/advice.h"

#include <string>

#include "core/byte_view.h"
#include "core/signals.h"

namespace coroner {

void Advise(const AdviceFacts& facts, Diagnosis& d) {
  const Syndrome s = d.syndrome;
  const std::string& where = facts.where;
  auto& n = d.next_steps;
  if (s == Syndrome::kNullDeref) {
    d.summary = "A NULL pointer" + (d.null_register.empty() ? std::string() : " (in " + d.null_register + ")") +
                " was dereferenced in " + where + ".";
    n = {"Find where the pointer should have been set and why it was not; check the callers in the call chain.",
         "If the crash does not reproduce every time, suspect a race or a use-after-free: build with ThreadSanitizer or AddressSanitizer."};
  } else if (s == Syndrome::kWriteToReadonly) {
    d.summary = "A write to read-only memory in " + where + ": " + d.readonly_mapping + ".";
    n = {"A string literal or a constant was written through a non-const pointer (char *s = \"...\"; s[0] = ...), or code or a page the program protected was written: find the pointer's origin in the crashing frame.",
         "Compile with -Wwrite-strings (and -Wcast-qual) to make the compiler flag writes through pointers to literals."};
  } else if (s == Syndrome::kBadPointer) {
    d.summary = "A corrupt pointer was dereferenced in " + where + ".";
    n = {"A pointer holding garbage usually means the memory it came from was freed, overwritten or raced on: run the workload under AddressSanitizer.",
         "Group the crashes by host: garbage pointers on one machine only point at hardware."};
  } else if (s == Syndrome::kReturnToNull) {
    d.summary = "A function returned to address 0: the return address it popped was NULL.";
    n = {"If the exception unwinder was running, check which unwinder the process uses (GNU libunwind's _Ux86_64_setcontext has a signal race); prefer libgcc's unwinder.",
         "Otherwise look for a stack buffer overflow over the return address: build with -fstack-protector-strong or AddressSanitizer."};
  } else if (s == Syndrome::kCallToNull) {
    d.summary = "A call went through a NULL function pointer in " + (facts.caller.empty() ? std::string("the caller") : facts.caller) + ".";
    n = {"Find the function pointer (a callback, a vtable slot, a dlsym result) that was not set before the call."};
  } else if (s == Syndrome::kWildJump) {
    d.summary = "Control jumped to " + Hex(facts.pc) + ", which is not code.";
    n = {"A corrupted return address or function pointer: look at the red zone and the caller's frame for what was overwritten.",
         "Group the crashes by host and kernel: corrupted control flow on one machine only points at hardware."};
  } else if (s == Syndrome::kMisalignedStack) {
    d.summary = "The stack pointer was 8 bytes off the alignment the code requires when " + where + " ran.";
    n = {"Compiled code never misaligns rsp by itself: suspect hand-written assembly, setcontext/longjmp misuse, or the hardware.",
         "Group these crashes by host (and by physical host behind the VMs): one bad CPU shows up as one host.",
         "Check the host's machine-check and EDAC logs."};
  } else if (s == Syndrome::kStackOverflow) {
    d.summary = "The thread ran out of stack in " + where + ".";
    n = {"Look for unbounded recursion in the call chain, or large stack arrays; raise the thread's stack size only if the depth is legitimate."};
  } else if (s == Syndrome::kAbortAssert) {
    d.summary = "An assertion failed" + (d.abort_message ? ": " + *d.abort_message : std::string(".")) ;
    n = {"Read the asserted condition at the file and line in the message, and the values that broke it in the calling frames."};
  } else if (s == Syndrome::kUncaughtException) {
    d.summary = "An exception" + (d.exception_type ? " of type " + *d.exception_type : std::string()) +
                " was not caught, and std::terminate aborted the process.";
    n = {"Find the throw site in the call chain and the try/catch that was expected to handle it.",
         "An exception thrown through a noexcept function or a destructor also ends in std::terminate."};
  } else if (s == Syndrome::kHeapCorruption) {
    d.summary = "glibc's malloc found its heap corrupted" + (d.abort_message ? ": " + *d.abort_message : std::string(".")) ;
    n = {"The damage happened earlier than this call: run under AddressSanitizer (or MALLOC_CHECK_=3) to catch the bad write or the double free where it happens."};
  } else if (s == Syndrome::kAbort) {
    d.summary = "The process called abort()" + (d.abort_message ? ": " + *d.abort_message : std::string(".")) ;
    n = {"Read the last log lines before the abort, and the frame that called abort()."};
  } else if (s == Syndrome::kIllegalInstruction) {
    d.summary = "The CPU refused an instruction in " + where + ".";
    n = {"ud2 is the compiler's trap for code it proved unreachable (__builtin_trap, UB); otherwise check that the binary's target ISA (AVX-512, ...) matches the host CPU."};
  } else if (s == Syndrome::kFpe) {
    d.summary = "An arithmetic fault (" + SignalCodeName(facts.signal.signo, facts.signal.code).value_or("SIGFPE") + ") in " + where + ".";
    n = {"Look for a division whose divisor can be zero (or INT_MIN / -1) in the crashing function."};
  } else if (s == Syndrome::kBusError) {
    d.summary = "A bus error in " + where + ": the memory was mapped but could not be accessed.";
    n = {"For a file mapping, check whether the file was truncated while mapped; for device memory, the access size or alignment."};
  } else if (s == Syndrome::kGpuFault) {
    d.summary = "The GPU runtime (" + d.gpu_runtime + ") aborted the process after a GPU fault.";
    n = {"Find the GPU's own report at the crash time: the process's stderr (ROCr: \"Memory access fault by GPU node-N ... on address ... Reason: ...\") and the kernel log (amdgpu page faults, NVIDIA Xid lines); `coroner epi --kernel-log` joins them to this core.",
         "A fault address in the program's own buffers points at a kernel launched with a bad pointer or size; the same GPU faulting again and again, with Xid 48/79 or RAS errors, points at the GPU: drain it."};
  } else if (s == Syndrome::kExternalSignal) {
    const SignalInfo& si = facts.delivered;
    bool own = facts.process_pid && si.sender_pid == *facts.process_pid;
    d.summary = own ? "The process re-sent " + SignalName(si.signo) +
                          " to a thread in a system call (a handler passing a signal on, or another "
                          "thread): it did not crash."
                    : "Another process (pid " + std::to_string(si.sender_pid.value_or(0)) +
                          ") killed this one with " + SignalName(si.signo) + ": it did not crash.";
    n = {"Find the sender: a watchdog, a supervisor, an out-of-memory handler or an operator's kill; its logs say why.",
         "Keep these cores out of the crash populations: `coroner epi --rules` with [[exclude]] where = \"syndrome = 'external-signal'\"."};
  } else {
    d.summary = "The process died of " + SignalName(facts.signal.signo) + ".";
    n = {"Check what sent the signal and why (sender pid: " + (facts.signal.sender_pid ? std::to_string(*facts.signal.sender_pid) : std::string("unknown")) + ")."};
  }
  if (d.context == CrashContext::kExitTime) n.push_back("Exit-time crashes often come from races or ordering bugs at shutdown: check which threads were still running and what static destructors tear down.");
  if (d.context == CrashContext::kExceptionUnwind && d.unwinder) n.push_back("The process uses " + *d.unwinder + " for C++ exceptions; if that is GNU libunwind, link libgcc's unwinder first (or drop -lunwind) and see whether the crashes stop.");
}

}  // namespace coroner
