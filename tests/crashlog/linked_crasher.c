/* A program linked with libcoroner_crashlog.a, crashing one of several ways
 * (argv[1]) with the log going to argv[2]:
 *   prior     a handler the program installed first must still run (it
 *             writes "prior handler ran" to the log, then the default
 *             action ends the process)
 *   threads   two threads fault at the same moment: two whole lines
 *   nomalloc  malloc, free, calloc and realloc abort the process once the
 *             fault is near, so a handler that allocates is caught
 *   overflow  a thread created after install overflows its stack
 *   deep      a NULL dereference 64 frames deep; the line goes through a
 *             pipe to a thread that copies it to the log and puts on
 *             stderr the time from just before the fault to the line's
 *             end arriving ("fault_to_line_ns N"; the handler waits 100 ms
 *             before the default action, time enough for the copy)
 *   install   prints how long coroner_crashlog_install takes, in ns */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coroner/crashlog.h"

static int log_fd = -1;
static volatile int fault_near;
static struct timespec before_fault;

/* The deep mode's reader: the line from the pipe to the log, timed. */
static void* relay(void* arg) {
  int from = (int)(long)arg;
  char buf[65536];
  ssize_t n;
  int timed = 0;
  while ((n = read(from, buf, sizeof buf)) > 0) {
    if (!timed && memchr(buf, '\n', (size_t)n)) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      long long ns = (now.tv_sec - before_fault.tv_sec) * 1000000000LL + (now.tv_nsec - before_fault.tv_nsec);
      char msg[64];
      int len = snprintf(msg, sizeof msg, "fault_to_line_ns %lld\n", ns);
      if (write(2, msg, (size_t)len) < 0) _exit(3);
      timed = 1;
    }
    if (write(log_fd, buf, (size_t)n) != n) _exit(3);
  }
  return NULL;
}

extern void* __libc_malloc(size_t);
extern void __libc_free(void*);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
void* malloc(size_t n) {
  if (fault_near) abort();
  return __libc_malloc(n);
}
void free(void* p) {
  if (fault_near) abort();
  __libc_free(p);
}
void* calloc(size_t a, size_t b) {
  if (fault_near) abort();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  if (fault_near) abort();
  return __libc_realloc(p, n);
}

static void prior(int sig) {
  static const char msg[] = "prior handler ran\n";
  if (write(log_fd, msg, sizeof msg - 1) < 0) _exit(3);
  signal(sig, SIG_DFL);
}

__attribute__((noinline)) static int deref(volatile int* p) { return *p; }

__attribute__((noinline)) static int deep(int n, volatile int* p) {
  if (n == 0) {
    clock_gettime(CLOCK_MONOTONIC, &before_fault);
    return deref(p);
  }
  return deep(n - 1, p) + 1;
}

static pthread_barrier_t barrier;
static void* crash_together(void* arg) {
  (void)arg;
  pthread_barrier_wait(&barrier);
  return (void*)(long)deref(NULL);
}

__attribute__((noinline)) static int recurse(int n) {
  volatile char pad[256];
  pad[0] = (char)n;
  return recurse(n + 1) + pad[0];
}
static void* overflow(void* arg) {
  (void)arg;
  return (void*)(long)recurse(0);
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const char* mode = argv[1];
  log_fd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (log_fd < 0) return 2;
  if (strcmp(mode, "prior") == 0) signal(SIGSEGV, prior);
  coroner_crashlog_options o = {log_fd, NULL};
  if (strcmp(mode, "deep") == 0) {
    int pipe_fds[2];
    pthread_t reader;
    if (pipe(pipe_fds) != 0 || pthread_create(&reader, NULL, relay, (void*)(long)pipe_fds[0]) != 0) return 2;
    o.fd = pipe_fds[1];
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  if (coroner_crashlog_install(&o) != 0) return 2;
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (strcmp(mode, "install") == 0) {
    printf("install_ns %lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    return 0;
  }
  if (strcmp(mode, "prior") == 0) return deref(NULL);
  if (strcmp(mode, "deep") == 0) return deep(62, NULL);
  if (strcmp(mode, "nomalloc") == 0) {
    fault_near = 1;
    return deref(NULL);
  }
  if (strcmp(mode, "threads") == 0) {
    pthread_t t[2];
    pthread_barrier_init(&barrier, NULL, 2);
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, crash_together, NULL);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    return 1;
  }
  if (strcmp(mode, "overflow") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, overflow, NULL);
    pthread_join(t, NULL);
    return 1;
  }
  return 2;
}
