// x86_64's system call numbers (arch/x86/entry/syscalls/syscall_64.tbl).
#include "diagnose/syscalls.h"

namespace coroner {
namespace {

constexpr SyscallEntry kTable[] = {
    {0, "read", WaitKind::kRead},
    {1, "write", WaitKind::kOtherSyscall},
    {7, "poll", WaitKind::kPoll},
    {17, "pread64", WaitKind::kRead},
    {19, "readv", WaitKind::kRead},
    {23, "select", WaitKind::kPoll},
    {34, "pause", WaitKind::kPause},
    {35, "nanosleep", WaitKind::kSleep},
    {43, "accept", WaitKind::kAccept},
    {45, "recvfrom", WaitKind::kRead},
    {47, "recvmsg", WaitKind::kRead},
    {61, "wait4", WaitKind::kWaitChild},
    {62, "kill", WaitKind::kOtherSyscall, true},
    {129, "rt_sigqueueinfo", WaitKind::kOtherSyscall, true},
    {130, "rt_sigsuspend", WaitKind::kPause},
    {200, "tkill", WaitKind::kOtherSyscall, true},
    {202, "futex", WaitKind::kFutex},
    {230, "clock_nanosleep", WaitKind::kSleep},
    {232, "epoll_wait", WaitKind::kPoll},
    {234, "tgkill", WaitKind::kOtherSyscall, true},
    {247, "waitid", WaitKind::kWaitChild},
    {270, "pselect6", WaitKind::kPoll},
    {271, "ppoll", WaitKind::kPoll},
    {281, "epoll_pwait", WaitKind::kPoll},
    {288, "accept4", WaitKind::kAccept},
    {297, "rt_tgsigqueueinfo", WaitKind::kOtherSyscall, true},
    {299, "recvmmsg", WaitKind::kRead},
    {441, "epoll_pwait2", WaitKind::kPoll},
};

}  // namespace

const std::span<const SyscallEntry> kX86_64Syscalls = kTable;
// The kernel's calling convention: rdi, rsi, rdx, r10, r8, r9.
const Reg kX86_64SyscallArguments[6] = {Reg::rdi, Reg::rsi, Reg::rdx, Reg::r10, Reg::r8, Reg::r9};

}  // namespace coroner
