/* Crash zoo: a NULL dereference at the bottom of a 200-deep recursion:
 * SIGSEGV, SEGV_MAPERR, fault address 0x0, and a backtrace of 200 descend()
 * frames above main. */
volatile int *volatile target;

__attribute__((noinline)) int descend(int depth) {
  if (depth == 0) return *target;
  return descend(depth - 1) + 1;
}

int main(void) { return descend(200); }
