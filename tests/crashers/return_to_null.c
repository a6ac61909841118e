/* Crash zoo: a function whose saved return address was overwritten with 0
 * (as a stray write or a broken unwinder would): its `ret` jumps to 0.
 * SIGSEGV, SEGV_MAPERR, fault address 0x0; [rsp-8] is 0. */
#include <stdint.h>

__attribute__((noinline)) void clobber_return(void) {
  uintptr_t *frame = __builtin_frame_address(0);
  frame[1] = 0; /* the return address, above the saved rbp */
}

int main(void) {
  clobber_return();
  return 0;
}
