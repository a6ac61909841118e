#include "core/signals.h"

#include <array>
#include <csignal>

namespace coroner {
namespace {

constexpr std::array<const char*, 32> kSignalNames = {
    nullptr,   "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",    "SIGTRAP", "SIGABRT", "SIGBUS",
    "SIGFPE",  "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",   "SIGPIPE", "SIGALRM", "SIGTERM",
    "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP",   "SIGTTIN", "SIGTTOU", "SIGURG",
    "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS"};

// Codes shared by every signal (sent by a process, a timer, the kernel...).
std::optional<std::string> GenericCodeName(int code) {
  switch (code) {
    case 0: return "SI_USER";
    case 0x80: return "SI_KERNEL";
    case -1: return "SI_QUEUE";
    case -2: return "SI_TIMER";
    case -3: return "SI_MESGQ";
    case -4: return "SI_ASYNCIO";
    case -5: return "SI_SIGIO";
    case -6: return "SI_TKILL";
    case -7: return "SI_DETHREAD";
    case -60: return "SI_ASYNCNL";
    default: return std::nullopt;
  }
}

template <size_t N>
std::optional<std::string> FromTable(const std::array<const char*, N>& names, int code) {
  if (code >= 1 && static_cast<size_t>(code) <= N && names[code - 1]) return names[code - 1];
  return std::nullopt;
}

constexpr std::array<const char*, 10> kSegv = {"SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR",
                                               "SEGV_PKUERR", "SEGV_ACCADI", "SEGV_ADIDERR",
                                               "SEGV_ADIPERR", "SEGV_MTEAERR", "SEGV_MTESERR",
                                               "SEGV_CPERR"};
constexpr std::array<const char*, 5> kBus = {"BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR",
                                             "BUS_MCEERR_AR", "BUS_MCEERR_AO"};
constexpr std::array<const char*, 9> kIll = {"ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR",
                                             "ILL_ILLTRP", "ILL_PRVOPC", "ILL_PRVREG",
                                             "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"};
constexpr std::array<const char*, 15> kFpe = {
    "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND",
    "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", nullptr,      nullptr,
    nullptr,      nullptr,      nullptr,      "FPE_FLTUNK", "FPE_CONDTRAP"};
constexpr std::array<const char*, 6> kTrap = {"TRAP_BRKPT",  "TRAP_TRACE", "TRAP_BRANCH",
                                              "TRAP_HWBKPT", "TRAP_UNK",   "TRAP_PERF"};
constexpr std::array<const char*, 6> kChld = {"CLD_EXITED", "CLD_KILLED",  "CLD_DUMPED",
                                              "CLD_TRAPPED", "CLD_STOPPED", "CLD_CONTINUED"};
constexpr std::array<const char*, 6> kPoll = {"POLL_IN",  "POLL_OUT", "POLL_MSG",
                                              "POLL_ERR", "POLL_PRI", "POLL_HUP"};
constexpr std::array<const char*, 2> kSys = {"SYS_SECCOMP", "SYS_USER_DISPATCH"};

}  // namespace

std::string SignalName(int signo) {
  if (signo > 0 && static_cast<size_t>(signo) < kSignalNames.size()) return kSignalNames[signo];
  if (signo == 34) return "SIGRTMIN";
  if (signo > 34 && signo <= 64) return "SIGRTMIN+" + std::to_string(signo - 34);
  return "SIG" + std::to_string(signo);
}

std::optional<std::string> SignalCodeName(int signo, int code) {
  if (code <= 0 || code == 0x80) return GenericCodeName(code);
  switch (signo) {
    case SIGSEGV: return FromTable(kSegv, code);
    case SIGBUS: return FromTable(kBus, code);
    case SIGILL: return FromTable(kIll, code);
    case SIGFPE: return FromTable(kFpe, code);
    case SIGTRAP: return FromTable(kTrap, code);
    case SIGCHLD: return FromTable(kChld, code);
    case SIGIO: return FromTable(kPoll, code);
    case SIGSYS: return FromTable(kSys, code);
    default: return std::nullopt;
  }
}

bool SignalHasFaultAddress(int signo, int code) {
  if (code <= 0 || code >= 0x80) return false;
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE ||
         signo == SIGTRAP;
}

bool SignalHasSender(int code) { return code == 0 || code == -1 || code == -6; }

}  // namespace coroner
