/* The fatal-signal handler of include/coroner/crashlog.h.
 *
 * Its promise is a debugger's: the program behaves exactly as without it,
 * except that a fatal crash also leaves a line. So its surface is as small
 * as a handler's can be (docs/crashlog.md argues the design):
 *
 * - It interposes nothing of libc and keeps no copy of what the kernel
 *   keeps. At install it takes, for each fatal signal, only a disposition
 *   that is still the default; a program that installs its own handler
 *   afterwards takes the signal over, and the library writes a line for it
 *   only when that handler chains to the one it replaced.
 * - It takes no descriptor, key or thread for the process's life: a log
 *   file is opened at the crash, a descriptor is checked at the crash to
 *   still be the one it was (or a stream), and the write never blocks for
 *   long nor raises SIGPIPE.
 * - Everything the handler needs is prepared at install in static storage:
 *   the host and program names and the module table (dl_iterate_phdr takes
 *   the loader's lock and so cannot run in the handler). The handler runs
 *   its work on a static stack of its own, so it puts only a small frame on
 *   the program's stack (or a small alternate stack); formats with its own
 *   number formatting; reads memory with process_vm_readv, or through a
 *   pipe where a seccomp filter may refuse or kill on that call; and ends
 *   with the default action, re-sending the signal with its own siginfo so
 *   the core still names the fault or the sender. */
#define _GNU_SOURCE
#include "coroner/crashlog.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_MODULES 256
#define MAX_SEGMENTS 1024
#define PATH_POOL (64 * 1024)
#define MAX_FRAMES 128
#define STACK_BELOW 128 /* bytes below rsp: the red zone */
#define STACK_ABOVE 64  /* and above it: the return address a ret would pop */
#define LINE_MAX_BYTES (48 * 1024)
#define ALT_STACK_BYTES (64 * 1024)

static const int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
#define NSIG_HANDLED (sizeof kSignals / sizeof kSignals[0])

struct segment {
  uintptr_t start, end, offset;
  int module;
  char perm[4]; /* "r", "rw", "rx", ... */
};
struct module {
  const char* path;
  char build_id[41];
  uintptr_t bias; /* load address minus link-time address */
};
/* Two tables, one published: a refresh fills the other and swaps. */
struct table {
  struct module modules[MAX_MODULES];
  struct segment segments[MAX_SEGMENTS];
  char paths[PATH_POOL];
  int nmodules, nsegments;
  size_t used;
};
static struct table tables[2];
static _Atomic int current_table = -1;
static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;

/* Segments are whole pages of the machine (aarch64 kernels may have 16 or
 * 64 KiB ones); set at install. */
static uintptr_t page_size = 4096;
static char host[65], comm[17], exe_path[4096];
static _Atomic long owner; /* tid writing a line, 0 when none */
static _Atomic int inside; /* threads in the handler; the writer waits for them, no one else */
static char line[LINE_MAX_BYTES];
/* The installing thread's stack as pthread knows it (for the main thread,
 * the extent its rlimit allows, which no mapping shows yet). Other threads'
 * stacks are looked up in /proc/self/maps at the crash: noting each new
 * thread's would cost it pthread_getattr_np, whose malloc gives the thread
 * an arena of its own that the program without us never makes. */
static struct {
  long tid;
  uintptr_t lo, hi;
} install_stack;

/* --- formatting without stdio ------------------------------------------- */
struct out {
  char* p;
  char* end;
};
static void put(struct out* o, const char* s, size_t n) {
  if ((size_t)(o->end - o->p) < n) n = (size_t)(o->end - o->p);
  memcpy(o->p, s, n);
  o->p += n;
}
static void puts_(struct out* o, const char* s) { put(o, s, strlen(s)); }
static void put_hex(struct out* o, uint64_t v) {
  char b[18];
  int n = 0;
  do b[sizeof b - 1 - n++] = "0123456789abcdef"[v & 15];
  while ((v >>= 4) && n < 16);
  put(o, "0x", 2);
  put(o, b + sizeof b - n, (size_t)n);
}
static void put_dec(struct out* o, int64_t v) {
  char b[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do b[sizeof b - 1 - n++] = (char)('0' + u % 10);
  while ((u /= 10) && n < 20);
  if (v < 0) put(o, "-", 1);
  put(o, b + sizeof b - n, (size_t)n);
}
/* Paths and names: printable ASCII but the separators, else %XX. */
static void put_escaped(struct out* o, const char* s) {
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c <= ' ' || c >= 0x7f || c == '%' || c == ';' || c == ',' || c == '=' || c == '@') {
      char e[3] = {'%', "0123456789ABCDEF"[c >> 4], "0123456789ABCDEF"[c & 15]};
      put(o, e, 3);
    } else {
      put(o, (const char*)&c, 1);
    }
  }
}

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

/* Reads `n` bytes at `addr` of this process through a pipe: the kernel
 * copies them in write(2) and says EFAULT, rather than faulting, when any
 * is unmapped. For where process_vm_readv is refused: a seccomp profile
 * that denies it (EPERM; older container runtimes' default) or a system
 * without it (ENOSYS: qemu-user). The pipe lives for the one read, so a
 * program that survives the signal keeps its descriptors as they were. */
