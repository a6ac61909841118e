/* Crash zoo: a crash inside a library loaded with dlopen: the plugin's
 * plugin_run() dereferences NULL: SIGSEGV, SEGV_MAPERR, fault address 0x10. */
#include <dlfcn.h>
#include <stdio.h>

#include "beside_exe.h"

int main(int argc, char **argv) {
  (void)argc;
  char path[4096];
  path_beside_exe(argv[0], "libzoo_plugin.so", path, sizeof path);
  void *h = dlopen(path, RTLD_NOW);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
  return run ? run() : 3;
}
