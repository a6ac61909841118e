/* coroner crashlog: a fatal-signal handler that writes one line a crash,
 * enough for `coroner scan --log` to classify the crash without its core.
 *
 * On SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT and SIGTRAP, when the signal
 * is about to end the process, it writes, with async-signal-safe calls
 * only, one line starting "coroner-crash: v=1" (the format is in
 * docs/crashlog.md): pid, tid, time, signal, si_code, fault address, the
 * general registers, the stack words around rsp, a frame-pointer backtrace
 * as build-id + offset, and the process's modules. Otherwise the program
 * behaves exactly as without it: the library interposes nothing, takes only
 * dispositions that are still the default (a handler the program installs
 * later takes the signal over; the library logs it only when that handler
 * chains to the one it replaced), keeps no descriptor, key or thread, and
 * the default action still ends the process with the kernel's core and the
 * signal's exit status.
 *
 * Preloading the shared library (LD_PRELOAD=libcoroner_crashlog.so)
 * installs it from a constructor, configured by the environment:
 * CORONER_CRASHLOG_FILE (a path, opened for append) or CORONER_CRASHLOG_FD
 * (a descriptor number); stderr otherwise. CORONER_CRASHLOG_DISABLE=1 turns
 * the constructor off. Nothing is installed from the environment of a
 * set-user-ID or otherwise privileged program (AT_SECURE). */
#ifndef CORONER_CRASHLOG_H
#define CORONER_CRASHLOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coroner_crashlog_options {
  int fd;           /* where lines go; -1 for `path`, or stderr when both are unset.
                       At the crash it must still be the same file, a stream
                       (pipe, socket, terminal) or a file open for append. */
  const char* path; /* created at install, opened O_WRONLY|O_APPEND at each crash; NULL for none */
} coroner_crashlog_options;

/* Installs the handler (NULL: defaults, stderr) for each fatal signal whose
 * disposition is still the default. Safe to call again: the options change,
 * and signals back at the default are taken again. Returns 0, or -1 with
 * errno when the file cannot be created or a handler cannot be installed. */
int coroner_crashlog_install(const coroner_crashlog_options* opts);

/* Reads the module table again (a crash reads the loader's list too, so
 * this only spares that read the libraries dlopen'd since install). */
void coroner_crashlog_refresh_modules(void);

/* Lines that could not be written whole, for a debugger reading the core. */
extern volatile unsigned long coroner_crashlog_lines_dropped;

#ifdef __cplusplus
}
#endif

#endif
