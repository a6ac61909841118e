/* Crash zoo: a crash inside a library loaded with dlopen: the plugin's
 * plugin_run() dereferences NULL: SIGSEGV, SEGV_MAPERR, fault address 0x10. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  (void)argc;
  /* The plugin sits beside the executable. */
  char path[4096];
  snprintf(path, sizeof path, "%s", argv[0]);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "%s",
           "libzoo_plugin.so");
  void *h = dlopen(path, RTLD_NOW);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
  return run ? run() : 3;
}
