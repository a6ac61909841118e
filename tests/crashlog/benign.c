/* Programs that use signals the ordinary ways, run by crashlog_test with
 * and without libcoroner_crashlog preloaded: what they print, their exit
 * status and their resource use must be the same, and only the fatal ones
 * may leave a line. Mode in argv[1]:
 *   resethand   an SA_RESETHAND handler that returns: the fault happens
 *               again and the default action ends the process (139)
 *   masks       handlers with SA_NODEFER and sa_mask print what is blocked
 *               while they run, then leave by siglongjmp
 *   ignored     SIGBUS, SIGTRAP and SIGSEGV ignored, then sent: it goes on
 *   blocked     SIGSEGV and SIGBUS blocked, then sent: pending, it goes on
 *   probe       a handler that recovers from probing faults (siglongjmp),
 *               then a real fault at 0x20 with the default action
 *   probe_abort the same probes, then abort() deep in a recursion
 *   sender      a child process sends SIGSEGV to this one, which waits
 *   altstack    the program's own alternate stack catches its stack overflow
 *   bigframe    a handler without SA_ONSTACK that needs 256 KiB of stack
 *   exits       a handler that reports and calls _exit(5)
 *   forkexec    a child execs a shell, another child crashes
 *   threads     20,000 short-lived threads; the growth of the process's
 *               address space goes to stderr as "vm_growth_kib N"
 *   readback    what sigaction and signal read back is what was set */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static sigjmp_buf recover;
static volatile sig_atomic_t calls;

static void say(const char* s) {
  if (write(1, s, strlen(s)) < 0) _exit(120);
}

static void counting(int sig) {
  (void)sig;
  char m[32];
  snprintf(m, sizeof m, "handler %d\n", (int)++calls);
  say(m);
}

static void report_mask(int sig, siginfo_t* si, void* uc) {
  (void)si;
  (void)uc;
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  char m[96];
  snprintf(m, sizeof m, "in handler: segv %d usr1 %d usr2 %d\n", sigismember(&now, sig), sigismember(&now, SIGUSR1),
           sigismember(&now, SIGUSR2));
  say(m);
  siglongjmp(recover, 1);
}

static void leave(int sig) {
  (void)sig;
  siglongjmp(recover, 1);
}

static int readable(volatile int* p) {
  if (sigsetjmp(recover, 1)) return 0;
  (void)*p;
  return 1;
}

__attribute__((noinline)) static int deep_abort(int n) {
  volatile char pad[1024];
  memset((char*)pad, n, sizeof pad);
  if (n == 0) abort();
  return deep_abort(n - 1) + pad[0];
}

__attribute__((noinline)) static int overflow(int n) {
  volatile char pad[512];
  pad[0] = (char)n;
  return overflow(n + 1) + pad[0];
}

static void on_altstack(int sig) {
  (void)sig;
  stack_t ss;
  sigaltstack(NULL, &ss);
  say((ss.ss_flags & SS_ONSTACK) ? "overflow caught on the alternate stack\n" : "overflow caught elsewhere\n");
  _exit(3);
}

static void needs_stack(int sig) {
  (void)sig;
  volatile char big[256 * 1024];
  memset((char*)big, 1, sizeof big);
  siglongjmp(recover, big[sizeof big - 1]);
}

static void report_and_exit(int sig) {
  char m[32];
  snprintf(m, sizeof m, "fatal %d, exiting\n", sig);
  say(m);
  _exit(5);
}

static void* nothing(void* arg) { return arg; }

static long vm_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char l[256];
  long kib = -1;
  while (f && fgets(l, sizeof l, f))
    if (sscanf(l, "VmSize: %ld", &kib) == 1) break;
  if (f) fclose(f);
  return kib;
}

