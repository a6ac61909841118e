/* Crash zoo: the fault is inside functions inlined into their callers:
 * checksum() is inlined into summarize(), which is inlined into main().
 * SIGSEGV, SEGV_MAPERR, fault address 0x0; with debug info the backtrace shows
 * checksum and summarize as inlined frames. */
#include <stddef.h>

const unsigned char *volatile input;

static inline __attribute__((always_inline)) unsigned checksum(const unsigned char *p, size_t n) {
  unsigned sum = 0;
  for (size_t i = 0; i < n; i++) sum = sum * 31 + p[i];
  return sum;
}

static inline __attribute__((always_inline)) unsigned summarize(const unsigned char *p) {
  return checksum(p, 16) ^ 0x5a5a;
}

int main(void) { return (int)summarize(input); }
