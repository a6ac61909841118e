#include "diagnose/syscalls.h"

namespace coroner {

const SyscallEntry* FindSyscall(uint64_t nr, Arch arch) {
  std::span<const SyscallEntry> table = arch == Arch::kAarch64 ? kAarch64Syscalls : kX86_64Syscalls;
  for (const SyscallEntry& e : table)
    if (e.nr == nr) return &e;
  return nullptr;
}

}  // namespace coroner
