// ProcessMemory: reading another process's memory, as the live snapshot
// does. process_vm_readv first (one system call, no descriptor kept); where
// the kernel refuses it (a kernel built without it, a seccomp filter on the
// reader), /proc/PID/mem, opened on first need and closed with the object.
//
// A read stops at the first byte that cannot be read (an unmapped or
// PROT_NONE page, a process that exited): it returns how many bytes it got,
// and 0 is an answer, not an error. The caller must be allowed to trace the
// process (ptrace's access mode), which the snapshot checks first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace coroner {

class ProcessMemory {
 public:
  explicit ProcessMemory(int pid) : pid_(pid) {}
  ~ProcessMemory();
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;

  size_t ReadUpTo(uint64_t addr, std::span<std::byte> out);
  int pid() const { return pid_; }

 private:
  size_t ReadProcMem(uint64_t addr, std::span<std::byte> out);
  int pid_;
  int mem_fd_ = -1;
  bool vm_readv_works_ = true;
};

}  // namespace coroner
