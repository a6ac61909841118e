/* Crash zoo: a fault inside a signal handler. SIGUSR1's handler dereferences
 * NULL: SIGSEGV, SEGV_MAPERR, fault address 0x0, with the SIGUSR1 frame on
 * the stack. */
#include <signal.h>
#include <stddef.h>

int *volatile stats_slot;

__attribute__((noinline)) void on_usr1(int sig) { *stats_slot = sig; }

int main(void) {
  signal(SIGUSR1, on_usr1);
  raise(SIGUSR1);
  return 0;
}
