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
 *               put back as it was, then a real fault at 0x20
 *   probe_abort the same probes, then abort() deep in a recursion
 *   sender      a child process sends SIGSEGV to this one, which waits
 *   altstack    the program's own alternate stack catches its stack overflow
 *   bigframe    a handler without SA_ONSTACK that needs 256 KiB of stack
 *   exits       a handler that reports and calls _exit(5)
 *   forkexec    a child execs a shell, another child crashes
 *   threads     20,000 short-lived threads; the growth of the process's
 *               address space goes to stderr as "vm_growth_kib N"
 *   readback    what sigaction and signal read back is what was set (the
 *               program sets SIGBUS, which the library took, over it)
 * and the ways an interposing or descriptor-keeping library changed
 * programs (docs/crashlog.md's table, by row):
 *   sigpipe_stderr  1: stderr is a pipe nobody reads; then a fault (139,
 *                   not SIGPIPE's 141)
 *   full_pipe       2: a child's stderr pipe is full when it faults; the
 *                   parent reads only after waitpid (no deadlock)
 *   closefrom_db    3: a child closes every descriptor from 3, opens its
 *                   database (descriptor 3) and faults: the database holds
 *                   only what the child wrote
 *   reused_socket   3: a child's stderr number is a socket of its own when
 *                   it faults: the peer receives nothing
 *   siginterrupt    5: siginterrupt(SIGALRM, 1) then signal(): a timer
 *                   interrupts a read that would block for ever
 *   flagprobe       6: sigaction(2)'s probe for flag support, SA_RESTORER,
 *                   and SIGKILL/SIGSTOP never in a read-back mask
 *   race            7: two threads set SIGBUS's action at once, 100,000
 *                   times; the action read back is the one that runs
 *   vfork           8: a vfork child resets SIGSEGV before exec; the
 *                   parent's handler still recovers its probe
 *   runpath         9: dlopen of a plugin found through the program's
 *                   DT_RUNPATH ($ORIGIN/plugins)
 *   keys            10: how many pthread keys the program can create
 *   plugin_dlclose  11: a plugin that carries the library is dlclose'd;
 *                   SIGSEGV's disposition afterwards, then a fault
 *   abort_writer    13: a thread appends numbered records while another
 *                   writes a mark and aborts ("records" in the directory)
 *   async_mte       14: an asynchronous MTE tag-check fault (SEGV_MTEAERR,
 *                   queued to itself, as the kernel reports one late)
 *   async_mce       14: an action-optional machine check (BUS_MCEERR_AO)
 *   small_altstack  15: the program's alternate stack is the kernel's
 *                   minimum plus 2 KiB, a guard page below; then a fault
 *   secure          12: dlopen of argv[2] (the library, by its path), with
 *                   AT_SECURE printed: run set-user-ID by the test */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
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

static void nothing_to_do(int sig) { (void)sig; }

/* Row 7: both threads set SIGBUS's action; after each round the action
 * read back must be the one that runs. */
static pthread_barrier_t race_start, race_done;
static volatile sig_atomic_t race_hits;
static void race_handler(int sig) {
  (void)sig;
  ++race_hits;
}
static void* race_setter(void* arg) {
  int ignore = (int)(long)arg;
  for (;;) {
    pthread_barrier_wait(&race_start);
    if (ignore) signal(SIGBUS, SIG_IGN);
    else signal(SIGBUS, race_handler);
    pthread_barrier_wait(&race_done);
  }
  return NULL;
}

/* Row 13: numbered records, one about every 100 microseconds. */
static int records_fd;
static void* append_records(void* arg) {
  (void)arg;
  for (long i = 0;; ++i) {
    char r[32];
    int n = snprintf(r, sizeof r, "record %ld\n", i);
    if (write(records_fd, r, (size_t)n) != n) _exit(120);
    struct timespec t = {0, 100000};
    nanosleep(&t, NULL);
  }
  return NULL;
}

static void queue_to_self(int sig, int code) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = code;
  si.si_addr = NULL;
  syscall(SYS_rt_tgsigqueueinfo, getpid(), (pid_t)syscall(SYS_gettid), sig, &si);
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
    /* The probes' handler is set and then put back as it was, the
     * ordinary way (a handler taken from the library goes back to it). */
    struct sigaction saved;
    sigaction(SIGSEGV, &sa, &saved);
    int here = 1;
    for (int i = 0; i < 3; ++i) printf("probe 0x1000: %s\n", readable((volatile int*)0x1000) ? "readable" : "unreadable");
    printf("probe stack: %s\n", readable(&here) ? "readable" : "unreadable");
    sigaction(SIGSEGV, &saved, NULL);
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
    void (*before)(int) = signal(SIGUSR2, counting);
    void (*after)(int) = signal(SIGUSR2, SIG_DFL);
    printf("signal: first %s, then ours back %d\n", before == SIG_DFL ? "SIG_DFL" : "other", after == counting);
    return 0;
  }
  if (mode_is(mode, "sigpipe_stderr")) {
    int p[2];
    if (pipe(p) != 0) return 2;
    close(p[0]);
    dup2(p[1], 2);
    say("stderr has no reader\n");
    return *(volatile int*)0;
  }
  if (mode_is(mode, "full_pipe")) {
    int p[2];
    if (pipe(p) != 0) return 2;
    int room = fcntl(p[1], F_GETPIPE_SZ);
    pid_t c = fork();
    if (c == 0) {
      close(p[0]);
      dup2(p[1], 2);
      static char fill[1 << 20];
      memset(fill, 'x', sizeof fill);
      if (room <= 100 || room > (int)sizeof fill || write(2, fill, (size_t)room - 100) != room - 100) _exit(9);
      _exit(*(volatile int*)0);
    }
    close(p[1]);
    int status;
    waitpid(c, &status, 0);
    long got = 0;
    char buf[4096];
    for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) got += n;
    printf("child: signal %d; its stderr held %ld bytes, %d short of full\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0,
           got, room - (int)got);
    return 0;
  }
  if (mode_is(mode, "closefrom_db")) {
    pid_t c = fork();
    if (c == 0) {
      syscall(SYS_close_range, 3U, ~0U, 0U);
      int db = open("db", O_RDWR | O_CREAT | O_TRUNC, 0644);
      if (db != 3 || write(db, "records\n", 8) != 8) _exit(9);
      _exit(*(volatile int*)0);
    }
    int status;
    waitpid(c, &status, 0);
    char buf[4096];
    int db = open("db", O_RDONLY);
    ssize_t n = db < 0 ? -1 : read(db, buf, sizeof buf);
    printf("child: signal %d; its database holds %zd bytes\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0, n);
    return 0;
  }
  if (mode_is(mode, "reused_socket")) {
    /* The line's descriptor (stderr) closed, and its number taken by a
     * socket of the program's (a database's connection): nothing of the
     * library's may reach the peer. */
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 2;
    pid_t c = fork();
    if (c == 0) {
      dup2(sv[0], 2);
      _exit(*(volatile int*)0);
    }
    close(sv[0]);
    int status;
    waitpid(c, &status, 0);
    char buf[4096];
    ssize_t n = recv(sv[1], buf, sizeof buf, MSG_DONTWAIT);
    printf("child: signal %d; its peer received %zd bytes\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0, n < 0 ? 0 : n);
    return 0;
  }
  if (mode_is(mode, "siginterrupt")) {
    int p[2];
    if (pipe(p) != 0) return 2;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    siginterrupt(SIGALRM, 1); /* the legacy call is the point: what signal() does after it */
#pragma GCC diagnostic pop
    signal(SIGALRM, nothing_to_do);
    struct itimerval once = {{0, 0}, {0, 50000}};
    setitimer(ITIMER_REAL, &once, NULL);
    char c;
    ssize_t n = read(p[0], &c, 1);
    printf("read returned %zd, %s\n", n, n < 0 && errno == EINTR ? "interrupted" : "not interrupted");
    return 0;
  }
  if (mode_is(mode, "flagprobe")) {
#ifndef SA_UNSUPPORTED
#define SA_UNSUPPORTED 0x00000400
#endif
#ifndef SA_EXPOSE_TAGBITS
#define SA_EXPOSE_TAGBITS 0x00000800
#endif
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif
    struct sigaction set, got;
    memset(&set, 0, sizeof set);
    set.sa_sigaction = report_mask;
    set.sa_flags = SA_SIGINFO | SA_UNSUPPORTED | SA_EXPOSE_TAGBITS;
    sigfillset(&set.sa_mask);
    sigaction(SIGSEGV, &set, NULL);
    sigaction(SIGSEGV, NULL, &got);
    printf("unsupported flag read back %d, tag bits %d, restorer %d, kill in mask %d, stop in mask %d\n",
           !!(got.sa_flags & SA_UNSUPPORTED), !!(got.sa_flags & SA_EXPOSE_TAGBITS), !!(got.sa_flags & SA_RESTORER),
           sigismember(&got.sa_mask, SIGKILL), sigismember(&got.sa_mask, SIGSTOP));
    return 0;
  }
  if (mode_is(mode, "race")) {
    pthread_t a, b;
    pthread_barrier_init(&race_start, NULL, 3);
    pthread_barrier_init(&race_done, NULL, 3);
    pthread_create(&a, NULL, race_setter, (void*)0L);
    pthread_create(&b, NULL, race_setter, (void*)1L);
    long disagree = 0;
    for (int round = 0; round < 100000; ++round) {
      pthread_barrier_wait(&race_start);
      pthread_barrier_wait(&race_done);
      struct sigaction now;
      sigaction(SIGBUS, NULL, &now);
      sig_atomic_t before = race_hits;
      raise(SIGBUS);
      int ran = race_hits != before;
      disagree += ran != (now.sa_handler == race_handler);
    }
    printf("rounds where the action read back is not the one that ran: %ld\n", disagree);
    return 0;
  }
  if (mode_is(mode, "vfork")) {
    sa.sa_handler = leave;
    sigaction(SIGSEGV, &sa, NULL);
    pid_t c = vfork();
    if (c == 0) {
      signal(SIGSEGV, SIG_DFL);
      execl("/bin/true", "true", (char*)NULL);
      _exit(9);
    }
    int status;
    waitpid(c, &status, 0);
    printf("probe after the vfork child: %s\n", readable((volatile int*)0x1000) ? "readable" : "unreadable");
    return 0;
  }
  if (mode_is(mode, "runpath")) {
    void* h = dlopen("libbenign_plugin.so", RTLD_NOW);
    if (!h) {
      printf("plugin not found\n");
      return 0;
    }
    int (*answer)(void) = (int (*)(void))dlsym(h, "benign_plugin_answer");
    printf("plugin found through RUNPATH: %d\n", answer ? answer() : -1);
    return 0;
  }
  if (mode_is(mode, "keys")) {
    int n = 0;
    pthread_key_t k;
    while (n < 100000 && pthread_key_create(&k, NULL) == 0) ++n;
    printf("keys the program can create: %d\n", n);
    return 0;
  }
  if (mode_is(mode, "plugin_dlclose")) {
    void* h = dlopen("libbenign_crashlog_plugin.so", RTLD_NOW);
    int (*install)(const char*) = h ? (int (*)(const char*))dlsym(h, "plugin_install") : NULL;
    if (!install) {
      printf("no plugin\n");
      return 2;
    }
    /* The plugin carries the library; with it, it installs it. */
    const char* log = getenv("BENIGN_PLUGIN_LOG");
    struct sigaction now;
    if (log) {
      if (install(log) != 0) return 3;
      sigaction(SIGSEGV, NULL, &now);
      fprintf(stderr, "the plugin's library took SIGSEGV: %d\n", now.sa_handler != SIG_DFL);
    }
    dlclose(h);
    sigaction(SIGSEGV, NULL, &now);
    printf("after dlclose SIGSEGV is %s\n", now.sa_handler == SIG_DFL ? "SIG_DFL" : "a handler");
    return *(volatile int*)0;
  }
  if (mode_is(mode, "abort_writer")) {
    records_fd = open("records", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    pthread_t t;
    pthread_create(&t, NULL, append_records, NULL);
    struct timespec settle = {0, 50000000};
    nanosleep(&settle, NULL);
    if (write(records_fd, "mark\n", 5) != 5) return 2;
    abort();
  }
  if (mode_is(mode, "async_mte")) {
    say("queued\n");
    queue_to_self(SIGSEGV, 8 /* SEGV_MTEAERR */);
    say("went on after an asynchronous tag-check fault\n");
    return 0;
  }
  if (mode_is(mode, "async_mce")) {
    say("queued\n");
    queue_to_self(SIGBUS, 5 /* BUS_MCEERR_AO */);
    say("went on after a machine check\n");
    return 0;
  }
  if (mode_is(mode, "secure")) {
    printf("secure %lu\n", getauxval(AT_SECURE));
    printf("loaded %d\n", argc > 2 && dlopen(argv[2], RTLD_NOW) != NULL);
    return 0;
  }
  if (mode_is(mode, "small_altstack")) {
    long page = sysconf(_SC_PAGESIZE), need = sysconf(_SC_MINSIGSTKSZ);
    if (need < MINSIGSTKSZ) need = MINSIGSTKSZ;
    size_t size = (size_t)need + 2048;
    char* base = mmap(NULL, (size_t)page + size + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED || mprotect(base, (size_t)page, PROT_NONE) != 0) return 2;
    stack_t ss = {.ss_sp = base + page, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) return 2;
    say("a small alternate stack\n");
    return *(volatile int*)0;
  }
  return 2;
}
