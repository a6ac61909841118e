/* Crash zoo: a NULL dereference in a process with a 1 GiB heap mapping, of
 * which one page in every 256 was written: the core is over 1 GiB (sparse on
 * disk), and a backtrace must still read only a few stack pages of it.
 * SIGSEGV, SEGV_MAPERR, fault address 0x0. */
#include <stddef.h>
#include <sys/mman.h>

#define HEAP (1ul << 30)

int *volatile missing;

__attribute__((noinline)) int consume(void) { return *missing; }

int main(void) {
  char *heap = mmap(NULL, HEAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (heap == MAP_FAILED) return 2;
  for (size_t off = 0; off < HEAP; off += 256 * 4096) heap[off] = 1;
  return consume();
}