static int read_self_by_pipe(uintptr_t addr, void* to, size_t n) {
  int fds[2];
  if (syscall(SYS_pipe2, fds, O_CLOEXEC | O_NONBLOCK) != 0) return 0;
  int ok = 1;
  for (size_t done = 0; ok && done < n;) {
    size_t chunk = n - done < 4096 ? n - done : 4096; /* within a pipe's capacity */
    ok = write(fds[1], (const char*)addr + done, chunk) == (ssize_t)chunk &&
         read(fds[0], (char*)to + done, chunk) == (ssize_t)chunk;
    done += chunk;
  }
  close(fds[0]);
  close(fds[1]);
  return ok;
}

/* Reads `n` bytes at `addr` of this process; 0 when any is unreadable.
 * process_vm_readv is skipped from the start when the process ran under a
 * seccomp filter at install: a filter may kill the process on it
 * (SECCOMP_RET_KILL_PROCESS, as systemd's SystemCallFilter= does), and the
 * real fault and its core would be lost. */
static _Atomic int vm_readv_refused;
static int read_self(uintptr_t addr, void* to, size_t n) {
  if (!atomic_load(&vm_readv_refused)) {
    struct iovec local = {to, n}, remote = {(void*)addr, n};
    long got = syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL);
    if (got == (long)n) return 1;
    if (got >= 0 || (errno != ENOSYS && errno != EPERM)) return 0;
    atomic_store(&vm_readv_refused, 1);
  }
  return read_self_by_pipe(addr, to, n);
}

/* --- the module table (not in the handler) --------------------------------- */
static void hex_build_id(const struct dl_phdr_info* info, char out[41]) {
  out[0] = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char* p = (const unsigned char*)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char* end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr)* nh = (const ElfW(Nhdr)*)p;
      const unsigned char* name = p + sizeof *nh;
      const unsigned char* desc = name + ((nh->n_namesz + 3) & ~3u);
      if (desc + nh->n_descsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        size_t n = nh->n_descsz > 20 ? 20 : nh->n_descsz;
        for (size_t j = 0; j < n; ++j) {
          out[2 * j] = "0123456789abcdef"[desc[j] >> 4];
          out[2 * j + 1] = "0123456789abcdef"[desc[j] & 15];
        }
        out[2 * n] = 0;
        return;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
}

static int add_module(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct table* t = data;
  if (t->nmodules >= MAX_MODULES) return 1;
  const char* path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : (t->nmodules == 0 ? exe_path : NULL);
  if (!path || !*path) return 0; /* the vDSO, or a nameless object */
  size_t len = strlen(path) + 1;
  if (t->used + len > PATH_POOL) return 1;
  struct module* m = &t->modules[t->nmodules];
  memcpy(t->paths + t->used, path, len);
  m->path = t->paths + t->used;
  t->used += len;
  hex_build_id(info, m->build_id);
  m->bias = info->dlpi_addr;
  for (int i = 0; i < info->dlpi_phnum && t->nsegments < MAX_SEGMENTS; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t page = page_size;
    struct segment* s = &t->segments[t->nsegments++];
    s->start = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
    s->end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
    s->offset = ph->p_offset & ~(page - 1);
    s->module = t->nmodules;
    int k = 0;
    s->perm[k++] = 'r';
    if (ph->p_flags & PF_W) s->perm[k++] = 'w';
    if (ph->p_flags & PF_X) s->perm[k++] = 'x';
    s->perm[k] = 0;
  }
  t->nmodules++;
  return 0;
}

void coroner_crashlog_refresh_modules(void) {
  pthread_mutex_lock(&refresh_lock);
  int next = atomic_load(&current_table) == 0 ? 1 : 0;
  struct table* t = &tables[next];
  t->nmodules = t->nsegments = 0;
  t->used = 0;
  dl_iterate_phdr(add_module, t);
  atomic_store(&current_table, next);
  pthread_mutex_unlock(&refresh_lock);
}

static void remember_stack(void) {
  pthread_attr_t a;
  void* addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &a) != 0) return;
  int ok = pthread_attr_getstack(&a, &addr, &size) == 0;
  pthread_attr_destroy(&a);
  if (!ok) return;
  install_stack.lo = (uintptr_t)addr;
  install_stack.hi = (uintptr_t)addr + size;
  install_stack.tid = gettid_();
}

static int parse_hex(const char** p, const char* end, uintptr_t* v) {
  const char* s = *p;
  *v = 0;
  while (s < end) {
    char c = *s;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) break;
    *v = *v << 4 | (uintptr_t)d;
    ++s;
  }
  int ok = s != *p;
  *p = s;
  return ok;
}

/* The mapping of /proc/self/maps holding `sp`, or the one right above it
 * when `sp` is in a guard page (a stack overflow); async-signal-safe (open,
 * read, a static buffer: the caller holds the line lock). */
