/* Crash zoo: a wild pointer. The pointer is non-canonical (bit 63 set with
 * bit 47 clear), which x86_64 refuses with a general-protection fault: SIGSEGV
 * with SI_KERNEL and no fault address. Given an argument, the pointer is
 * that number instead (0: the same load through NULL), as one bug's pointer
 * is sometimes garbage and sometimes NULL. */
#include <stdint.h>
#include <stdlib.h>

volatile uintptr_t poisoned = 0xdead00000000beefULL;

__attribute__((noinline)) long load(const long *p) { return *p; }

int main(int argc, char **argv) {
  uintptr_t p = argc > 1 ? (uintptr_t)strtoull(argv[1], NULL, 0) : poisoned;
  return (int)load((const long *)p);
}