static int mode_is(const char* have, const char* want) { return strcmp(have, want) == 0; }

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* mode = argv[1];
  setvbuf(stdout, NULL, _IONBF, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);

  if (mode_is(mode, "resethand")) {
    sa.sa_handler = counting;
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
    return *(volatile int*)0;
  }
  if (mode_is(mode, "masks")) {
    sa.sa_sigaction = report_mask;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaddset(&sa.sa_mask, SIGUSR1);
    sigaction(SIGSEGV, &sa, NULL);
    say(readable((volatile int*)0) ? "readable\n" : "unreadable\n");
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    say(readable((volatile int*)0) ? "readable\n" : "unreadable\n");
    return 0;
  }
  if (mode_is(mode, "ignored")) {
    signal(SIGBUS, SIG_IGN);
    kill(getpid(), SIGBUS);
    signal(SIGTRAP, SIG_IGN);
    raise(SIGTRAP);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGSEGV, &sa, NULL);
    kill(getpid(), SIGSEGV);
    say("still running\n");
    return 0;
  }
  if (mode_is(mode, "blocked")) {
    sigset_t b, pending;
    sigemptyset(&b);
    sigaddset(&b, SIGSEGV);
    sigaddset(&b, SIGBUS);
    sigprocmask(SIG_BLOCK, &b, NULL);
    kill(getpid(), SIGSEGV);
    raise(SIGBUS);
    sigpending(&pending);
    printf("pending: segv %d bus %d\n", sigismember(&pending, SIGSEGV), sigismember(&pending, SIGBUS));
    return 0;
  }
  if (mode_is(mode, "probe") || mode_is(mode, "probe_abort")) {
    sa.sa_handler = leave;
    sigaction(SIGSEGV, &sa, NULL);
    int here = 1;
    for (int i = 0; i < 3; ++i) printf("probe 0x1000: %s\n", readable((volatile int*)0x1000) ? "readable" : "unreadable");
    printf("probe stack: %s\n", readable(&here) ? "readable" : "unreadable");
    signal(SIGSEGV, SIG_DFL);
    if (mode_is(mode, "probe_abort")) return deep_abort(40);
    *(volatile int*)0x20 = 1;
    return 0;
  }
  if (mode_is(mode, "sender")) {
    int go[2];
    if (pipe(go) != 0) return 2;
    pid_t parent = getpid();
    if (fork() == 0) {
      char c;
      if (read(go[0], &c, 1) != 1) _exit(2);
      kill(parent, SIGSEGV);
      _exit(0);
    }
    say("waiting for a signal\n");
    if (write(go[1], "x", 1) != 1) return 2;
    for (;;) pause();
  }
  if (mode_is(mode, "altstack")) {
    stack_t ss = {.ss_sp = malloc(256 * 1024), .ss_size = 256 * 1024, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    sa.sa_handler = on_altstack;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGSEGV, &sa, NULL);
    return overflow(0);
  }
  if (mode_is(mode, "bigframe")) {
    sa.sa_handler = needs_stack;
    sigaction(SIGSEGV, &sa, NULL);
    if (sigsetjmp(recover, 1) == 0) (void)*(volatile int*)0;
    say("recovered with a big handler frame\n");
    return 0;
  }
  if (mode_is(mode, "exits")) {
    signal(SIGSEGV, report_and_exit);
    return *(volatile int*)0;
  }
  if (mode_is(mode, "forkexec")) {
    int status;
    pid_t c = fork();
    if (c == 0) {
      execl("/bin/sh", "sh", "-c", "exit 7", (char*)NULL);
      _exit(9);
    }
    waitpid(c, &status, 0);
    printf("exec child exited %d\n", WEXITSTATUS(status));
    c = fork();
    if (c == 0) {
      signal(SIGSEGV, SIG_DFL);
      _exit(*(volatile int*)0);
    }
    waitpid(c, &status, 0);
    printf("crashing child: signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 0;
  }
  if (mode_is(mode, "threads")) {
    long before = vm_kib();
    for (int i = 0; i < 20000; ++i) {
      pthread_t t;
      if (pthread_create(&t, NULL, nothing, NULL) != 0) {
        printf("pthread_create failed at %d\n", i);
        return 1;
      }
      pthread_join(t, NULL);
    }
    fprintf(stderr, "vm_growth_kib %ld\n", vm_kib() - before);
    say("20000 threads joined\n");
    return 0;
  }
  if (mode_is(mode, "readback")) {
    struct sigaction set, got;
    memset(&set, 0, sizeof set);
    set.sa_sigaction = report_mask;
    set.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
    sigemptyset(&set.sa_mask);
    sigaddset(&set.sa_mask, SIGUSR1);
    sigaction(SIGBUS, &set, NULL);
    sigaction(SIGBUS, NULL, &got);
    printf("same handler %d, flags %#x, usr1 in mask %d\n", got.sa_sigaction == report_mask,
           (unsigned)(got.sa_flags & (SA_SIGINFO | SA_RESTART | SA_NODEFER | SA_ONSTACK | SA_RESETHAND)),
           sigismember(&got.sa_mask, SIGUSR1));
    void (*before)(int) = signal(SIGFPE, counting);
    void (*after)(int) = signal(SIGFPE, SIG_DFL);
    printf("signal: first %s, then ours back %d\n", before == SIG_DFL ? "SIG_DFL" : "other", after == counting);
    return 0;
  }
  return 2;
}
