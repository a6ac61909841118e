/* The fatal-signal handler of include/coroner/crashlog.h.
 *
 * Everything the handler needs is prepared at install time in static
 * storage: the output descriptor, the host and program names, and the
 * module table (gathered with dl_iterate_phdr, which takes the loader's
 * lock and so cannot run in the handler). The handler itself formats into a
 * static buffer with its own number formatting, reads memory only with
 * process_vm_readv (an unmapped address is an error, not a second fault),
 * and writes the line with one write(2). A spin lock on the thread id keeps
 * two crashing threads from interleaving; a thread that faults again inside
 * the handler skips the logging and goes straight to the default action.
 *
 * The library's promise is a debugger's: the program behaves exactly as
 * without it, except that a fatal crash also leaves a line. So the kernel
 * always holds the disposition the program asked for, as far as it can
 * tell: an ignored signal is ignored by the kernel, and the program's own
 * handler runs with its own mask, SA_NODEFER, SA_ONSTACK and SA_RESTART
 * (the library's handler sits in front only to notice when a signal turns
 * out fatal; SA_RESETHAND is done by hand). A line is written only when the
 * default action is about to end the process, never for a fault the
 * program's handler recovered from; when that default action follows the
 * program's handler re-raising a fault, the line is the fault's (see
 * `struct pending`). A signal sent again keeps its original siginfo, so the
 * core still names the sender. */
#define _GNU_SOURCE
#include "coroner/crashlog.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static int out_fd = 2;
/* Segments are whole pages of the machine (aarch64 kernels may have 16 or
 * 64 KiB ones); set at install. */
static uintptr_t page_size = 4096;
static char host[65], comm[17], exe_path[4096];
static struct sigaction previous[NSIG_HANDLED];
static _Atomic int installed;
static _Atomic long owner; /* tid writing a line, 0 when none */
static _Atomic int inside; /* threads logging; the first to finish waits for the others */
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

/* Reads `n` bytes at `addr` of this process; 0 when any is unreadable. */
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

static size_t format_line(int sig, const siginfo_t* si, const struct cpu* c) {
  struct out o = {line, line + sizeof line - 1};
  const struct table* t = modules_at_crash();
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  puts_(&o, "coroner-crash: v=1" ARCH_FIELD " pid=");
  put_dec(&o, getpid());
  puts_(&o, " tid=");
  put_dec(&o, gettid_());
  puts_(&o, " time=");
  put_dec(&o, now.tv_sec);
  put(&o, ".", 1);
  char ns[9];
  long v = now.tv_nsec;
  for (int i = 8; i >= 0; --i, v /= 10) ns[i] = (char)('0' + v % 10);
  put(&o, ns, 9);
  puts_(&o, " host=");
  put_escaped(&o, host);
  puts_(&o, " comm=");
  put_escaped(&o, comm);
  puts_(&o, " sig=");
  put_dec(&o, sig);
  puts_(&o, " code=");
  put_dec(&o, si->si_code);
  puts_(&o, " addr=");
  put_hex(&o, (uintptr_t)si->si_addr);
  puts_(&o, " regs=");
  for (int i = 0; i < NREGS; ++i) {
    if (i) put(&o, ",", 1);
    puts_(&o, kRegNames[i]);
    put(&o, ":", 1);
    put_hex(&o, c->r[i]);
  }
  uintptr_t sp = (uintptr_t)c->r[SP_AT];
  puts_(&o, " stack=");
  put_hex(&o, sp - STACK_BELOW);
  put(&o, ":", 1);
  for (uintptr_t a = sp - STACK_BELOW; a < sp + STACK_ABOVE; a += 8) {
    uint64_t w;
    if (a != sp - STACK_BELOW) put(&o, ",", 1);
    if (read_self(a, &w, sizeof w)) put_hex(&o, w);
    else put(&o, "-", 1);
  }
  /* The frame-pointer chain: each frame's pc, and the frame pointers the
   * walk went through (so a reader can lay the chain out again). */
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
  puts_(&o, " bt=");
  for (int i = 0; i < frames; ++i) {
    if (i) put(&o, ",", 1);
    put_pc(&o, t, pcs[i]);
  }
  puts_(&o, " fps=");
  for (int i = 0; i < nfps; ++i) {
    if (i) put(&o, ",", 1);
    put_hex(&o, fps[i]);
  }
  uintptr_t stack_lo = 0, stack_hi = 0;
  if (install_stack.tid == gettid_()) {
    stack_lo = install_stack.lo;
    stack_hi = install_stack.hi;
  } else {
    stack_from_maps(sp, &stack_lo, &stack_hi);
  }
  if (stack_hi > stack_lo) {
    puts_(&o, " stackmap=");
    put_hex(&o, stack_lo);
    put(&o, "-", 1);
    put_hex(&o, stack_hi);
  }
  if (t) {
    puts_(&o, " mods=");
    for (int i = 0; i < t->nmodules; ++i) {
      if (i) put(&o, ";", 1);
      puts_(&o, t->modules[i].build_id[0] ? t->modules[i].build_id : "-");
      put(&o, "@", 1);
      put_hex(&o, t->modules[i].bias);
      put(&o, "@", 1);
      put_escaped(&o, t->modules[i].path);
    }
    puts_(&o, " segs=");
    for (int i = 0; i < t->nsegments; ++i) {
      const struct segment* s = &t->segments[i];
      if (i) put(&o, ";", 1);
      put_dec(&o, s->module);
      put(&o, ":", 1);
      put_hex(&o, s->start);
      put(&o, "-", 1);
      put_hex(&o, s->end);
      put(&o, ":", 1);
      put_hex(&o, s->offset);
      put(&o, ":", 1);
      puts_(&o, s->perm);
    }
  }
  /* A line cut at the buffer's end still ends in a newline; the reader
   * rejects it for its missing fields. */
  *o.p++ = '\n';
  return (size_t)(o.p - line);
}

