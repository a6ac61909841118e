/* For the crashers that dlopen a library: its path beside the executable. */
#include <stdio.h>
#include <string.h>

static inline void path_beside_exe(const char *argv0, const char *name, char *out, size_t size) {
  snprintf(out, size, "%s", argv0);
  char *slash = strrchr(out, '/');
  char *file = slash ? slash + 1 : out;
  snprintf(file, size - (size_t)(file - out), "%s", name);
}
