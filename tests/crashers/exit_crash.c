/* Crash zoo: a static destructor dereferences a registry that was already
 * torn down: the crash happens during exit (_dl_fini / __run_exit_handlers).
 * SIGSEGV, SEGV_MAPERR, fault address 0x8. */
#include <stdlib.h>

struct registry {
  long count;
  long *slots;
};

struct registry *volatile registry;

__attribute__((destructor, noinline)) void flush_registry(void) { registry->slots[0] = 7; }

int main(void) {
  registry = NULL; /* torn down too early */
  exit(0);
}