static char maps_buf[4096];
static int stack_from_maps(uintptr_t sp, uintptr_t* lo, uintptr_t* hi) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t have = 0;
  int found = 0, want_next = 0;
  uintptr_t guard_end = 0;
  for (;;) {
    ssize_t n = read(fd, maps_buf + have, sizeof maps_buf - have);
    if (n <= 0) break;
    have += (size_t)n;
    size_t start = 0;
    for (size_t i = 0; i < have && !found; ++i) {
      if (maps_buf[i] != '\n') continue;
      const char* p = maps_buf + start;
      const char* end = maps_buf + i;
      uintptr_t a, b;
      start = i + 1;
      if (!parse_hex(&p, end, &a) || p >= end || *p++ != '-' || !parse_hex(&p, end, &b) || end - p < 3) continue;
      int guard = p[1] == '-' && p[2] == '-';  /* " ---p" */
      if (want_next) {
        if (a == guard_end && !guard) {
          *lo = a;
          *hi = b;
          found = 1;
        }
        want_next = 0;
        if (!found) break;
      } else if (a <= sp && sp < b) {
        if (!guard) {
          *lo = a;
          *hi = b;
          found = 1;
        } else {
          want_next = 1;
          guard_end = b;
        }
      }
    }
    if (found) break;
    memmove(maps_buf, maps_buf + start, have - start);
    have -= start;
    if (have == sizeof maps_buf) have = 0; /* a line longer than the buffer: drop it */
  }
  close(fd);
  return found;
}

/* --- the handler -------------------------------------------------------- */
static const struct table* modules_now(void) {
  int i = atomic_load(&current_table);
  return i < 0 ? NULL : &tables[i];
}

static const struct segment* find_segment(const struct table* t, uintptr_t pc) {
  if (!t) return NULL;
  for (int i = 0; i < t->nsegments; ++i)
    if (t->segments[i].start <= pc && pc < t->segments[i].end) return &t->segments[i];
  return NULL;
}

/* The table as the crash finds it: the published one plus whatever the
 * loader's list holds that the table does not (a library whose initializer
 * is crashing inside dlopen, one loaded behind the library's back). The
 * list and each object's headers are read with read_self, so a list being
 * changed at that moment costs a module, not a second fault. */
static struct table crash_table;

static int read_string(uintptr_t addr, char* out, size_t cap) {
  size_t n = 0;
  while (n + 1 < cap) {
    char chunk[64];
    if (!read_self(addr + n, chunk, sizeof chunk)) {
      if (!read_self(addr + n, chunk, 1)) return 0;
      chunk[1] = 0;
    }
    for (size_t i = 0; i < sizeof chunk && n + 1 < cap; ++i) {
      out[n++] = chunk[i];
      if (!chunk[i]) return 1;
    }
  }
  out[n] = 0;
  return 1;
}

static void add_loaded_object(struct table* t, uintptr_t base, uintptr_t name_addr) {
  ElfW(Ehdr) eh;
  if (t->nmodules >= MAX_MODULES || !read_self(base, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phnum > 64)
    return;
  ElfW(Phdr) ph[64];
  if (!read_self(base + eh.e_phoff, ph, eh.e_phnum * sizeof ph[0])) return;
  char* path = t->paths + t->used;
  if (t->used + 4096 > PATH_POOL || !read_string(name_addr, path, 4096) || !*path) return;
  struct module* m = &t->modules[t->nmodules];
  m->path = path;
  t->used += strlen(path) + 1;
  m->bias = base;
  m->build_id[0] = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    unsigned char note[512];
    size_t n = ph[i].p_memsz < sizeof note ? ph[i].p_memsz : sizeof note;
    if (ph[i].p_type == PT_NOTE && read_self(base + ph[i].p_vaddr, note, n)) {
      for (size_t at = 0; at + sizeof(ElfW(Nhdr)) <= n && !m->build_id[0];) {
        const ElfW(Nhdr)* nh = (const ElfW(Nhdr)*)(note + at);
        size_t desc = at + sizeof *nh + ((nh->n_namesz + 3) & ~3u);
        if (desc + nh->n_descsz > n) break;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(note + at + sizeof *nh, "GNU", 4) == 0) {
          size_t len = nh->n_descsz > 20 ? 20 : nh->n_descsz;
          for (size_t j = 0; j < len; ++j) {
            m->build_id[2 * j] = "0123456789abcdef"[note[desc + j] >> 4];
            m->build_id[2 * j + 1] = "0123456789abcdef"[note[desc + j] & 15];
          }
          m->build_id[2 * len] = 0;
        }
        at = desc + ((nh->n_descsz + 3) & ~3u);
      }
    }
    if (ph[i].p_type != PT_LOAD || t->nsegments >= MAX_SEGMENTS) continue;
    struct segment* sg = &t->segments[t->nsegments++];
    sg->start = (base + ph[i].p_vaddr) & ~(page_size - 1);
    sg->end = (base + ph[i].p_vaddr + ph[i].p_memsz + page_size - 1) & ~(page_size - 1);
    sg->offset = ph[i].p_offset & ~(page_size - 1);
    sg->module = t->nmodules;
    int k = 0;
    sg->perm[k++] = 'r';
    if (ph[i].p_flags & PF_W) sg->perm[k++] = 'w';
    if (ph[i].p_flags & PF_X) sg->perm[k++] = 'x';
    sg->perm[k] = 0;
  }
  t->nmodules++;
}

