/* Crash zoo: 32 worker threads wait on a condition variable while worker 17
 * dereferences NULL: SIGSEGV, SEGV_MAPERR, fault address 0x0; 33 threads. */
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

#define WORKERS 32

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int started;
int *volatile shared_counter;

__attribute__((noinline)) void worker_wait(void) {
  pthread_mutex_lock(&lock);
  started++;
  pthread_cond_broadcast(&wake);
  for (;;) pthread_cond_wait(&wake, &lock);
}

__attribute__((noinline)) void bump_counter(void) { (*shared_counter)++; }

static void *worker(void *arg) {
  long id = (long)arg;
  if (id == 17) {
    pthread_mutex_lock(&lock);
    while (started < WORKERS - 1) pthread_cond_wait(&wake, &lock);
    pthread_mutex_unlock(&lock);
    bump_counter();
  }
  worker_wait();
  return NULL;
}

int main(void) {
  pthread_t t[WORKERS];
  for (long i = 0; i < WORKERS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (;;) pause();
}
