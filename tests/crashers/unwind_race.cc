// Crash zoo: the GNU libunwind _Ux86_64_setcontext race from the
// epidemiology story, reproduced.
//
// _Unwind_RaiseException binds to GNU libunwind (the binary is linked with
// -lunwind before libstdc++). One thread throws and catches in a tight loop
// and arms its own POSIX timer (CLOCK_MONOTONIC, SIGEV_THREAD_ID at its own
// tid) to deliver SIGUSR2 every 20 us. libunwind's setcontext moves rsp to
// the catch frame before it loads the target rip from the ucontext, which
// now lies below rsp: a signal landing between those two instructions builds
// its frame over the ucontext, the target rip becomes 0, and the final `ret`
// jumps to 0 (return-to-null in exception unwinding).
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

static volatile unsigned long signals_seen;
static volatile unsigned long caught;

// The kernel's own signal frame (its XSAVE area) is what lands on the
// ucontext: the handler itself needs no stack.
static void on_timer(int) { signals_seen = signals_seen + 1; }

__attribute__((noinline)) void apply_backpressure(int depth) {
  if (depth == 0) throw std::runtime_error("backpressure");
  apply_backpressure(depth - 1);
}

__attribute__((noinline)) void ingest() {
  for (;;) {
    try {
      apply_backpressure(0);
    } catch (const std::exception&) {
      caught = caught + 1;
    }
  }
}

int main(int argc, char** argv) {
  // The timer period in ns: 100 us maximizes exceptions x signals per second
  // on the machines this was tuned on (20 us starves the thread there).
  long period = argc > 1 ? std::atol(argv[1]) : 100000;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_timer;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &sa, nullptr);

  struct sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGUSR2;
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) return 2;
  struct itimerspec its;
  std::memset(&its, 0, sizeof its);
  its.it_interval.tv_nsec = period;
  its.it_value.tv_nsec = period;
  timer_settime(timer, 0, &its, nullptr);
  ingest();
}
