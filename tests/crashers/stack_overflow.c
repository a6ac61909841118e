/* Crash zoo: unbounded recursion runs into the stack's guard page: SIGSEGV,
 * SEGV_MAPERR (SEGV_ACCERR on some kernels) just below the stack mapping. */
#include <string.h>

volatile int sink;

__attribute__((noinline)) int recurse(int n) {
  char frame[512];
  memset(frame, n, sizeof frame);
  sink = frame[n % 512];
  return recurse(n + 1) + frame[7];
}

int main(void) { return recurse(0); }
