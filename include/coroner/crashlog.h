/* coroner crashlog: a fatal-signal handler that writes one line a crash,
 * enough for `coroner scan --log` to classify the crash without its core.
 *
 * On SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT and SIGTRAP, when the signal
 * is about to end the process, it writes, with async-signal-safe calls
 * only, one line starting "coroner-crash: v=1" (the format is in
 * docs/crashlog.md): pid, tid, time, signal, si_code, fault address, the
 * general registers, the stack words around rsp, a frame-pointer backtrace
 * as build-id + offset, and the process's modules. Otherwise the program
 * behaves exactly as without it: its own handlers run as it installed them
 * (mask and flags), ignored signals stay ignored, a fault it recovers from
 * leaves no line, and the default action still ends the process with the
 * kernel's core and the signal's exit status.
 *
 * Preloading the shared library (LD_PRELOAD=libcoroner_crashlog.so)
 * installs it from a constructor, configured by the environment:
 * CORONER_CRASHLOG_FILE (a path, opened for append) or CORONER_CRASHLOG_FD
 * (a descriptor number); stderr otherwise. CORONER_CRASHLOG_DISABLE=1 turns
 * the constructor off. */
#ifndef CORONER_CRASHLOG_H
#define CORONER_CRASHLOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coroner_crashlog_options {
  int fd;           /* where lines go; -1 for `path`, or stderr when both are unset */
  const char* path; /* opened O_WRONLY|O_APPEND|O_CREAT at install; NULL for none */
} coroner_crashlog_options;

/* Installs the handler (NULL: defaults, stderr). Safe to call again: the
 * options change, the handlers chain only once. Returns 0, or -1 with errno
 * when the file cannot be opened or a handler cannot be installed. */
int coroner_crashlog_install(const coroner_crashlog_options* opts);

/* Reads the module table again (after a dlopen the library did not see). */
void coroner_crashlog_refresh_modules(void);

#ifdef __cplusplus
}
#endif

#endif
