// aarch64's system call numbers: the kernel's generic ones
// (include/uapi/asm-generic/unistd.h); it has no poll, select, pause or
// epoll_wait.
#include "diagnose/syscalls.h"

namespace coroner {
namespace {

constexpr SyscallEntry kTable[] = {
    {22, "epoll_pwait", WaitKind::kPoll},
    {63, "read", WaitKind::kRead},
    {64, "write", WaitKind::kOtherSyscall},
    {65, "readv", WaitKind::kRead},
    {67, "pread64", WaitKind::kRead},
    {72, "pselect6", WaitKind::kPoll},
    {73, "ppoll", WaitKind::kPoll},
    {95, "waitid", WaitKind::kWaitChild},
    {98, "futex", WaitKind::kFutex},
    {101, "nanosleep", WaitKind::kSleep},
    {115, "clock_nanosleep", WaitKind::kSleep},
    {129, "kill", WaitKind::kOtherSyscall, true},
    {130, "tkill", WaitKind::kOtherSyscall, true},
    {131, "tgkill", WaitKind::kOtherSyscall, true},
    {133, "rt_sigsuspend", WaitKind::kPause},
    {138, "rt_sigqueueinfo", WaitKind::kOtherSyscall, true},
    {202, "accept", WaitKind::kAccept},
    {207, "recvfrom", WaitKind::kRead},
    {212, "recvmsg", WaitKind::kRead},
    {240, "rt_tgsigqueueinfo", WaitKind::kOtherSyscall, true},
    {242, "accept4", WaitKind::kAccept},
    {243, "recvmmsg", WaitKind::kRead},
    {260, "wait4", WaitKind::kWaitChild},
    {441, "epoll_pwait2", WaitKind::kPoll},
};

}  // namespace

const std::span<const SyscallEntry> kAarch64Syscalls = kTable;
// x0 to x5. A blocked call's x0 is its first argument again by the time
// the thread stops: the kernel puts orig_x0 back to restart the call.
const Reg kAarch64SyscallArguments[6] = {Reg::x0, Reg::x1, Reg::x2, Reg::x3, Reg::x4, Reg::x5};

}  // namespace coroner
