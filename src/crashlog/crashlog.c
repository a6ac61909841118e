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
 * the handler skips the logging and goes straight to the default action. */
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
static char host[65], comm[17], exe_path[4096];
static struct sigaction previous[NSIG_HANDLED];
static _Atomic int installed;
static _Atomic long owner; /* tid writing a line, 0 when none */
static _Atomic int inside; /* threads logging; the first to finish waits for the others */
static _Atomic long handled[64]; /* tids that already logged (a fault inside the handler, a chained return) */
static char line[LINE_MAX_BYTES];
/* Each thread's stack mapping, noted when the thread starts (pthread's
 * view; for the main thread, the extent its rlimit allows): a reader needs
 * it to tell a stack overflow from any other fault. */
static struct {
  _Atomic long tid;
  uintptr_t lo, hi;
} stacks[512];

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

/* Reads `n` bytes at `addr` of this process; 0 when any is unreadable. */
static int read_self(uintptr_t addr, void* to, size_t n) {
  struct iovec local = {to, n}, remote = {(void*)addr, n};
  return syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL) == (long)n;
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
    uintptr_t page = 4096;
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
  long tid = gettid_();
  for (size_t i = 0; i < sizeof stacks / sizeof stacks[0]; ++i) {
    long seen = atomic_load(&stacks[i].tid), zero = 0;
    if (seen == tid || (seen == 0 && atomic_compare_exchange_strong(&stacks[i].tid, &zero, tid))) {
      stacks[i].lo = (uintptr_t)addr;
      stacks[i].hi = (uintptr_t)addr + size;
      return;
    }
  }
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
    sg->start = (base + ph[i].p_vaddr) & ~(uintptr_t)4095;
    sg->end = (base + ph[i].p_vaddr + ph[i].p_memsz + 4095) & ~(uintptr_t)4095;
    sg->offset = ph[i].p_offset & ~(uintptr_t)4095;
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

static const struct {
  const char* name;
  int index;
} kRegs[] = {{"rax", REG_RAX}, {"rbx", REG_RBX}, {"rcx", REG_RCX}, {"rdx", REG_RDX}, {"rsi", REG_RSI},
             {"rdi", REG_RDI}, {"rbp", REG_RBP}, {"rsp", REG_RSP}, {"r8", REG_R8},   {"r9", REG_R9},
             {"r10", REG_R10}, {"r11", REG_R11}, {"r12", REG_R12}, {"r13", REG_R13}, {"r14", REG_R14},
             {"r15", REG_R15}, {"rip", REG_RIP}, {"eflags", REG_EFL}, {"csgsfs", REG_CSGSFS}, {"err", REG_ERR},
             {"trapno", REG_TRAPNO}, {"oldmask", REG_OLDMASK}, {"cr2", REG_CR2}};

