/* A program linked with libcoroner_crashlog.a, crashing one of several ways
 * (argv[1]) with the log going to argv[2]:
 *   prior     a handler the program installed first stays the program's
 *             (it writes "prior handler ran" to the log, resets the
 *             action and returns; the fault ends the process)
 *   chained   a handler the program installs after the library passes
 *             the fault on to the action it replaced, as Go's, .NET's and
 *             crash reporters' do ("chained handler ran", then the line)
 *   threads   two threads fault at the same moment: whole lines, one per
 *             thread that entered the handler before the first line ended
 *   nomalloc  malloc, free, calloc and realloc abort the process once the
 *             fault is near, so a handler that allocates is caught
 *   overflow  a thread created after install, with an alternate stack of
 *             its own (as Rust's and Go's runtimes give every thread),
 *             overflows its stack
 *   overflow_bare  the same thread without one: no line can be written
 *   deep      a NULL dereference 64 frames deep, in a child; the line goes
 *             through a pipe to the parent, which copies it to the log and puts
 *             on stderr the time from just before the fault to the line's
 *             end arriving ("fault_to_line_ns N")
 *   install   prints how long coroner_crashlog_install takes, in ns */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coroner/crashlog.h"

static int log_fd = -1;
static volatile int fault_near;
static struct timespec* before_fault; /* shared with the relay process */

/* The deep mode's reader, the parent of the crashing process (the crash
 * ends that one at once): the line from the pipe to the log, timed. */
static void relay(int from) {
  char buf[65536];
  ssize_t n;
  int timed = 0;
  while ((n = read(from, buf, sizeof buf)) > 0) {
    if (!timed && memchr(buf, '\n', (size_t)n)) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      long long ns = (now.tv_sec - before_fault->tv_sec) * 1000000000LL + (now.tv_nsec - before_fault->tv_nsec);
      char msg[64];
      int len = snprintf(msg, sizeof msg, "fault_to_line_ns %lld\n", ns);
      if (write(2, msg, (size_t)len) < 0) _exit(3);
      timed = 1;
    }
    if (write(log_fd, buf, (size_t)n) != n) _exit(3);
  }
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

static struct sigaction replaced;
static void chained(int sig, siginfo_t* si, void* ctx) {
  static const char msg[] = "chained handler ran\n";
  if (write(log_fd, msg, sizeof msg - 1) < 0) _exit(3);
  if (replaced.sa_flags & SA_SIGINFO) replaced.sa_sigaction(sig, si, ctx);
  else if (replaced.sa_handler == SIG_DFL) signal(sig, SIG_DFL);
}

__attribute__((noinline)) static int deref(volatile int* p) { return *p; }

__attribute__((noinline)) static int deep(int n, volatile int* p) {
  if (n == 0) {
    clock_gettime(CLOCK_MONOTONIC, before_fault);
    return deref(p);
  }
  return deep(n - 1, p) + 1;
}

/* Both threads spin until both are running, then fault at once. */
static _Atomic int arrived;
static void* crash_together(void* arg) {
  (void)arg;
  atomic_fetch_add(&arrived, 1);
  while (atomic_load(&arrived) < 2) {
  }
  return (void*)(long)deref(NULL);
}

__attribute__((noinline)) static int recurse(int n) {
  volatile char pad[256];
  pad[0] = (char)n;
  return recurse(n + 1) + pad[0];
}
static void* overflow(void* arg) {
  if (arg) {
    stack_t ss = {.ss_sp = malloc(64 * 1024), .ss_size = 64 * 1024, .ss_flags = 0};
    if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0) _exit(3);
  }
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
    before_fault = mmap(NULL, sizeof *before_fault, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (before_fault == MAP_FAILED || pipe(pipe_fds) != 0) return 2;
    if (fork() != 0) {
      close(pipe_fds[1]);
      relay(pipe_fds[0]);
      wait(NULL);
      return 0;
    }
    close(pipe_fds[0]);
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
  if (strcmp(mode, "chained") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = chained;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &replaced);
    return deref(NULL);
  }
  if (strcmp(mode, "deep") == 0) return deep(62, NULL);
  if (strcmp(mode, "nomalloc") == 0) {
    fault_near = 1;
    return deref(NULL);
  }
  if (strcmp(mode, "threads") == 0) {
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, crash_together, NULL);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    return 1;
  }
  if (strcmp(mode, "overflow") == 0 || strcmp(mode, "overflow_bare") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, overflow, strcmp(mode, "overflow") == 0 ? (void*)1 : NULL);
    pthread_join(t, NULL);
    return 1;
  }
  return 2;
}