/* libc's sigaction, behind the one this library puts in front of it;
 * resolved at install (dlsym is not async-signal-safe). */
typedef int (*sigaction_fn)(int, const struct sigaction*, struct sigaction*);
static sigaction_fn real_sigaction;
static sigaction_fn resolve_sigaction(void) {
  if (!real_sigaction) real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
  return real_sigaction;
}

static int index_of(int sig) {
  for (size_t i = 0; i < NSIG_HANDLED; ++i)
    if (kSignals[i] == sig) return (int)i;
  return -1;
}

static void handler(int sig, siginfo_t* si, void* ctx);

static int is_ignored(const struct sigaction* a) { return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN; }
static int is_program_handler(const struct sigaction* a) {
  return (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction != NULL : a->sa_handler != SIG_DFL && !is_ignored(a);
}

/* Puts into the kernel the action the program's disposition for kSignals[slot]
 * calls for: SIG_IGN as it is (a signal the program ignores never reaches
 * us, nor interrupts a system call); otherwise our handler, with the
 * program's mask and flags when it has a handler of its own (so its handler
 * runs on the stack, with the signals blocked, it asked for), else on the
 * alternate stack, to log a stack overflow. */
static void apply_action(int slot) {
  const struct sigaction* want = &previous[slot];
  struct sigaction k;
  memset(&k, 0, sizeof k);
  sigemptyset(&k.sa_mask);
  if (is_ignored(want)) {
    k.sa_handler = SIG_IGN;
  } else if (is_program_handler(want)) {
    k.sa_sigaction = handler;
    k.sa_mask = want->sa_mask;
    k.sa_flags = SA_SIGINFO | (want->sa_flags & (SA_ONSTACK | SA_NODEFER | SA_RESTART));
  } else {
    k.sa_sigaction = handler;
    k.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  }
  if (real_sigaction) real_sigaction(kSignals[slot], &k, NULL);
}

/* A fault handed to the program's handler, kept until it proves fatal or
 * stale. A handler that re-raises (signal(SIG_DFL); raise()) or returns to
 * fault again leads to the default action with a signal that tells
 * nothing (SI_TKILL from the process itself) or the same fault again; the
 * line then describes the fault the program's handler saw. A fault the
 * program recovered from (siglongjmp) must not stand for a later crash:
 * the record counts only for a signal delivered while the program's
 * handler is still on the stack (the interrupted stack pointer below our
 * frame, whose token is intact) or at the very context the fault
 * interrupted (a re-raise delivered on return, a refault). */
#define PENDING_SLOTS 64
#define NESTED_SPAN (8u << 20) /* how far below our frame a nested signal's context may be */
struct pending {
  _Atomic long tid;
  int sig;
  int open; /* the program's handler has not returned (or left by siglongjmp) */
  siginfo_t info;
  struct cpu regs;
  uintptr_t frame; /* address of our handler's token while it ran the program's handler */
  uint64_t token;
};
static struct pending pendings[PENDING_SLOTS];
static _Atomic uint64_t token_counter;

static struct pending* pending_of(long tid, int claim) {
  for (size_t i = 0; i < PENDING_SLOTS; ++i)
    if (atomic_load(&pendings[i].tid) == tid) return &pendings[i];
  if (!claim) return NULL;
  for (size_t i = 0; i < PENDING_SLOTS; ++i) {
    long zero = 0;
    if (atomic_compare_exchange_strong(&pendings[i].tid, &zero, tid)) return &pendings[i];
  }
  return NULL;
}

static int sent_by_self(const siginfo_t* si) {
  return si->si_code <= 0 && si->si_pid == getpid();
}

/* The pending fault the current signal follows from, or NULL. */
static const struct pending* follows_from(const struct pending* p, const siginfo_t* si, const struct cpu* c) {
  if (!p || !p->sig || !sent_by_self(si)) return NULL;
  if (c->r[PC_AT] == p->regs.r[PC_AT] && c->r[SP_AT] == p->regs.r[SP_AT]) return p;
  uintptr_t sp = (uintptr_t)c->r[SP_AT];
  uint64_t token = 0;
  if (p->open && sp < p->frame && p->frame - sp < NESTED_SPAN && read_self(p->frame, &token, sizeof token) &&
      token == p->token)
    return p;
  return NULL;
}

static void write_all(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(out_fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= (size_t)w;
  }
}

/* Writes the line for a fatal signal (or for the fault it follows from). */
static void log_fatal(int sig, const siginfo_t* si, const struct cpu* c, long tid) {
  atomic_fetch_add(&inside, 1);
  /* Wait (bounded, about 2 s) for another thread's line. */
  long none = 0;
  struct timespec pause = {0, 1000000};
  for (int i = 0; i < 2000 && !atomic_compare_exchange_strong(&owner, &none, tid); ++i) {
    none = 0;
    nanosleep(&pause, NULL);
  }
  if (atomic_load(&owner) == tid) {
    size_t n = format_line(sig, si, c);
    write_all(line, n);
    atomic_store(&owner, 0);
  }
  atomic_fetch_sub(&inside, 1);
}

static void handler(int sig, siginfo_t* si, void* ctx) {
  int saved_errno = errno;
  long tid = gettid_();
  int slot = index_of(sig);
  struct cpu c;
  capture((const ucontext_t*)ctx, &c);
  if (slot < 0) return;
  /* A fault inside our own formatting: no second line, straight to the
   * default action below. */
  int nested_in_us = atomic_load(&owner) == tid;
  struct sigaction prev = previous[slot];
  struct pending* p = pending_of(tid, 0);

  if (!nested_in_us && is_program_handler(&prev)) {
    /* The program's handler decides; remember the fault in case it then
     * re-raises, unless this is a signal inside a handler already running
     * for a fault we hold. */
    volatile uint64_t token = atomic_fetch_add(&token_counter, 1) ^ ((uint64_t)tid << 32) ^ 0x636f726f6e6572ULL;
    if (!follows_from(p, si, &c) && (p = pending_of(tid, 1)) != NULL) {
      p->sig = sig;
      p->info = *si;
      p->regs = c;
      p->frame = (uintptr_t)&token;
      p->token = token;
      p->open = 1;
    }
    if (prev.sa_flags & SA_RESETHAND) {
      /* The kernel would have reset the disposition on delivery. */
      memset(&previous[slot], 0, sizeof previous[slot]);
      previous[slot].sa_handler = SIG_DFL;
      apply_action(slot);
    }
    errno = saved_errno;
    if (prev.sa_flags & SA_SIGINFO) prev.sa_sigaction(sig, si, ctx);
    else prev.sa_handler(sig);
    /* Returned: the program's handler is off the stack. */
    if (p && p->frame == (uintptr_t)&token) p->open = 0;
    token = 0;
    return;
  }
  if (!nested_in_us && is_ignored(&prev) && si->si_code <= 0) {
    return; /* ignored, and sent: the kernel would have dropped it (only a race with sigaction gets here) */
  }

  /* The default action: this signal ends the process. */
  if (!nested_in_us) {
    const struct pending* first = follows_from(p, si, &c);
    if (first) log_fatal(first->sig, &first->info, &first->regs, tid);
    else log_fatal(sig, si, &c, tid);
    /* Let every other crashing thread write its line first. A thread that
     * faults within 100 ms of this one counts as crashing with it; waiting
     * is bounded at 2 s. */
    struct timespec tick = {0, 1000000};
    for (int i = 0; i < 2000 && (i < 100 || atomic_load(&inside) > 0); ++i) nanosleep(&tick, NULL);
  }
  /* The default action, with the kernel's own report: a fault the CPU
   * raised happens again when the instruction runs again; a signal that was
   * sent (abort, kill, raise) is sent again with its own siginfo, blocked
   * until this handler returns, so the core shows the sender and the
   * context the signal interrupted. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  if (real_sigaction) real_sigaction(sig, &dfl, NULL);
  int refaults = si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
  if (!refaults) {
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, sig);
    pthread_sigmask(SIG_BLOCK, &block, NULL);
    siginfo_t again = *si;
    if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, sig, &again) != 0) syscall(SYS_tgkill, getpid(), tid, sig);
  }
  errno = saved_errno;
}

/* --- installing ------------------------------------------------------------- */
/* Threads' alternate stacks are unmapped, and their slots freed, when the
 * thread exits (a key's destructor runs on return and on pthread_exit), so
 * thread churn costs nothing. */
static pthread_key_t thread_key;
static _Atomic int thread_key_ready;

static void forget_thread(long tid) {
  struct pending* p = pending_of(tid, 0);
  if (p) {
    p->sig = 0;
    p->open = 0;
    atomic_store(&p->tid, 0);
  }
}

/* The key's value for a thread that brought its own alternate stack: only
 * its pending slot is freed at exit. */
static char no_stack_of_ours;

static void thread_exits(void* alt) {
  stack_t cur;
  if (alt != &no_stack_of_ours && sigaltstack(NULL, &cur) == 0) {
    /* Still the thread's alternate stack (the program may have set another
     * since): switched off first, and never unmapped while in use. */
    stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
    int in_use = cur.ss_sp == alt && ((cur.ss_flags & SS_ONSTACK) || sigaltstack(&off, NULL) != 0);
    if (!in_use) munmap(alt, ALT_STACK_BYTES);
  }
  forget_thread(gettid_());
}

/* Returns the stack it mapped (NULL when the thread had one already). */
static void* alt_stack_for_this_thread(int* error) {
  stack_t old;
  *error = 0;
  if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE) && old.ss_size >= ALT_STACK_BYTES) return NULL;
  void* mem = mmap(NULL, ALT_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    *error = 1;
    return NULL;
  }
  stack_t ss = {.ss_sp = mem, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) {
    munmap(mem, ALT_STACK_BYTES);
    *error = 1;
    return NULL;
  }
  return mem;
}