static size_t format_line(int sig, const siginfo_t* si, const ucontext_t* uc) {
  struct out o = {line, line + sizeof line - 1};
  const greg_t* g = uc->uc_mcontext.gregs;
  const struct table* t = modules_at_crash();
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  puts_(&o, "coroner-crash: v=1 pid=");
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
  for (size_t i = 0; i < sizeof kRegs / sizeof kRegs[0]; ++i) {
    if (i) put(&o, ",", 1);
    puts_(&o, kRegs[i].name);
    put(&o, ":", 1);
    put_hex(&o, (uint64_t)g[kRegs[i].index]);
  }
  uintptr_t sp = (uintptr_t)g[REG_RSP];
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
  pcs[0] = (uintptr_t)g[REG_RIP];
  uintptr_t fp = (uintptr_t)g[REG_RBP];
  while (frames < MAX_FRAMES) {
    uintptr_t frame[2];
    if (fp == 0 || fp % 8 || !read_self(fp, frame, sizeof frame) || frame[1] == 0) break;
    fps[nfps++] = fp;
    pcs[frames++] = frame[1];
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
  for (size_t i = 0; i < sizeof stacks / sizeof stacks[0]; ++i) {
    if (atomic_load(&stacks[i].tid) != gettid_()) continue;
    puts_(&o, " stackmap=");
    put_hex(&o, stacks[i].lo);
    put(&o, "-", 1);
    put_hex(&o, stacks[i].hi);
    break;
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

static int already_handled(long tid) {
  for (size_t i = 0; i < sizeof handled / sizeof handled[0]; ++i)
    if (atomic_load(&handled[i]) == tid) return 1;
  return 0;
}
static void mark_handled(long tid) {
  for (size_t i = 0; i < sizeof handled / sizeof handled[0]; ++i) {
    long zero = 0;
    if (atomic_compare_exchange_strong(&handled[i], &zero, tid)) return;
  }
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

static void handler(int sig, siginfo_t* si, void* ctx) {
  int saved_errno = errno;
  long tid = gettid_();
  int slot = index_of(sig);
  int logged = 0;
  if (!already_handled(tid)) {
    mark_handled(tid);
    atomic_fetch_add(&inside, 1);
    /* Wait (bounded, about 2 s) for another thread's line. */
    long none = 0;
    struct timespec pause = {0, 1000000};
    for (int i = 0; i < 2000 && !atomic_compare_exchange_strong(&owner, &none, tid); ++i) {
      none = 0;
      nanosleep(&pause, NULL);
    }
    if (atomic_load(&owner) == tid) {
      size_t n = format_line(sig, si, (const ucontext_t*)ctx);
      write_all(line, n);
      atomic_store(&owner, 0);
    }
    atomic_fetch_sub(&inside, 1);
    logged = 1;
  }
  errno = saved_errno;
  /* Chain to the handler that was there before us. */
  struct sigaction* prev = slot >= 0 ? &previous[slot] : NULL;
  if (prev && (prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
    prev->sa_sigaction(sig, si, ctx);
    return;
  }
  if (prev && !(prev->sa_flags & SA_SIGINFO) && prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
    prev->sa_handler(sig);
    return;
  }
  /* The default action ends the process: let every other crashing thread
   * write its line first. A thread that faults within 100 ms of this one
   * counts as crashing with it; waiting is bounded at 2 s. */
  struct timespec tick = {0, 1000000};
  for (int i = 0; logged && i < 2000 && (i < 100 || atomic_load(&inside) > 0); ++i) nanosleep(&tick, NULL);
  /* The default action, with the kernel's own report: a fault the CPU
   * raised happens again when the instruction runs again; a signal that was
   * sent (abort, kill) is sent again. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  if (real_sigaction) real_sigaction(sig, &dfl, NULL);
  int refaults = si->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
  if (!refaults) syscall(SYS_tgkill, getpid(), tid, sig);
}

/* --- installing ------------------------------------------------------------- */
static int alt_stack_for_this_thread(void) {
  stack_t old;
  if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE) && old.ss_size >= ALT_STACK_BYTES) return 0;
  void* mem = mmap(NULL, ALT_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return -1;
  stack_t ss = {.ss_sp = mem, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
  return sigaltstack(&ss, NULL);
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
  if (alt_stack_for_this_thread() != 0) return -1;
  if (!resolve_sigaction()) return -1;
  int expected = 0;
  if (!atomic_compare_exchange_strong(&installed, &expected, 1)) return 0;
  for (size_t i = 0; i < NSIG_HANDLED; ++i) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (resolve_sigaction()(kSignals[i], &sa, &previous[i]) != 0) return -1;
  }
  return 0;
}

/* --- threads and dlopen ------------------------------------------------------ */
/* Every thread needs an alternate stack of its own for a stack overflow to
 * be logged: threads created after install get one from this wrapper. */
struct start {
  void* (*routine)(void*);
  void* arg;
};
static void* thread_start(void* p) {
  struct start s = *(struct start*)p;
  free(p);
  if (atomic_load(&installed)) {
    alt_stack_for_this_thread();
    remember_stack();
  }
  return s.routine(s.arg);
}

int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg) {
  static int (*real)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  if (!real) real = (int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*))dlsym(RTLD_NEXT, "pthread_create");
  if (!real) return EAGAIN;
  struct start* s = malloc(sizeof *s);
  if (!s) return real(thread, attr, routine, arg);
  s->routine = routine;
  s->arg = arg;
  int rc = real(thread, attr, thread_start, s);
  if (rc != 0) free(s);
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
 * chain to, and ours stays in front: so its crashes are still logged, and
 * its handler still runs. */
int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  sigaction_fn real = resolve_sigaction();
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  int slot = index_of(sig);
  if (slot < 0 || !atomic_load(&installed)) return real(sig, act, old);
  if (old) *old = previous[slot];
  if (act) previous[slot] = *act;
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
