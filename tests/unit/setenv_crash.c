// A program that changes its environment before it crashes, as launchers'
// wrappers and some runtimes do: setenv over an existing name (glibc
// replaces the entry in place), fifty new names (glibc moves environ to the
// heap), a secret among them, then a NULL dereference. The core's
// environment is the one the process had at the crash.
//
//   setenv_crash JOB_ID
//   setenv_crash --unset NAME...   unsetenv each NAME (glibc moves the later
//                                  entries down in place, leaving a NULL
//                                  more at the array's end), then crash
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--unset") == 0) {
    for (int i = 2; i < argc; ++i) unsetenv(argv[i]);
    *(volatile int*)0 = 0;
    return 0;
  }
  setenv("SLURM_JOB_ID", argc > 1 ? argv[1] : "1", 1);
  for (int i = 0; i < 50; ++i) {
    char name[32];
    snprintf(name, sizeof name, "APP_SETTING_%d", i);
    setenv(name, "on", 1);
  }
  setenv("APP_API_TOKEN", "tok-7f3e9d2a61b04c58", 1);
  setenv("SLURM_PROCID", "3", 1);
  *(volatile int*)0 = 0;
  return 0;
}