int coroner_crashlog_install(const coroner_crashlog_options* opts) {
  int fd = 2;
  if (opts && opts->path) {
    fd = open(opts->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
  } else if (opts && opts->fd >= 0) {
    fd = opts->fd;
  }
  out_fd = fd;
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
  coroner_crashlog_refresh_modules();
  remember_stack();
  int error = 0;
  alt_stack_for_this_thread(&error); /* the installing thread's: kept for the process's life */
  if (error) return -1;
  if (!resolve_sigaction()) return -1;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&installed, &expected, 1)) return 0;
  if (pthread_key_create(&thread_key, thread_exits) == 0) atomic_store(&thread_key_ready, 1);
  for (size_t i = 0; i < NSIG_HANDLED; ++i) {
    if (resolve_sigaction()(kSignals[i], NULL, &previous[i]) != 0) return -1;
    apply_action((int)i);
  }
  return 0;
}

/* --- threads and dlopen ------------------------------------------------------ */
/* Every thread needs an alternate stack of its own for a stack overflow to
 * be logged: threads created after install get one from this wrapper.
 * What a new thread starts with is handed over in a static slot: a malloc
 * or free on the new thread would give it a malloc arena (64 MiB of
 * address space) the program without us never makes. With every slot
 * taken (1,024 threads starting at once), a thread starts as it would
 * without us, with no alternate stack. */
