/* The stand-in GPU runtime of gpu_runtime_abort, built as
 * libhsa-runtime64.so.1: the caller waits for a "kernel" while the
 * runtime's event thread finds the GPU's fault, prints ROCr's message and
 * aborts, as ROCr's VM fault handler does. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;

__attribute__((noinline)) static void vm_fault_handler(unsigned node, unsigned long address) {
  fprintf(stderr,
          "Memory access fault by GPU node-%u (Agent handle: 0x5581c0ffee00) on address %#lx. Reason: Page not "
          "present or supervisor privilege.\n",
          node, address);
  abort();
}

static void *event_thread(void *arg) {
  (void)arg;
  vm_fault_handler(2, 0x7f3c00001000ul);
  return NULL;
}

int zoo_gpu_run_kernel(void) {
  pthread_t t;
  pthread_mutex_lock(&lock);
  if (pthread_create(&t, NULL, event_thread, NULL) != 0) return 4;
  /* The kernel never completes: the event thread aborts first. */
  pthread_cond_wait(&done, &lock);
  pthread_mutex_unlock(&lock);
  return 0;
}
