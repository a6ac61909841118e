/* Crash zoo: a failed assert: glibc prints the message and calls abort():
 * SIGABRT sent by the process to itself (SI_TKILL). */
#include <assert.h>

volatile int balance = -5;

__attribute__((noinline)) void check_balance(int b) { assert(b >= 0 && "balance must not go negative"); }

int main(void) {
  check_balance(balance);
  return 0;
}