static const struct table* modules_at_crash(void) {
  const struct table* src = modules_now();
  if (!src) return NULL;
  memcpy(&crash_table, src, sizeof crash_table);
  for (int i = 0; i < crash_table.nmodules; ++i)
    crash_table.modules[i].path = crash_table.paths + (src->modules[i].path - src->paths);
  uintptr_t lm = (uintptr_t)_r_debug.r_map;
  for (int n = 0; lm && n < 1024; ++n) {
    struct link_map entry;
    if (!read_self(lm, &entry, sizeof entry)) break;
    int known = entry.l_addr == 0;  /* the main program (non-PIE), in the table since install */
    for (int i = 0; i < crash_table.nmodules && !known; ++i) known = crash_table.modules[i].bias == entry.l_addr;
    if (!known) add_loaded_object(&crash_table, entry.l_addr, (uintptr_t)entry.l_name);
    lm = (uintptr_t)entry.l_next;
  }
  return &crash_table;
}

/* A pc as build-id + offset in the file, or a bare address. */
static void put_pc(struct out* o, const struct table* t, uintptr_t pc) {
  const struct segment* s = find_segment(t, pc);
  if (s && t->modules[s->module].build_id[0]) {
    puts_(o, t->modules[s->module].build_id);
    put(o, "+", 1);
    put_hex(o, pc - s->start + s->offset);
  } else {
    put_hex(o, pc);
  }
}

/* The registers the line carries, in its order, taken from the ucontext:
 * each machine's general registers as docs/crashlog.md lists them. */
#if defined(__x86_64__)
#define ARCH_FIELD ""  /* x86_64 lines name no machine: the format's first */
static const char* const kRegNames[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                                        "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15",
                                        "rip", "eflags", "csgsfs", "err", "trapno", "oldmask", "cr2"};
static const int kGregOf[] = {REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI,    REG_RDI, REG_RBP, REG_RSP,
                              REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12,    REG_R13, REG_R14, REG_R15,
                              REG_RIP, REG_EFL, REG_CSGSFS, REG_ERR, REG_TRAPNO, REG_OLDMASK, REG_CR2};
enum { NREGS = 23, PC_AT = 16, SP_AT = 7, FP_AT = 6 };
struct cpu {
  uint64_t r[NREGS];
};
static void capture(const ucontext_t* uc, struct cpu* c) {
  for (int i = 0; i < NREGS; ++i) c->r[i] = (uint64_t)uc->uc_mcontext.gregs[kGregOf[i]];
}
static uintptr_t return_address(uintptr_t ra) { return ra; }
#elif defined(__aarch64__)
#define ARCH_FIELD " arch=aarch64"
static const char* const kRegNames[] = {"x0",  "x1",  "x2",  "x3",  "x4",  "x5",  "x6",  "x7",  "x8",
                                        "x9",  "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17",
                                        "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
                                        "x27", "x28", "x29", "x30", "sp",  "pc",  "pstate"};
enum { NREGS = 34, FP_AT = 29, SP_AT = 31, PC_AT = 32, PSTATE_AT = 33 };
struct cpu {
  uint64_t r[NREGS];
};
static void capture(const ucontext_t* uc, struct cpu* c) {
  for (int i = 0; i < 31; ++i) c->r[i] = uc->uc_mcontext.regs[i];
  c->r[SP_AT] = uc->uc_mcontext.sp;
  c->r[PC_AT] = uc->uc_mcontext.pc;
  c->r[PSTATE_AT] = uc->uc_mcontext.pstate;
}
/* A saved return address without its pointer authentication code
 * (-mbranch-protection): xpaclri, a hint that does nothing on a CPU
 * without PAC, strips x30 in place. */
static uintptr_t return_address(uintptr_t ra) {
  register uintptr_t x30 __asm__("x30") = ra;
  __asm__("hint #7" : "+r"(x30));
  return x30;
}
#else
#error "libcoroner_crashlog knows the ucontext of x86_64 and aarch64"
#endif
_Static_assert(sizeof kRegNames / sizeof kRegNames[0] == NREGS, "a name for each register");

/* The fields a line begins with: who, when, where, and the signal. */
static void put_header(struct out* o, int sig, const siginfo_t* si) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  puts_(o, "coroner-crash: v=1" ARCH_FIELD " pid=");
  put_dec(o, getpid());
  puts_(o, " tid=");
  put_dec(o, gettid_());
  puts_(o, " time=");
  put_dec(o, now.tv_sec);
  put(o, ".", 1);
  char ns[9];
  long v = now.tv_nsec;
  for (int i = 8; i >= 0; --i, v /= 10) ns[i] = (char)('0' + v % 10);
  put(o, ns, 9);
  puts_(o, " host=");
  put_escaped(o, host);
  puts_(o, " comm=");
  put_escaped(o, comm);
  puts_(o, " sig=");
  put_dec(o, sig);
  puts_(o, " code=");
  put_dec(o, si->si_code);
  puts_(o, " addr=");
  put_hex(o, (uintptr_t)si->si_addr);
}

