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
//
// Where the saved rip lands in the kernel's signal frame decides what it is
// overwritten with: 128 bytes of stack between the catch and the throw put it
// under the XSAVE area's AVX state (zeros) on AVX-512 machines, where without
// them it falls in a gap of the XSAVE layout that is never written.
// Usage: unwind_race [timer period ns = 100000] [pad bytes = 128] [throws = 0].
// With a number of throws, it exits 0 after catching that many (a test that
// only needs the bindings); 0 means until it crashes.
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <alloca.h>

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

// Stack between the catch and the throw moves libunwind's ucontext (and its
// saved target rip) further below the catching frame's rsp; `pad` bytes put
// the rip slot where the kernel's signal frame writes the XSAVE area's AVX
// state (zeros when AVX is unused) instead of a gap it skips.
__attribute__((noinline)) void buffered_apply(int pad) {
  volatile char* buffer = static_cast<volatile char*>(alloca(pad));
  buffer[0] = 1;
  apply_backpressure(0);
  buffer[pad - 1] = buffer[0];
}

static int g_pad;
static unsigned long g_throws;

__attribute__((noinline)) void ingest() {
  while (g_throws == 0 || caught < g_throws) {
    try {
      if (g_pad > 0) buffered_apply(g_pad);
      else apply_backpressure(0);
    } catch (const std::exception&) {
      caught = caught + 1;
    }
  }
}

int main(int argc, char** argv) {
  // The timer period: 100 us maximizes exceptions x signals per second on the
  // machines this was tuned on (20 us starves the thread there).
  long period = argc > 1 ? std::atol(argv[1]) : 100000;
  g_pad = argc > 2 ? std::atoi(argv[2]) : 128;
  g_throws = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 0;
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
