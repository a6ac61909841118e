/* Crash zoo: a library whose constructor crashes while dlopen() loads it:
 * SIGSEGV, SEGV_MAPERR, fault address 0x0, with _dl_init and dlopen on the
 * stack. */
#include <dlfcn.h>
#include <stdio.h>

#include "beside_exe.h"

int main(int argc, char **argv) {
  (void)argc;
  char path[4096];
  path_beside_exe(argv[0], "libzoo_bad_init.so", path, sizeof path);
  void *h = dlopen(path, RTLD_NOW);
  return h ? 0 : 2;
}