/* regs=NAME:0x...,...: every register, in kRegNames' order. */
static void put_registers(struct out* o, const struct cpu* c) {
  puts_(o, " regs=");
  for (int i = 0; i < NREGS; ++i) {
    if (i) put(o, ",", 1);
    puts_(o, kRegNames[i]);
    put(o, ":", 1);
    put_hex(o, c->r[i]);
  }
}

/* stack=ADDRESS:words around sp, "-" for a word that cannot be read. */
static void put_stack_words(struct out* o, uintptr_t sp) {
  puts_(o, " stack=");
  put_hex(o, sp - STACK_BELOW);
  put(o, ":", 1);
  for (uintptr_t a = sp - STACK_BELOW; a < sp + STACK_ABOVE; a += 8) {
    uint64_t w;
    if (a != sp - STACK_BELOW) put(o, ",", 1);
    if (read_self(a, &w, sizeof w)) put_hex(o, w);
    else put(o, "-", 1);
  }
}

/* The frame-pointer chain: each frame's pc (bt=), and the frame pointers
 * the walk went through (fps=, so a reader can lay the chain out again). */
static void put_frame_chain(struct out* o, const struct table* t, const struct cpu* c) {
  uintptr_t fps[MAX_FRAMES], pcs[MAX_FRAMES];
  int frames = 1, nfps = 0;
  pcs[0] = (uintptr_t)c->r[PC_AT];
  uintptr_t fp = (uintptr_t)c->r[FP_AT];
  while (frames < MAX_FRAMES) {
    uintptr_t frame[2]; /* the caller's frame pointer, the return address: x86_64's and aarch64's frame record */
    if (fp == 0 || fp % 8 || !read_self(fp, frame, sizeof frame) || return_address(frame[1]) == 0) break;
    fps[nfps++] = fp;
    pcs[frames++] = return_address(frame[1]);
    if (frame[0] <= fp) break; /* frames go up the stack */
    fp = frame[0];
  }
  puts_(o, " bt=");
  for (int i = 0; i < frames; ++i) {
    if (i) put(o, ",", 1);
    put_pc(o, t, pcs[i]);
  }
  puts_(o, " fps=");
  for (int i = 0; i < nfps; ++i) {
    if (i) put(o, ",", 1);
    put_hex(o, fps[i]);
  }
}

/* stackmap=LOW-HIGH: the crashing thread's stack mapping, when known. */
static void put_stack_mapping(struct out* o, uintptr_t sp) {
  uintptr_t stack_lo = 0, stack_hi = 0;
  if (install_stack.tid == gettid_()) {
    stack_lo = install_stack.lo;
    stack_hi = install_stack.hi;
  } else {
    stack_from_maps(sp, &stack_lo, &stack_hi);
  }
  if (stack_hi > stack_lo) {
    puts_(o, " stackmap=");
    put_hex(o, stack_lo);
    put(o, "-", 1);
    put_hex(o, stack_hi);
  }
}

/* mods=BUILDID@BIAS@PATH;... and segs=MODULE:START-END:OFFSET:PERM;... */
static void put_modules(struct out* o, const struct table* t) {
  puts_(o, " mods=");
  for (int i = 0; i < t->nmodules; ++i) {
    if (i) put(o, ";", 1);
    puts_(o, t->modules[i].build_id[0] ? t->modules[i].build_id : "-");
    put(o, "@", 1);
    put_hex(o, t->modules[i].bias);
    put(o, "@", 1);
    put_escaped(o, t->modules[i].path);
  }
  puts_(o, " segs=");
  for (int i = 0; i < t->nsegments; ++i) {
    const struct segment* s = &t->segments[i];
    if (i) put(o, ";", 1);
    put_dec(o, s->module);
    put(o, ":", 1);
    put_hex(o, s->start);
    put(o, "-", 1);
    put_hex(o, s->end);
    put(o, ":", 1);
    put_hex(o, s->offset);
    put(o, ":", 1);
    puts_(o, s->perm);
  }
}

static size_t format_line(int sig, const siginfo_t* si, const struct cpu* c) {
  struct out o = {line, line + sizeof line - 1};
  const struct table* t = modules_at_crash();
  uintptr_t sp = (uintptr_t)c->r[SP_AT];
  put_header(&o, sig, si);
  put_registers(&o, c);
  put_stack_words(&o, sp);
  put_frame_chain(&o, t, c);
  put_stack_mapping(&o, sp);
  if (t) put_modules(&o, t);
  /* A line cut at the buffer's end still ends in a newline; the reader
   * rejects it for its missing fields. */
  *o.p++ = '\n';
  return (size_t)(o.p - line);
}

