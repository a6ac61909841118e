/* Crash zoo: a fatal-signal handler that logs and re-raises from inside
 * itself, as LLVM's, folly's and glog's handlers do. The core's registers sit
 * in the handler's raise(); the kernel's signal frame on the stack still holds
 * the real fault (a NULL dereference in parse_header). The core's signal is
 * SIGSEGV with SI_TKILL. */
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

const char *volatile header;

static void fatal_handler(int sig) {
  static const char msg[] = "fatal signal, re-raising\n";
  write(2, msg, sizeof msg - 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((noinline)) size_t parse_header(const char *h) { return strlen(h) + (size_t)h[4]; }

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fatal_handler;
  sa.sa_flags = SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  return (int)parse_header(header);
}
