/* Crash zoo: a double free. glibc's malloc detects it and aborts with
 * "free(): double free detected in tcache 2": SIGABRT, SI_TKILL. */
#include <stdlib.h>
#include <string.h>

char *volatile keep;

__attribute__((noinline)) void release(char *p) { free(p); }

int main(void) {
  char *p = malloc(64);
  strcpy(p, "payload");
  keep = p;
  release(keep);
  release(keep);
  return 0;
}
