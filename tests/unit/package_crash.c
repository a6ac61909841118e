/* A program linked with a package metadata note (the linker's
 * --package-metadata, tests/CMakeLists.txt), as a distribution's build
 * links it: it dereferences NULL, and its core's executable names the
 * package. */
#include <stdio.h>

__attribute__((noinline)) int read_config(const int *config) { return *config; }

int main(void) {
  volatile const int *none = NULL;
  printf("%d\n", read_config((const int *)none));
  return 0;
}
