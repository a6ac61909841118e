/* Crash zoo: the undefined instruction (x86_64's ud2, aarch64's udf #0):
 * SIGILL, ILL_ILLOPN on x86_64 (ILL_ILLOPC on aarch64). */
__attribute__((noinline)) void unreachable_state(void) {
#if defined(__aarch64__)
  __asm__ volatile("udf #0");
#else
  __asm__ volatile("ud2");
#endif
}

int main(void) {
  unreachable_state();
  return 0;
}
