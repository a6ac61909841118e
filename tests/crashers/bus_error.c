/* Crash zoo: reading a page of a file mapping beyond the end of the file:
 * SIGBUS, BUS_ADRERR, fault address = the mapping's start. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) int first_byte(const volatile char *p) { return p[0]; }

int main(void) {
  char path[] = "/tmp/coroner-bus-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 2;
  unlink(path);
  /* The file is empty, so every page of the mapping is past its end. */
  char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return 3;
  return first_byte(p);
}
