/* Crash zoo: integer division by zero: SIGFPE, FPE_INTDIV. */
volatile int divisor = 0;

__attribute__((noinline)) int average(int total, int count) { return total / count; }

int main(void) { return average(100, divisor); }
