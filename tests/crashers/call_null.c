/* Crash zoo: a call through a NULL function pointer. The call pushed its
 * return address, then jumped to 0: SIGSEGV, SEGV_MAPERR, fault address 0x0,
 * pc 0, and [rsp] is the return address into dispatch(). */
typedef int (*handler_fn)(int);

handler_fn volatile on_event;

__attribute__((noinline)) int dispatch(int event) { return on_event(event) + 1; }

int main(void) { return dispatch(3); }
