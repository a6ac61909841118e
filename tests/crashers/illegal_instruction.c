/* Crash zoo: ud2, the undefined instruction: SIGILL, ILL_ILLOPN. */
__attribute__((noinline)) void unreachable_state(void) { __asm__ volatile("ud2"); }

int main(void) {
  unreachable_state();
  return 0;
}
