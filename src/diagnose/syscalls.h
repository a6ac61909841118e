// The system calls a thread is found in, per machine: what a thread
// blocked in one waits for, and whether it sends a signal (abort() and
// raise() block in one of those while their signal arrives). Each
// machine's numbers sit in a file of its own (x86_64_syscalls.cc,
// aarch64_syscalls.cc).
#pragma once

#include <cstdint>
#include <span>

#include "core/registers.h"
#include "diagnose/evidence.h"

namespace coroner {

struct SyscallEntry {
  uint64_t nr;
  const char* name;
  WaitKind wait;
  bool sends_signal = false;
};

extern const std::span<const SyscallEntry> kX86_64Syscalls;
extern const std::span<const SyscallEntry> kAarch64Syscalls;

// The register holding a system call's argument n (0 to 5) as the thread
// entered it: a blocked thread's registers still hold them.
Reg SyscallArgument(Arch arch, size_t n);
extern const Reg kX86_64SyscallArguments[6];
extern const Reg kAarch64SyscallArguments[6];

// The entry of system call `nr` of `arch`, or null for one not listed.
const SyscallEntry* FindSyscall(uint64_t nr, Arch arch);

}  // namespace coroner