#define START_SLOTS 1024
static struct start {
  _Atomic int used;
  void* (*routine)(void*);
  void* arg;
} starts[START_SLOTS];

static void* thread_start(void* p) {
  struct start* slot = p;
  void* (*routine)(void*) = slot->routine;
  void* arg = slot->arg;
  atomic_store(&slot->used, 0);
  if (atomic_load(&installed)) {
    int error;
    void* alt = alt_stack_for_this_thread(&error);
    if (!error && atomic_load(&thread_key_ready)) pthread_setspecific(thread_key, alt ? alt : &no_stack_of_ours);
  }
  return routine(arg);
}

int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg) {
  static int (*real)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  if (!real) real = (int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*))dlsym(RTLD_NEXT, "pthread_create");
  if (!real) return EAGAIN;
  struct start* s = NULL;
  for (size_t i = 0; i < START_SLOTS && !s; ++i) {
    int zero = 0;
    if (atomic_compare_exchange_strong(&starts[i].used, &zero, 1)) s = &starts[i];
  }
  if (!s) return real(thread, attr, routine, arg);
  s->routine = routine;
  s->arg = arg;
  int rc = real(thread, attr, thread_start, s);
  if (rc != 0) atomic_store(&s->used, 0);
  return rc;
}

void* dlopen(const char* file, int mode) {
  static void* (*real)(const char*, int);
  if (!real) real = (void* (*)(const char*, int))dlsym(RTLD_NEXT, "dlopen");
  if (!real) return NULL;
  void* h = real(file, mode);
  if (h && atomic_load(&installed)) coroner_crashlog_refresh_modules();
  return h;
}

