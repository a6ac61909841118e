/* Live targets that make a snapshot's life hard.
 *   busy many N   N threads blocked on one condition variable, then
 *                 "ready"; the main thread sleeps.
 *   busy churn    threads made and joined without pause, a child forked
 *                 now and then (it exits at once), and the main thread
 *                 counting; "ready" once it runs. It prints a line per
 *                 thousand threads made, so a test sees it go on.
 *   busy spin     a thread spins on the global `fence` (rip-relative,
 *                 with a spin-wait hint) until it is 1, another on
 *                 `ring.head` through a pointer (no hint) while it is 41,
 *                 and the main thread computes in registers, reading no
 *                 memory; "ready" once all three run. Nothing ever ends
 *                 the spins. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int waiting;

__attribute__((noinline)) void wait_forever(void) {
  pthread_mutex_lock(&lock);
  waiting++;
  for (;;) pthread_cond_wait(&never, &lock);
}

static void *waiter(void *arg) {
  (void)arg;
  wait_forever();
  return NULL;
}

static void *short_lived(void *arg) { return arg; }

volatile int fence;
struct ring {
  int pad[3];
  volatile int head;
};
struct ring ring = {{0, 0, 0}, 41};
static volatile int spinning;

__attribute__((noinline)) void wait_for_fence(void) {
  while (fence != 1) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
  }
}

__attribute__((noinline)) void wait_for_head(struct ring *r) {
  while (r->head == 41) {
  }
}

static void *fence_spinner(void *arg) {
  (void)arg;
  __atomic_add_fetch(&spinning, 1, __ATOMIC_SEQ_CST);
  wait_for_fence();
  return NULL;
}

static void *head_spinner(void *arg) {
  __atomic_add_fetch(&spinning, 1, __ATOMIC_SEQ_CST);
  wait_for_head(arg);
  return NULL;
}

/* Work in registers only: a loop no word decides. */
__attribute__((noinline)) unsigned long compute(unsigned long x) {
  for (;;) {
    x = x * 6364136223846793005ul + 1442695040888963407ul;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "many") == 0) {
    int n = atoi(argv[2]);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 << 10);
    for (int i = 0; i < n; i++) {
      pthread_t t;
      if (pthread_create(&t, &attr, waiter, NULL) != 0) return 1;
    }
    for (;;) {
      pthread_mutex_lock(&lock);
      int w = waiting;
      pthread_mutex_unlock(&lock);
      if (w == n) break;
      usleep(1000);
    }
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
  }
  if (argc == 2 && strcmp(argv[1], "churn") == 0) {
    printf("ready\n");
    fflush(stdout);
    for (unsigned long made = 1;; made++) {
      pthread_t t[4];
      for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, short_lived, NULL);
      for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
      if (made % 64 == 0) {
        pid_t child = fork();
        if (child == 0) _exit(0);
        waitpid(child, NULL, 0);
      }
      if (made % 250 == 0) {
        printf("made %lu\n", made * 4);
        fflush(stdout);
      }
    }
  }
  if (argc == 2 && strcmp(argv[1], "spin") == 0) {
    pthread_t a, b;
    pthread_create(&a, NULL, fence_spinner, NULL);
    pthread_create(&b, NULL, head_spinner, &ring);
    while (__atomic_load_n(&spinning, __ATOMIC_SEQ_CST) != 2) usleep(1000);
    printf("ready\n");
    fflush(stdout);
    compute((unsigned long)argc);
  }
  return 2;
}
