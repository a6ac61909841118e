/* Crash zoo: a wild pointer. The pointer is non-canonical (bit 63 set with
 * bit 47 clear), which x86_64 refuses with a general-protection fault: SIGSEGV
 * with SI_KERNEL and no fault address. */
#include <stdint.h>

volatile uintptr_t poisoned = 0xdead00000000beefULL;

__attribute__((noinline)) long load(const long *p) { return *p; }

int main(void) { return (int)load((const long *)poisoned); }
