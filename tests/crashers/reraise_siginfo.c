/* Crash zoo: like reraise.c, with an SA_SIGINFO handler (folly's and
 * Abseil's style), so the kernel also saved the siginfo in its signal frame.
 * The fault: a store to the unmapped address 0x10000000 in store_record
 * (SIGSEGV, SEGV_MAPERR); the core's signal is the re-raise (SI_TKILL). */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

volatile uintptr_t record_slot = 0x10000000;

static void on_fatal(int sig, siginfo_t *info, void *uc) {
  (void)info;
  (void)uc;
  static const char msg[] = "fatal signal, re-raising\n";
  write(2, msg, sizeof msg - 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((noinline)) void store_record(long *slot, long value) { *slot = value; }

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  store_record((long *)record_slot, 7);
  return 0;
}
