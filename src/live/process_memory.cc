#include "live/process_memory.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace coroner {

ProcessMemory::~ProcessMemory() {
  if (mem_fd_ >= 0) ::close(mem_fd_);
}

size_t ProcessMemory::ReadUpTo(uint64_t addr, std::span<std::byte> out) {
  size_t done = 0;
  while (done < out.size() && vm_readv_works_) {
    iovec local{out.data() + done, out.size() - done};
    iovec remote{reinterpret_cast<void*>(addr + done), out.size() - done};
    ssize_t n = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // ENOSYS (no such call) and EPERM under a filter say nothing of the
    // address: /proc/PID/mem may still serve it.
    if (n < 0 && (errno == ENOSYS || errno == EPERM)) {
      vm_readv_works_ = false;
      break;
    }
    return done;  // EFAULT, ESRCH or 0: the bytes end here
  }
  if (done < out.size() && !vm_readv_works_) done += ReadProcMem(addr + done, out.subspan(done));
  return done;
}

size_t ProcessMemory::ReadProcMem(uint64_t addr, std::span<std::byte> out) {
  if (mem_fd_ < 0) {
    std::string path = "/proc/" + std::to_string(pid_) + "/mem";
    mem_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (mem_fd_ < 0) return 0;
  }
  size_t done = 0;
  while (done < out.size()) {
    // Addresses above 2^63 are negative offsets to pread; none is user memory.
    if (addr + done > static_cast<uint64_t>(INT64_MAX)) break;
    ssize_t n = ::pread(mem_fd_, out.data() + done, out.size() - done, static_cast<off_t>(addr + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace coroner
