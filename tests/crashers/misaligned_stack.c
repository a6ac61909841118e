/* Crash zoo: the stack pointer off by 8. An inline-asm thunk pushes one
 * extra word before calling store_vector(), whose aligned SSE store to a
 * 16-byte local then faults: SIGSEGV, SI_KERNEL (general protection). */
#include <xmmintrin.h>

volatile float seed = 1.5f;

__attribute__((noinline)) void store_vector(void) {
  float out[4] __attribute__((aligned(16)));
  __m128 v = _mm_set1_ps(seed);
  _mm_store_ps(out, v);
  __asm__ volatile("" : : "r"(out) : "memory");
}

int main(void) {
  /* As a corrupted rsp would: one word too many on the stack at the call. */
  __asm__ volatile("sub $8, %%rsp\n\tcall store_vector\n\tadd $8, %%rsp" : : : "memory", "rax", "rcx", "rdx",
                   "rsi", "rdi", "r8", "r9", "r10", "r11", "xmm0", "xmm1");
  return 0;
}