/* A program that installs its own handler for one of these signals after
 * us (in LD_PRELOAD mode, every program) gets it recorded as the handler we
 * chain to, and ours stays in front with the program's mask and flags: so
 * its handler runs as it asked, and a crash it passes on is still logged.
 * What it reads back is what it set. */
int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  sigaction_fn real = resolve_sigaction();
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int slot = index_of(sig);
  if (slot < 0 || !atomic_load(&installed)) return real(sig, act, old);
  if (old) *old = previous[slot];
  if (act) {
    previous[slot] = *act;
    apply_action(slot);
  }
  return 0;
}

sighandler_t signal(int sig, sighandler_t handler_fn) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler_fn;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, &old) != 0) return SIG_ERR;
  return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void*)old.sa_sigaction : old.sa_handler;
}

/* LD_PRELOAD mode (the shared library only). */
#ifdef CORONER_CRASHLOG_CONSTRUCTOR
__attribute__((constructor)) static void install_from_environment(void) {
  const char* off = getenv("CORONER_CRASHLOG_DISABLE");
  if (off && *off == '1') return;
  coroner_crashlog_options o = {-1, NULL};
  const char* file = getenv("CORONER_CRASHLOG_FILE");
  const char* fd = getenv("CORONER_CRASHLOG_FD");
  if (file && *file) o.path = file;
  else if (fd && *fd) o.fd = atoi(fd);
  else o.fd = 2;
  coroner_crashlog_install(&o);
}
#endif
