/* Crash zoo: a pointer with one bit flipped, as a bad CPU or DIMM would
 * leave it: bit 40 of a pointer to a live heap object is set, and the load
 * through it faults at an unmapped address (SIGSEGV, SEGV_MAPERR) that one
 * bit away is the object itself. */
#include <stdint.h>
#include <stdlib.h>

struct record {
  long id, value;
};

__attribute__((noinline)) long read_value(struct record *r) { return r->value; }

int main(void) {
  struct record *r = malloc(sizeof *r);
  r->id = 1;
  r->value = 42;
  struct record *volatile flipped = (struct record *)((uintptr_t)r ^ ((uintptr_t)1 << 40));
  return (int)read_value(flipped);
}
