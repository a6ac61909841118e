#include "report/diagnosis_words.h"

#include <algorithm>
#include <csignal>
#include <type_traits>

#include "core/byte_view.h"
#include "core/signals.h"

namespace coroner {
namespace {

// "SIGSEGV (SEGV_MAPERR)" spelled as the evidence has it: the code's name,
// or `fallback` when the code means nothing for the signal.
std::string CodeName(const SignalInfo& s, const char* fallback) {
  // NT_PRSTATUS's signal alone (qemu-user's cores) has no code to name.
  if (s.source == SignalInfo::Source::kPrstatus && s.code == 0) return "code unknown";
  return SignalCodeName(s.signo, s.code).value_or(fallback);
}

// "`mov (%rax),%rax`", or `otherwise` when the instruction is unknown.
std::string Quoted(const std::optional<std::string>& instruction, const std::string& otherwise) {
  return instruction ? "`" + *instruction + "`" : otherwise;
}

std::string MappingText(const evidence::ReadonlyMapping& m) {
  std::string s = m.from_module_file
                      ? "the r-x mapping " + ShownWord(m.start) + "-" + ShownWord(m.end) + " (code, as the module's file maps it)"
                      : "the " + std::string(m.read ? "r" : "-") + "-" + (m.exec ? "x" : "-") + " mapping " +
                            ShownWord(m.start) + "-" + ShownWord(m.end);
  if (m.path) s += " of " + *m.path + " (file offset " + ShownWord(m.file_offset) + ")";
  return s;
}

std::string BadAddressText(evidence::BadAddress why) {
  switch (why) {
    case evidence::BadAddress::kNonCanonical: return "non-canonical (bits 63-48 are not a sign extension of bit 47)";
    case evidence::BadAddress::kUnmapped: return "not mapped";
    case evidence::BadAddress::kMisaligned: return "misaligned";
    case evidence::BadAddress::kNoAccess: return "mapped without the access right needed";
    case evidence::BadAddress::kBeyondUserSpace: return "beyond the 48-bit user address space (bits 55-48 are set)";
    case evidence::BadAddress::kTagMismatch:
      return "mapped, but the pointer's tag does not match the memory's (an MTE tag check fault: a use after free or "
             "an overrun the tags caught)";
  }
  return "not mapped";
}

// "thread 1552 (checkpoint_writ) in write_checkpoint".
std::string ThreadText(int tid, const std::string& name, const std::string& where) {
  std::string s = "thread " + std::to_string(tid);
  if (!name.empty()) s += " (" + name + ")";
  if (!where.empty()) s += " in " + where;
  return s;
}

// "ckpt_lock (0x55...)" or the address alone.
std::string MutexText(const LockWait& w) {
  return w.mutex_name.empty() ? "mutex " + ShownWord(w.mutex) : w.mutex_name + " (" + ShownWord(w.mutex) + ")";
}

// One overload per fact: the sentence a report prints for it.
struct Sentence {
  std::string operator()(const evidence::HandlerCaughtFault& e) const {
    return "A fatal-signal handler caught the fault and " + HandlerEnding(e.delivered, e.fault) +
           "; the real fault was read from the kernel's signal frame at " + ShownWord(e.frame_address) + ".";
  }
  std::string operator()(const evidence::SignalSent& e) const {
    const SignalInfo& s = e.signal;
    std::string how = s.code == 0 ? "kill()" : s.code == -1 ? "sigqueue()" : "tkill()";
    std::string code = " (" + CodeName(s, "?") + ")";
    std::string pid = std::to_string(s.sender_pid.value_or(0));
    if (e.by_itself) {
      return SignalName(s.signo) + " was sent by this process itself (pid " + pid + ") with " + how + code +
             " while the thread was in a system call, where no instruction faults: a signal handler re-sent a "
             "signal it received, or another thread sent it. The first sender is not in the core.";
    }
    return SignalName(s.signo) + " was sent by pid " + pid +
           (s.sender_uid ? " (uid " + std::to_string(*s.sender_uid) + ")" : std::string()) + " with " + how + code +
           ": no instruction of this process faulted, and the core holds no fault address.";
  }
  std::string operator()(const evidence::ThreadWasIn& e) const {
    if (e.wait.syscall) return "The thread was blocked in system call " + SyscallName(*e.wait.syscall, e.wait.arch) + " in " + e.where + ".";
    if (e.wait.kind == WaitKind::kInterrupted) {
      return "The thread was in a system call in " + e.where + ", which an earlier signal interrupted (it returned EINTR).";
    }
    return "The thread was running in " + e.where + ".";
  }
  std::string operator()(const evidence::RetPoppedNonCode& e) const {
    if (e.return_address) {
      return "`ret` popped " + ShownWord(e.pc) + ", which is not code, while the return address " + ShownWord(*e.return_address) +
             " into " + e.return_into + " sits one slot away: rsp was off by 8.";
    }
    return "`ret` popped " + ShownWord(e.pc) + " (still at [rsp-8]), which is not code: the return address was overwritten.";
  }
  std::string operator()(const evidence::PcNotCode& e) const {
    return "pc " + ShownWord(e.pc) + " is not in executable memory (" + std::string(AddressKindName(e.kind)) + ").";
  }
  std::string operator()(const evidence::RetTargetNotCode& e) const {
    return "The faulting instruction is `ret`, and the return address at [rsp] is " + ShownWord(e.target) + ", which is not code.";
  }
  std::string operator()(const evidence::SignalAt& e) const {
    const SignalInfo& s = e.signal;
    std::string instruction = e.instruction ? ": " + *e.instruction : std::string();
    switch (s.signo) {
      case SIGILL:
      case SIGFPE: return SignalName(s.signo) + " " + CodeName(s, "") + " at " + e.where + instruction;
      case SIGBUS:
        return "SIGBUS " + CodeName(s, "") + (s.fault_address ? " at " + ShownWord(*s.fault_address) : std::string()) +
               ": the address is mapped but its backing is gone (a file mapping past the end of the file?) or misaligned.";
      default: return "Signal " + SignalName(s.signo) + " (" + CodeName(s, "?") + ").";
    }
  }
  std::string operator()(const evidence::PcZero& e) const {
    switch (e.cause) {
      case evidence::PcZeroCause::kIndirectCall:
        return "pc is 0 and [rsp] = " + ShownWord(e.return_address) + " is a return address just after an indirect call in " +
               e.caller + ": a call through a NULL function pointer.";
      case evidence::PcZeroCause::kReturn:
        return "pc is 0 and the word just below rsp ([rsp-8], still intact in the red zone) is 0: a `ret` popped a NULL "
               "return address.";
      case evidence::PcZeroCause::kCall:
        return "pc is 0 and [rsp] = " + ShownWord(e.return_address) + " is a return address into " + e.caller + ".";
      case evidence::PcZeroCause::kUnknown: return "pc is 0, but neither [rsp] is a return address nor [rsp-8] is 0.";
    }
    return "pc is 0.";
  }
  std::string operator()(const evidence::BelowStack& e) const {
    return "The fault address " + ShownWord(e.fault_address) + " is " +
           std::to_string(e.stack_start - std::min(e.fault_address, e.stack_start)) + " bytes below the stack mapping at " +
           ShownWord(e.stack_start) + (e.in_guard_page ? " (its guard page)" : "") + "; rsp is " + ShownWord(e.sp) + ".";
  }
  std::string operator()(const evidence::Recursion& e) const {
    return e.function + " appears in " + std::to_string(e.count) + " of the first " + std::to_string(e.depth) +
           " frames: unbounded recursion.";
  }
  std::string operator()(const evidence::PcInsideInstruction& e) const {
    const Instruction& in = e.instruction;
    return "pc " + ShownWord(e.pc) + " is " + std::to_string(e.pc - in.address) + " bytes into the " +
           std::to_string(in.bytes.size() / 2) + "-byte instruction `" + in.text + "` at " + e.where +
           ", decoded from the function's start: no jump or return of compiled code lands inside an instruction (a "
           "corrupted return address or function pointer, or a bad CPU).";
  }
  std::string operator()(const evidence::MisalignedFrame& e) const {
    return "The crashing frame's CFA is " + ShownWord(e.cfa) + ", 8 bytes off the 16-byte alignment the ABI requires, and `" +
           e.instruction + "` requires a 16-byte aligned operand: rsp is off by 8.";
  }
  std::string operator()(const evidence::MisalignedStackOperand& e) const {
    if (e.base.reg == Reg::sp)  // aarch64: the CPU checks sp whenever it is a load's or store's base
      return "`" + e.instruction + "` uses sp as its base, and aarch64 faults on an sp that is not 16-byte aligned; sp = " +
             ShownWord(e.value) + ", " + std::to_string(e.value % 16) + " bytes off.";
    return "`" + e.instruction + "` needs a 16-byte aligned stack operand; " + SizedRegName(e.base) + " = " +
           ShownWord(e.value) + ".";
  }
  std::string operator()(const evidence::ReturnAddressOneSlotAway&) const {
    return "`ret` found no return address at [rsp], but one sits 8 bytes away: rsp is off by 8.";
  }
  std::string operator()(const evidence::NullBaseRegister& e) const {
    return SizedRegName(e.reg) + " = " + ShownWord(e.value) + (e.value == 0 ? " (NULL)" : " (a small offset from NULL)") +
           " when " + Quoted(e.instruction, "the instruction at " + ShownWord(e.pc)) + " in " + e.where + " read or wrote " +
           ShownWord(e.address) + ".";
  }
  std::string operator()(const evidence::NullPage& e) const {
    return "The fault address " + ShownWord(e.address) + " is in the first " + std::to_string(kNullPages / 1024) +
           " KiB, which are never mapped: " + Quoted(e.instruction, "the instruction at " + ShownWord(e.pc)) + " in " +
           e.where + " dereferenced NULL.";
  }
  std::string operator()(const evidence::BadAccess& e) const {
    if (e.asynchronous)
      return "An asynchronous MTE tag check fault in " + e.where +
             ": an access since the last check used a pointer whose tag does not match the memory's (a use after free "
             "or an overrun the tags caught); the kernel reports it late, so the address and the instruction are "
             "unknown (tag mismatch, address unknown).";
    return Quoted(e.instruction, "the instruction") + " in " + e.where + " accessed " +
           (e.address ? ShownWord(*e.address) : std::string("a bad address")) + ", which is " + BadAddressText(e.why) +
           (e.general_protection
                ? " (SI_KERNEL: the CPU raised a general-protection fault, so the kernel gives no address)"
                : "") +
           ".";
  }
  std::string operator()(const evidence::BaseRegister& e) const {
    return SizedRegName(e.reg) + " = " + ShownWord(e.value) + ".";
  }
  std::string operator()(const evidence::PossibleBitFlip& e) const {
    const BitFlip& f = e.flip;
    std::string to = f.original == 0 ? "NULL" : ShownWord(f.original) + " (" + std::string(AddressKindName(e.original_kind)) + ", mapped)";
    return f.source + " " + ShownWord(f.value) + " is " + to + " with bit " + std::to_string(f.bit) +
           " flipped: a possible bit flip" + (f.high_confidence ? " (a high bit: no overrun reaches that far)" : "") +
           ". More such crashes on one host point to its CPU or memory.";
  }
  std::string operator()(const evidence::WroteReadonly& e) const {
    return "`" + e.instruction + "` in " + e.where + " wrote to " + ShownWord(e.address) + ", in " + MappingText(e.mapping) +
           ", which is not writable (SEGV_ACCERR: mapped, but not for this access).";
  }
  std::string operator()(const evidence::AssertionFailed& e) const {
    return e.message ? "glibc's assertion message: \"" + *e.message + "\""
                     : "__assert_fail is on the stack (no message found in __abort_msg).";
  }
  std::string operator()(const evidence::MallocAborted& e) const {
    return e.message ? "glibc malloc aborted: \"" + *e.message + "\""
                     : "glibc's malloc_printerr is on the stack: malloc found its heap corrupted.";
  }
  std::string operator()(const evidence::Terminated& e) const {
    std::string s = "std::terminate was called";
    if (e.type) s += " for an exception of type " + *e.type;
    if (e.what) s += ", what() = \"" + *e.what + "\"";
    return s + ".";
  }
  std::string operator()(const evidence::GpuRuntimeAborted& e) const {
    return "abort() was called inside the GPU runtime (" + e.function + " in " + e.runtime +
           "): the runtime ends the process after the GPU reports a fault it cannot recover from.";
  }
  std::string operator()(const evidence::AbortMessage& e) const {
    return "glibc's abort message: \"" + e.message + "\"";
  }
  std::string operator()(const evidence::AbortCalled& e) const {
    return "SIGABRT (" + CodeName(e.signal, "?") + ")" +
           (e.message ? ": \"" + *e.message + "\"" : std::string(", no abort message")) + ".";
  }
  std::string operator()(const evidence::UnwinderRunning& e) const {
    switch (e.seen) {
      case evidence::UnwinderSeen::kOnStack:
        return "The exception unwinder was running: " + e.function + " is on the stack.";
      case evidence::UnwinderSeen::kInRedZone:
        return "The exception unwinder was running: a return address into " + e.function +
               " is still in the red zone below rsp.";
      case evidence::UnwinderSeen::kInDeadStack:
        return "The exception unwinder was running: the dead stack " + std::to_string(e.depth) +
               " bytes below rsp still holds the code address " + e.function + ".";
    }
    return "The exception unwinder was running.";
  }
  std::string operator()(const evidence::InSignalHandler&) const {
    return "The fault happened inside a signal handler: a signal frame (<signal handler called>) lies below it on the stack.";
  }
  std::string operator()(const evidence::LoadingModule& e) const {
    return "A module was being loaded or initialized: " + e.frame + " is on the stack.";
  }
  std::string operator()(const evidence::Exiting& e) const {
    return "The process was exiting: " + e.frame +
           " is on the stack (static destructors and atexit handlers run there).";
  }
  std::string operator()(const evidence::UnwinderBinding& e) const {
    return "_Unwind_RaiseException binds to " + e.unwinder + ", the first module in load order that defines it.";
  }
  std::string operator()(const evidence::Deadlock& e) const {
    // Thread i waits for the mutex thread i+1 holds; thread 0 holds the
    // last one's.
    const auto& c = e.cycle;
    if (c.empty()) return "";
    std::string s = "Deadlock: " + ThreadText(c[0].tid, c[0].thread_name, c[0].where) + " holds " +
                    MutexText(c.back()) + " and waits for " + MutexText(c[0]);
    for (size_t i = 1; i < c.size(); ++i) {
      s += ", held by " + ThreadText(c[i].tid, c[i].thread_name, c[i].where) + ", which waits for " + MutexText(c[i]);
    }
    return s + ", held by thread " + std::to_string(c[0].tid) + ".";
  }
  std::string operator()(const evidence::PossibleRace& e) const {
    return std::to_string(e.others) + " other thread(s) were " + ThreadStateName(e.state) + " in " + e.function +
           ", the crashing thread's function: a possible data race.";
  }
};

std::string Message(const char* lead, const std::optional<std::string>& message) {
  return lead + (message ? ": " + *message : std::string("."));
}

}  // namespace

std::string EvidenceSentence(const Evidence& e) { return std::visit(Sentence{}, e); }

std::vector<std::string> EvidenceSentences(const Diagnosis& d) {
  std::vector<std::string> out;
  out.reserve(d.evidence.size());
  for (const Evidence& e : d.evidence) out.push_back(EvidenceSentence(e));
  return out;
}

std::string HandlerEnding(const SignalInfo& delivered, const SignalInfo& fault) {
  std::string ending = delivered.signo == fault.signo ? "re-raised it"
                       : delivered.signo == SIGABRT   ? "called abort()"
                                                      : "ended the process with " + SignalName(delivered.signo);
  return ending + " (" + SignalName(delivered.signo) + ", " + CodeName(delivered, "?") + ")";
}

std::string LockWaitText(const LockWait& w) {
  std::string held = !w.owner              ? "held by no thread the mutex names"
                     : w.owner_in_process ? "held by thread " + std::to_string(w.owner)
                                           : "which names thread " + std::to_string(w.owner) + " as its owner, not a thread of this process";
  return MutexText(w) + ", " + held;
}

std::string SpinWaitText(const SpinWait& w) {
  std::string word = !w.word ? "a word the registers do not name"
                     : w.word_name.empty()
                         ? ShownWord(*w.word)
                         : w.word_name + (w.word_offset ? "+" + std::to_string(w.word_offset) : "") + " (" +
                               ShownWord(*w.word) + ")";
  std::string held = w.value          ? ", which holds " + std::to_string(*w.value)
                     : w.value_hidden ? ", whose value is not shown (it holds a hidden environment variable)"
                     : w.word         ? ", which the core does not hold"
                                      : "";
  return word + held + " (`" + w.instruction + "`" + (w.pauses ? ", with a spin-wait hint" : "") + ")";
}

std::string Summary(const Diagnosis& d) {
  if (!d.classified) return "The core holds no thread registers or signal, so the crash cannot be classified.";
  if (d.syndrome == Syndrome::kDeadlock) {
    for (const auto& e : d.evidence) {
      if (const auto* dl = std::get_if<evidence::Deadlock>(&e)) {
        return std::to_string(dl->cycle.size()) +
               " threads are deadlocked: each waits for a mutex that another of them holds, and none can go on.";
      }
    }
  }
  if (d.syndrome == Syndrome::kSnapshot) {
    return "A snapshot of a running process: no signal stopped it. Each thread's state and stack say where it was.";
  }
  if (!d.site) return "";
  const FaultSite& site = *d.site;
  const std::string& where = site.where;
  switch (d.syndrome) {
    case Syndrome::kNullDeref:
      return "A NULL pointer" + (d.null_register ? " (in " + SizedRegName(*d.null_register) + ")" : std::string()) +
             " was dereferenced in " + where + ".";
    case Syndrome::kWriteToReadonly:
      return "A write to read-only memory in " + where + ": " +
             (d.readonly_mapping ? MappingText(*d.readonly_mapping) : std::string()) + ".";
    case Syndrome::kBadPointer: return "A corrupt pointer was dereferenced in " + where + ".";
    case Syndrome::kReturnToNull: return "A function returned to address 0: the return address it popped was NULL.";
    case Syndrome::kCallToNull:
      return "A call went through a NULL function pointer in " + (site.caller.empty() ? std::string("the caller") : site.caller) + ".";
    case Syndrome::kWildJump: return "Control jumped to " + ShownWord(site.pc) + ", which is not code.";
    case Syndrome::kMisalignedStack:
      return "The stack pointer was 8 bytes off the alignment the code requires when " + where + " ran.";
    case Syndrome::kStackOverflow: return "The thread ran out of stack in " + where + ".";
    case Syndrome::kAbortAssert: return Message("An assertion failed", d.abort_message);
    case Syndrome::kUncaughtException:
      return "An exception" + (d.exception_type ? " of type " + *d.exception_type : std::string()) +
             " was not caught, and std::terminate aborted the process.";
    case Syndrome::kHeapCorruption: return Message("glibc's malloc found its heap corrupted", d.abort_message);
    case Syndrome::kAbort: return Message("The process called abort()", d.abort_message);
    case Syndrome::kIllegalInstruction: return "The CPU refused an instruction in " + where + ".";
    case Syndrome::kFpe: return "An arithmetic fault (" + CodeName(site.signal, "SIGFPE") + ") in " + where + ".";
    case Syndrome::kBusError: return "A bus error in " + where + ": the memory was mapped but could not be accessed.";
    case Syndrome::kGpuFault: return "The GPU runtime (" + d.gpu_runtime + ") aborted the process after a GPU fault.";
    case Syndrome::kExternalSignal: {
      const SignalInfo& si = site.delivered;
      bool own = site.process_pid && si.sender_pid == *site.process_pid;
      return own ? "The process re-sent " + SignalName(si.signo) +
                       " to a thread in a system call (a handler passing a signal on, or another thread): it did not crash."
                 : "Another process (pid " + std::to_string(si.sender_pid.value_or(0)) + ") killed this one with " +
                       SignalName(si.signo) + ": it did not crash.";
    }
    case Syndrome::kDeadlock:
    case Syndrome::kSnapshot: return "";  // above: no fault site
    case Syndrome::kOther: return "The process died of " + SignalName(site.signal.signo) + ".";
  }
  return "";
}

std::vector<std::string> NextSteps(const Diagnosis& d) {
  if (d.syndrome == Syndrome::kDeadlock) {
    return {"Make every thread take these mutexes in one order (or take them together with std::scoped_lock); the functions named are where each was taken out of order.",
            "ThreadSanitizer reports lock-order inversions before they deadlock: run the workload built with -fsanitize=thread."};
  }
  if (d.syndrome == Syndrome::kSnapshot) {
    return {"Take another snapshot a few seconds later: a thread found in the same place, in the same wait, is stuck there; follow what it waits for (a peer, a lock's owner, a file)."};
  }
  if (!d.site) return {};
  std::vector<std::string> n;
  switch (d.syndrome) {
    case Syndrome::kNullDeref:
      n = {"Find where the pointer should have been set and why it was not; check the callers in the call chain.",
           "If the crash does not reproduce every time, suspect a race or a use-after-free: build with ThreadSanitizer or AddressSanitizer."};
      break;
    case Syndrome::kWriteToReadonly:
      n = {"A string literal or a constant was written through a non-const pointer (char *s = \"...\"; s[0] = ...), or code or a page the program protected was written: find the pointer's origin in the crashing frame.",
           "Compile with -Wwrite-strings (and -Wcast-qual) to make the compiler flag writes through pointers to literals."};
      break;
    case Syndrome::kBadPointer:
      n = {"A pointer holding garbage usually means the memory it came from was freed, overwritten or raced on: run the workload under AddressSanitizer.",
           "Group the crashes by host: garbage pointers on one machine only point at hardware."};
      break;
    case Syndrome::kReturnToNull:
      n = {"If the exception unwinder was running, check which unwinder the process uses (GNU libunwind's _Ux86_64_setcontext has a signal race); prefer libgcc's unwinder.",
           "Otherwise look for a stack buffer overflow over the return address: build with -fstack-protector-strong or AddressSanitizer."};
      break;
    case Syndrome::kCallToNull:
      n = {"Find the function pointer (a callback, a vtable slot, a dlsym result) that was not set before the call."};
      break;
    case Syndrome::kWildJump:
      n = {"A corrupted return address or function pointer: look at the red zone and the caller's frame for what was overwritten.",
           "Group the crashes by host and kernel: corrupted control flow on one machine only points at hardware."};
      break;
    case Syndrome::kMisalignedStack:
      n = {"Compiled code never misaligns rsp by itself: suspect hand-written assembly, setcontext/longjmp misuse, or the hardware.",
           "Group these crashes by host (and by physical host behind the VMs): one bad CPU shows up as one host.",
           "Check the host's machine-check and EDAC logs."};
      break;
    case Syndrome::kStackOverflow:
      n = {"Look for unbounded recursion in the call chain, or large stack arrays; raise the thread's stack size only if the depth is legitimate."};
      break;
    case Syndrome::kAbortAssert:
      n = {"Read the asserted condition at the file and line in the message, and the values that broke it in the calling frames."};
      break;
    case Syndrome::kUncaughtException:
      n = {"Find the throw site in the call chain and the try/catch that was expected to handle it.",
           "An exception thrown through a noexcept function or a destructor also ends in std::terminate."};
      break;
    case Syndrome::kHeapCorruption:
      n = {"The damage happened earlier than this call: run under AddressSanitizer (or MALLOC_CHECK_=3) to catch the bad write or the double free where it happens."};
      break;
    case Syndrome::kAbort: n = {"Read the last log lines before the abort, and the frame that called abort()."}; break;
    case Syndrome::kIllegalInstruction:
      n = {"ud2 is the compiler's trap for code it proved unreachable (__builtin_trap, UB); otherwise check that the binary's target ISA (AVX-512, ...) matches the host CPU."};
      break;
    case Syndrome::kFpe: n = {"Look for a division whose divisor can be zero (or INT_MIN / -1) in the crashing function."}; break;
    case Syndrome::kBusError:
      n = {"For a file mapping, check whether the file was truncated while mapped; for device memory, the access size or alignment."};
      break;
    case Syndrome::kGpuFault:
      n = {"Find the GPU's own report at the crash time: the process's stderr (ROCr: \"Memory access fault by GPU node-N ... on address ... Reason: ...\") and the kernel log (amdgpu page faults, NVIDIA Xid lines); `coroner epi --kernel-log` joins them to this core.",
           "A fault address in the program's own buffers points at a kernel launched with a bad pointer or size; the same GPU faulting again and again, with Xid 48/79 or RAS errors, points at the GPU: drain it."};
      break;
    case Syndrome::kExternalSignal:
      n = {"Find the sender: a watchdog, a supervisor, an out-of-memory handler or an operator's kill; its logs say why.",
           "Keep these cores out of the crash populations: `coroner epi --rules` with [[exclude]] where = \"syndrome = 'external-signal'\"."};
      break;
    case Syndrome::kDeadlock:
    case Syndrome::kSnapshot: break;  // above
    case Syndrome::kOther: {
      const auto& sender = d.site->signal.sender_pid;
      n = {"Check what sent the signal and why (sender pid: " + (sender ? std::to_string(*sender) : std::string("unknown")) + ")."};
      break;
    }
  }
  if (d.context == CrashContext::kExitTime) {
    n.push_back("Exit-time crashes often come from races or ordering bugs at shutdown: check which threads were still running and what static destructors tear down.");
  }
  if (d.context == CrashContext::kExceptionUnwind && d.unwinder) {
    n.push_back("The process uses " + *d.unwinder + " for C++ exceptions; if that is GNU libunwind, link libgcc's unwinder first (or drop -lunwind) and see whether the crashes stop.");
  }
  return n;
}

std::string RedZoneMeaning(const RedZoneWord& w) {
  if (w.kind == AddressKind::kNull) return "zero";
  if (w.return_address) return "return address into " + (w.where.empty() ? std::string() : w.where + ": a call from there returned");
  if (w.kind == AddressKind::kCode) return "code address " + w.where;
  if (w.kind == AddressKind::kStack) return "pointer into the stack";
  return std::string(AddressKindName(w.kind));
}

std::string RegisterDetail(const RegisterClass& r) {
  if (r.kind == AddressKind::kUnmapped || r.kind == AddressKind::kNoAccess) return "not mapped in the process";
  std::string detail = r.kind == AddressKind::kCode                      ? r.where
                       : r.kind == AddressKind::kData && !r.where.empty() ? "data of " + r.where
                                                                          : std::string();
  if (r.misaligned_pointer) detail += detail.empty() ? "misaligned for a pointer" : ", misaligned for a pointer";
  return detail;
}

std::string StopReasonText(const StopReason& r) {
  switch (r.kind) {
    case StopReason::Kind::kNone: return "";
    case StopReason::Kind::kEndOfCfi: return "end of stack (no return address in the CFI)";
    case StopReason::Kind::kEntryPoint: return "end of stack (the program's entry point)";
    case StopReason::Kind::kNothingFound: return "no CFI, frame pointer or return address found";
    case StopReason::Kind::kPcNotCode: return "pc is not in executable memory and no return address found";
    case StopReason::Kind::kReturnAddressZero: return "end of stack (return address 0)";
    case StopReason::Kind::kStackDidNotMoveUp: return "stack pointer did not move up: corrupt or looping stack";
    case StopReason::Kind::kFrameLimit: return "frame limit of " + std::to_string(r.limit) + " reached";
    case StopReason::Kind::kCoreBudget:
      return "the core's budget of " + std::to_string(r.limit) + " frames for all threads is spent";
  }
  return "";
}

std::string GpuStateText(const GpuState& g) {
  switch (g.kind) {
    case GpuState::Kind::kAmdgpuNotes:
      return "AMDGPU core state in the core's notes (" + std::to_string(g.bytes) +
             " bytes): ROCgdb reads the GPU's waves from it";
    case GpuState::Kind::kCudaDump:
      return "a CUDA GPU core dump beside the core: " + g.path + " (" + std::to_string(g.bytes) +
             " bytes; cuda-gdb reads it)";
  }
  return "";
}

}  // namespace coroner
