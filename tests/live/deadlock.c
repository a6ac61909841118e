/* A live target: two threads take two mutexes in opposite orders and
 * deadlock; the main thread beats on, one line per beat on stdout, so a
 * test can tell that the process ran on after a snapshot.
 *   checkpoint_writer: holds ckpt_lock, waits for metrics_lock
 *   metrics_flush:     holds metrics_lock, waits for ckpt_lock
 * It prints "ready" once both threads hold their first mutex. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t ckpt_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold;

__attribute__((noinline)) void write_checkpoint(void) {
  pthread_mutex_lock(&ckpt_lock);
  pthread_barrier_wait(&both_hold);
  pthread_mutex_lock(&metrics_lock);
}

__attribute__((noinline)) void flush_metrics(void) {
  pthread_mutex_lock(&metrics_lock);
  pthread_barrier_wait(&both_hold);
  pthread_mutex_lock(&ckpt_lock);
}

static void *checkpoint_writer(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "checkpoint_writ");
  write_checkpoint();
  return NULL;
}

static void *metrics_flush(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "metrics_flush");
  flush_metrics();
  return NULL;
}

__attribute__((noinline)) void heartbeat(void) {
  struct timespec last, now;
  clock_gettime(CLOCK_MONOTONIC, &last);
  for (unsigned long beat = 0;; beat++) {
    usleep(1000);
    clock_gettime(CLOCK_MONOTONIC, &now);
    /* Each beat: its number and how long since the last one, in µs: a
     * thread held by a snapshot shows as a long gap. */
    long gap = (now.tv_sec - last.tv_sec) * 1000000L + (now.tv_nsec - last.tv_nsec) / 1000;
    printf("beat %lu %ld\n", beat, gap);
    fflush(stdout);
    last = now;
  }
}

int main(void) {
  pthread_t a, b;
  pthread_barrier_init(&both_hold, NULL, 3);
  pthread_create(&a, NULL, checkpoint_writer, NULL);
  pthread_create(&b, NULL, metrics_flush, NULL);
  pthread_barrier_wait(&both_hold);
  printf("ready\n");
  fflush(stdout);
  heartbeat();
}
