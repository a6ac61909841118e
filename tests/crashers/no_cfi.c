/* Crash zoo: functions with no unwind tables at all (built with
 * -fno-asynchronous-unwind-tables -fno-unwind-tables), only frame pointers:
 * the unwinder must walk them by %rbp. SIGSEGV, SEGV_MAPERR, fault address
 * 0x18 in leaf(), called by middle(), called by main(). */
struct record {
  long a, b, c, d;
};

struct record *volatile current;

__attribute__((noinline)) long leaf(struct record *r) { return r->d; }

__attribute__((noinline)) long middle(struct record *r) { return leaf(r) * 2; }

int main(void) { return (int)middle(current); }
