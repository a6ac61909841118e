#include "diagnose/syscalls.h"

namespace coroner {

const SyscallEntry* FindSyscall(uint64_t nr, Arch arch) {
  std::span<const SyscallEntry> table = arch == Arch::kAarch64 ? kAarch64Syscalls : kX86_64Syscalls;
  for (const SyscallEntry& e : table)
    if (e.nr == nr) return &e;
  return nullptr;
}

Reg SyscallArgument(Arch arch, size_t n) {
  return (arch == Arch::kAarch64 ? kAarch64SyscallArguments : kX86_64SyscallArguments)[n < 6 ? n : 5];
}

}  // namespace coroner