/* --- where the line goes ------------------------------------------------------ */
/* A line goes to a file named at install, opened at the crash (so the
 * process holds no descriptor of ours), or to a descriptor of the
 * program's, checked at the crash: a daemon that closed it and opened its
 * database in its place must not get the line. */
static char dest_path[PATH_MAX];
static int dest_fd = 2;
static dev_t dest_dev;
static ino_t dest_ino;
static int dest_known; /* dest_dev and dest_ino are the descriptor's at install */

/* Lines that could not be written whole (a full pipe, a descriptor no
 * longer the one given): readable in the core (`p coroner_crashlog_lines_dropped`). */
volatile unsigned long coroner_crashlog_lines_dropped;

#define WRITE_BUDGET_MS 100 /* how long a full pipe may hold the line up */

/* The descriptor to write the line to, and whether it was opened for it
 * (then closed after). A descriptor of the program's is taken when it is
 * still the one given at install (device and inode), or a pipe or terminal
 * (a stderr the program redirected), or a file opened for append (a log it
 * moved there); a socket only when it is the install's (another may be a
 * database's connection on a reused number). A pipe or terminal is reopened
 * non-blocking through /proc, a new open file description, so the
 * program's own stays as it is. -1 when none fits. */
static int destination(int* opened, int* is_socket) {
  *opened = *is_socket = 0;
  if (dest_path[0]) {
    *opened = 1;
    return open(dest_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
  }
  struct stat st;
  if (fstat(dest_fd, &st) != 0) return -1;
  int same = dest_known && st.st_dev == dest_dev && st.st_ino == dest_ino;
  int flags = fcntl(dest_fd, F_GETFL);
  if (S_ISSOCK(st.st_mode)) {
    *is_socket = 1;
    return same ? dest_fd : -1;
  }
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    if (flags >= 0 && (flags & O_NONBLOCK)) return dest_fd;
    char proc[32];
    struct out o = {proc, proc + sizeof proc - 1};
    puts_(&o, "/proc/self/fd/");
    put_dec(&o, dest_fd);
    *o.p = 0;
    int fd = open(proc, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd >= 0) *opened = 1;
    return fd; /* no /proc, or not ours to reopen: no line rather than a blocked handler */
  }
  if (S_ISREG(st.st_mode) && (same || (flags >= 0 && (flags & O_APPEND)))) return dest_fd;
  return -1;
}

/* Writes the line whole or counts it dropped: never blocks longer than
 * WRITE_BUDGET_MS, and never raises SIGPIPE (blocked while writing; the
 * write's own SIGPIPE is taken back unless one was pending already). */
static void deliver(const char* p, size_t n) {
  int opened, is_socket;
  int fd = destination(&opened, &is_socket);
  if (fd < 0) {
    coroner_crashlog_lines_dropped++;
    return;
  }
  sigset_t pipe_only, saved, before, after;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &saved);
  sigpending(&before);
  size_t done = 0;
  for (int tries = 0, waited = 0; done < n && tries < 64; ++tries) {
    ssize_t w = is_socket ? send(fd, p + done, n - done, MSG_DONTWAIT | MSG_NOSIGNAL) : write(fd, p + done, n - done);
    if (w > 0) {
      done += (size_t)w;
    } else if (w < 0 && errno == EAGAIN && waited < WRITE_BUDGET_MS) {
      struct pollfd pf = {fd, POLLOUT, 0};
      poll(&pf, 1, 10);
      waited += 10;
    } else if (!(w < 0 && errno == EINTR)) {
      break;
    }
  }
  if (done < n) coroner_crashlog_lines_dropped++;
  sigpending(&after);
  if (sigismember(&after, SIGPIPE) && !sigismember(&before, SIGPIPE)) {
    struct timespec now = {0, 0};
    sigtimedwait(&pipe_only, NULL, &now);
  }
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  if (opened) close(fd);
}

/* --- the handler -------------------------------------------------------------- */
static void handler(int sig, siginfo_t* si, void* ctx);

/* The work of a line runs on this stack, not the program's: the handler
 * then needs only a small frame wherever the kernel put it (a program's
 * small alternate stack, a thread's nearly exhausted one). The line lock
 * makes it one thread's at a time. */
#define WORK_STACK_BYTES (64 * 1024)
static char work_stack[WORK_STACK_BYTES] __attribute__((aligned(16)));

/* coroner_run_on_stack(arg, fn, top): calls fn(arg) with the stack pointer
 * at top, and returns on the caller's stack. The frame record it keeps
 * lets debuggers and the line's own walk go back to the handler. */
