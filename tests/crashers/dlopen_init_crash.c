/* Crash zoo: a library whose constructor crashes while dlopen() loads it:
 * SIGSEGV, SEGV_MAPERR, fault address 0x0, with _dl_init and dlopen on the
 * stack. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  (void)argc;
  char path[4096];
  snprintf(path, sizeof path, "%s", argv[0]);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "%s",
           "libzoo_bad_init.so");
  void *h = dlopen(path, RTLD_NOW);
  return h ? 0 : 2;
}
