/* Crash zoo: a call through a function pointer into data: pc lands in a
 * non-executable mapping. SIGSEGV, SEGV_ACCERR, fault address = pc. */
unsigned char not_code[64] = {0x90, 0x90, 0xc3};

typedef void (*fn)(void);
fn volatile target;

__attribute__((noinline)) void dispatch_to(fn f) { f(); }

int main(void) {
  target = (fn)not_code;
  dispatch_to(target);
  return 0;
}