void coroner_run_on_stack(void* arg, void (*fn)(void*), void* top) __attribute__((visibility("hidden")));
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl coroner_run_on_stack\n"
        ".hidden coroner_run_on_stack\n"
        ".type coroner_run_on_stack, @function\n"
        "coroner_run_on_stack:\n"
        ".cfi_startproc\n"
        "  pushq %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "  movq %rsp, %rbp\n"
        ".cfi_def_cfa_register %rbp\n"
        "  movq %rdx, %rsp\n"
        "  callq *%rsi\n"
        "  movq %rbp, %rsp\n"
        "  popq %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "  retq\n"
        ".cfi_endproc\n"
        ".size coroner_run_on_stack, .-coroner_run_on_stack\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl coroner_run_on_stack\n"
        ".hidden coroner_run_on_stack\n"
        ".type coroner_run_on_stack, %function\n"
        "coroner_run_on_stack:\n"
        ".cfi_startproc\n"
        "  stp x29, x30, [sp, #-16]!\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset x29, -16\n"
        ".cfi_offset x30, -8\n"
        "  mov x29, sp\n"
        ".cfi_def_cfa x29, 16\n"
        "  mov sp, x2\n"
        "  blr x1\n"
        "  mov sp, x29\n"
        ".cfi_def_cfa sp, 16\n"
        "  ldp x29, x30, [sp], #16\n"
        ".cfi_def_cfa_offset 0\n"
        ".cfi_restore x29\n"
        ".cfi_restore x30\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size coroner_run_on_stack, .-coroner_run_on_stack\n");
#endif

struct crash {
  int sig;
  const siginfo_t* si;
  const ucontext_t* uc;
};

static void write_line(void* arg) {
  const struct crash* k = arg;
  struct cpu c;
  capture(k->uc, &c);
  deliver(line, format_line(k->sig, k->si, &c));
}

/* Whether returning from the handler runs the faulting instruction again,
 * so that the fault recurs under the default action: a synchronous fault
 * the CPU raised. An asynchronous one (an MTE tag check reported later, a
 * machine check on memory nobody is using) and anything sent do not. */
static int refaults(int sig, const siginfo_t* si) {
#ifndef SEGV_MTEAERR
#define SEGV_MTEAERR 8
#endif
#ifndef BUS_MCEERR_AO
#define BUS_MCEERR_AO 5
#endif
  if (si->si_code <= 0 || si->si_code == SI_KERNEL) return 0;
  if (sig == SIGSEGV) return si->si_code != SEGV_MTEAERR;
  if (sig == SIGBUS) return si->si_code != BUS_MCEERR_AO;
  return sig == SIGILL || sig == SIGFPE;
}

/* The default action, with the kernel's own report: a synchronous fault
 * recurs when its instruction runs again; anything else (a signal that was
 * sent, an asynchronous fault) is queued again to this thread with its own
 * siginfo, blocked until the handler returns, so the core names the sender
 * or the fault and holds the context the signal interrupted, and an
 * asynchronous fault ends the process as it would have. (A synchronous
 * fault is not queued again: an emulator such as qemu-user takes a queued
 * fault for one of its own.) The disposition is reset with the system call
 * itself: whatever the program interposes on sigaction has no part in it. */
static void default_action(int sig, const siginfo_t* si, long tid) {
  unsigned long dfl[4] = {0, 0, 0, 0}; /* the kernel's struct sigaction: SIG_DFL, no flags, an empty mask */
  syscall(SYS_rt_sigaction, sig, dfl, NULL, sizeof(unsigned long));
  if (refaults(sig, si)) return;
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, NULL);
  if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, sig, si) != 0) syscall(SYS_tgkill, getpid(), tid, sig);
}

/* Runs for a signal whose disposition the library took at install, or when
 * a handler the program installed later passes the signal on to the one it
 * replaced: either way the signal is about to end the process. */
static void handler(int sig, siginfo_t* si, void* ctx) {
  int saved_errno = errno;
  long tid = gettid_();
  if (atomic_load(&owner) != tid) { /* else a fault inside our own line: straight to the default action */
    atomic_fetch_add(&inside, 1);
    /* Another thread's line first (bounded, about 2 s). */
    long none = 0;
    struct timespec pause = {0, 1000000};
    for (int i = 0; i < 2000 && !atomic_compare_exchange_strong(&owner, &none, tid); ++i) {
      none = 0;
      nanosleep(&pause, NULL);
    }
    int mine = atomic_load(&owner) == tid;
    if (mine) {
      struct crash k = {sig, si, (const ucontext_t*)ctx};
      coroner_run_on_stack(&k, write_line, work_stack + sizeof work_stack);
      atomic_store(&owner, 0);
    }
    atomic_fetch_sub(&inside, 1);
    /* Threads already inside the handler write their lines before this one
     * ends the process; no one else is waited for. */
    for (int i = 0; mine && i < 2000 && atomic_load(&inside) > 0; ++i) nanosleep(&pause, NULL);
  }
  default_action(sig, si, tid);
  errno = saved_errno;
}

/* --- installing ------------------------------------------------------------- */
static _Atomic unsigned taken; /* bit i: the library took kSignals[i] */

/* "Seccomp:" of /proc/self/status: 0 none, 1 strict, 2 filter; -1 unknown. */
static int seccomp_mode(void) {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* at = strstr(buf, "\nSeccomp:");
  if (!at) return -1;
  at += strlen("\nSeccomp:");
  while (*at == ' ' || *at == '\t') ++at;
  return *at >= '0' && *at <= '9' ? *at - '0' : -1;
}

