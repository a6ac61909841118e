/* Crash zoo: a store to an unmapped, non-NULL, page-aligned address well
 * above the first pages: SIGSEGV, SEGV_MAPERR, fault address 0x10000000. */
#include <stdint.h>

volatile uintptr_t target = 0x10000000;

__attribute__((noinline)) void store(long *p, long v) { *p = v; }

int main(void) {
  store((long *)target, 42);
  return 0;
}
