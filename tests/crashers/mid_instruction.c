/* Crash zoo: control lands inside an instruction, as it does after a
 * corrupted return address or function pointer (or a bad CPU). The target
 * is a 10-byte `movabs` whose immediate holds ud2 (0f 0b); entering it two
 * bytes in runs that ud2: SIGILL, ILL_ILLOPN, at mid_target+2. */
#include <stdint.h>

__asm__(".text\n"
        ".globl mid_target\n"
        ".type mid_target, @function\n"
        "mid_target:\n"
        "  movabs $0x0b0f0b0f0b0f0b0f, %rax\n"
        "  ret\n"
        ".size mid_target, .-mid_target\n");

void mid_target(void);

int main(void) {
  void (*volatile entry)(void) = (void (*)(void))((uintptr_t)mid_target + 2);
  entry();
  return 0;
}