/* Where lines go, from the options; 0, or -1 when the file cannot be made. */
static int set_destination(const coroner_crashlog_options* opts) {
  if (opts && opts->path) {
    /* Created now, so a path that cannot take a line fails the install;
     * reopened at each crash by its full name (the program may chdir). */
    int fd = open(opts->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0) return -1;
    close(fd);
    if (!realpath(opts->path, dest_path)) return -1;
    return 0;
  }
  dest_path[0] = 0;
  dest_fd = opts && opts->fd >= 0 ? opts->fd : 2;
  struct stat st;
  dest_known = fstat(dest_fd, &st) == 0;
  if (dest_known) {
    dest_dev = st.st_dev;
    dest_ino = st.st_ino;
  }
  return 0;
}

int coroner_crashlog_install(const coroner_crashlog_options* opts) {
  if (set_destination(opts) != 0) return -1;
  long page = sysconf(_SC_PAGESIZE);
  if (page >= 4096 && (page & (page - 1)) == 0) page_size = (uintptr_t)page;
  struct utsname u;
  if (uname(&u) == 0) {
    size_t len = strnlen(u.nodename, sizeof host - 1);
    memcpy(host, u.nodename, len);
    host[len] = 0;
  }
  int cfd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (cfd >= 0) {
    ssize_t n = read(cfd, comm, sizeof comm - 1);
    close(cfd);
    if (n > 0 && comm[n - 1] == '\n') comm[n - 1] = 0;
  }
  ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
  exe_path[n > 0 ? n : 0] = 0;
  if (seccomp_mode() != 0) atomic_store(&vm_readv_refused, 1);
  coroner_crashlog_refresh_modules();
  remember_stack();
  /* A stack overflow is logged only from an alternate stack: the
   * installing thread gets one when it has none. A program's own, however
   * small, stays: the handler's work runs on a stack of the library's. */
  stack_t cur;
  if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
    void* mem = mmap(NULL, ALT_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    stack_t ss = {.ss_sp = mem, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
    if (mem == MAP_FAILED) return -1;
    if (sigaltstack(&ss, NULL) != 0) munmap(mem, ALT_STACK_BYTES);
  }
  /* Only a disposition that is still the default is taken: an ignored
   * signal stays ignored, a program's handler stays the program's. While
   * the library's handler runs, the other fatal signals and SIGPIPE wait. */
  struct sigaction ours;
  memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = handler;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  for (size_t i = 0; i < NSIG_HANDLED; ++i) sigaddset(&ours.sa_mask, kSignals[i]);
  sigaddset(&ours.sa_mask, SIGPIPE);
  for (size_t i = 0; i < NSIG_HANDLED; ++i) {
    struct sigaction now;
    if (sigaction(kSignals[i], NULL, &now) != 0) return -1;
    if ((now.sa_flags & SA_SIGINFO) ? now.sa_sigaction == handler : now.sa_handler != SIG_DFL) continue;
    if (sigaction(kSignals[i], &ours, NULL) != 0) return -1;
    atomic_fetch_or(&taken, 1u << i);
  }
  return 0;
}

/* A copy of the library inside a shared object of the program's (the
 * static archive linked into a plugin) is unmapped by dlclose while the
 * kernel would still call its handler: the dispositions it took that are
 * still its own go back to the default first. The shared library itself is
 * linked -z nodelete, and a copy in the main program is never unmapped. */
#ifndef CORONER_CRASHLOG_CONSTRUCTOR
__attribute__((destructor)) static void give_back_on_unload(void) {
  Dl_info info;
  struct link_map* self = NULL;
  if (!atomic_load(&taken) || !dladdr1((void*)handler, &info, (void**)&self, RTLD_DL_LINKMAP) || !self ||
      self == _r_debug.r_map)
    return;
  for (size_t i = 0; i < NSIG_HANDLED; ++i) {
    struct sigaction now;
    if (!(atomic_load(&taken) & (1u << i)) || sigaction(kSignals[i], NULL, &now) != 0) continue;
    if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == handler) signal(kSignals[i], SIG_DFL);
  }
}
#endif

/* LD_PRELOAD mode (the shared library only). Nothing is installed for a
 * program running with privileges its user does not have (set-user-ID,
 * capabilities: AT_SECURE), whose environment is its user's to forge. */
#ifdef CORONER_CRASHLOG_CONSTRUCTOR
__attribute__((constructor)) static void install_from_environment(void) {
  if (getauxval(AT_SECURE)) return;
  const char* off = secure_getenv("CORONER_CRASHLOG_DISABLE");
  if (off && *off == '1') return;
  coroner_crashlog_options o = {-1, NULL};
  const char* file = secure_getenv("CORONER_CRASHLOG_FILE");
  const char* fd = secure_getenv("CORONER_CRASHLOG_FD");
  if (file && *file) o.path = file;
  else if (fd && *fd) o.fd = atoi(fd);
  else o.fd = 2;
  coroner_crashlog_install(&o);
}
#endif
