/* Crash zoo: a GPU runtime that aborts the process after a GPU fault.
 * ROCr (libhsa-runtime64) does this from its event thread when the GPU
 * reports a memory access fault: it prints "Memory access fault by GPU
 * node-N ..." and calls abort(), while the program waits for its kernel.
 * A real ROCr needs a GPU, so the zoo loads zoo_gpu_runtime.c, a stand-in
 * built under ROCr's file name: the core, made by the kernel, has a
 * SIGABRT (SI_TKILL) raised from that module's event thread, and two
 * threads. */
#include <dlfcn.h>
#include <stdio.h>

#include "beside_exe.h"

int main(int argc, char **argv) {
  (void)argc;
  char path[4096];
  path_beside_exe(argv[0], "libhsa-runtime64.so.1", path, sizeof path);
  void *h = dlopen(path, RTLD_NOW);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  int (*run)(void) = (int (*)(void))dlsym(h, "zoo_gpu_run_kernel");
  return run ? run() : 3;
}
