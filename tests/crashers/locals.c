/* Crash zoo: a NULL dereference two calls deep, in frames that hold the
 * arguments and locals `bt full` shows: signed and unsigned integers of each
 * width, a char, a bool, a double, an enum, pointers (to a string, to the
 * stack, to static data, to a long string), a struct, an array, a static.
 * charge() writes through order->customer, which is NULL: SIGSEGV,
 * SEGV_MAPERR, fault address 0x10 (the offset of `credit` in struct customer).
 * Built once more with its DWARF paths moved under a long packaging prefix,
 * as packaged libraries carry them (locals-relocated). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum priority { PRIORITY_LOW, PRIORITY_HIGH = 7 };

struct customer {
  const char *name;
  long id;
  long credit;
};
struct point {
  int x;
  int y;
};
struct order {
  struct customer *customer;
  int quantity;
  enum priority priority;
};

__attribute__((noinline)) long charge(struct order *order, long amount, char grade) {
  int8_t small = -5;
  uint16_t port = 8080;
  bool retried = true;
  double ratio = 0.25;
  order->customer->credit -= amount; /* faults: customer is NULL */
  return small + port + retried + (long)ratio + grade;
}

/* 230 characters: longer than gdb's 200 `print elements`, and in .rodata, so
 * read from the executable's file (the kernel does not dump it). */
#define NOTE_TEXT                                                                                   \
  "Deliver to the loading dock at the rear of the building between nine and five on weekdays; "   \
  "ring the bell twice, wait for the porter, and ask for a signature on the yellow copy before " \
  "leaving the crates at door 4"

__attribute__((noinline)) long process_order(struct order *order, unsigned count) {
  const char *label = "express";
  const char *note = NOTE_TEXT;
  struct point where = {3, -4};
  int history[4] = {10, 20, 30, 40};
  enum priority level = PRIORITY_HIGH;
  uint64_t total = 0xfeedface12345678ull;
  long r = charge(order, 250, 'B');
  return r + (long)total + where.x + history[count % 4] + level + label[0] + note[count % 8];
}

int main(int argc, char **argv) {
  static long calls = 17;
  struct order order = {NULL, 3, PRIORITY_HIGH};
  unsigned count = (unsigned)argc + 41;
  (void)argv;
  return (int)process_order(&order, count + (unsigned)calls);
}
