// Names of Linux signals and of their si_code values, as <signal.h> spells them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace coroner {

// "SIGSEGV"; "SIGRTMIN+3" for real-time signals; "SIG<n>" when unknown.
std::string SignalName(int signo);

// "SEGV_MAPERR", "SI_TKILL", ...; nullopt when the code means nothing for
// this signal.
std::optional<std::string> SignalCodeName(int signo, int code);

// True when the kernel filled si_addr for this signal and code: a fault it
// raised itself (code > 0) for SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGTRAP.
// For SI_KERNEL (e.g. a general-protection fault on a non-canonical address)
// the kernel gives no address.
bool SignalHasFaultAddress(int signo, int code);

// True when si_pid / si_uid are meaningful (sent by kill, tkill, sigqueue).
bool SignalHasSender(int code);

}  // namespace coroner
