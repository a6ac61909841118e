/* Crash zoo: a store through a non-const pointer to a string constant, which
 * sits in .rodata, mapped read-only: SIGSEGV, SEGV_ACCERR, the fault address
 * is the constant's. */
#include <stdio.h>

const char greeting[] = "hello";

__attribute__((noipa)) void capitalize(char *s) { s[0] = (char)(s[0] - 'a' + 'A'); }

int main(void) {
  char *volatile s = (char *)greeting;
  capitalize(s);
  puts(s);
  return 0;
}
