/* Crash zoo: a NULL dereference. walk() reads through a list node's next
 * pointer, which is NULL: SIGSEGV, SEGV_MAPERR, fault address 0x8 (the offset
 * of `value` in struct node). */
#include <stddef.h>

struct node {
  struct node *next;
  long value;
};

struct node *volatile list_head;

__attribute__((noinline)) long walk(struct node *n) { return n->next->value; }

int main(void) {
  static struct node last = {NULL, 1};
  list_head = &last;
  return (int)walk(list_head);
}
