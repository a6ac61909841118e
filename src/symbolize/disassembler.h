// Disassembly (Capstone, AT&T syntax as gdb shows it) of the instructions
// around a frame's pc, from the code bytes in the core when dumped, else from
// the module's file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbolize/module_map.h"

namespace coroner {

struct Instruction {
  uint64_t address = 0;
  std::string bytes;  // hex
  std::string text;   // "mov 0x8(%rax), %rax"
  bool current = false;  // the faulting instruction (frame 0) or the call (callers)
};

// Up to `before` instructions before the current one and `after` after it.
// `exact` says pc is the instruction itself (frame 0, a signal's interrupted
// context); otherwise pc is a return address and the current instruction is
// the call that ends there. Decoding starts at the enclosing function's
// symbol so that it stays in step; without a symbol it starts at the current
// instruction (x86 cannot be decoded backwards). Empty when pc is not code.
std::vector<Instruction> Disassemble(const ModuleMap& modules, uint64_t pc, bool exact, size_t before = 6,
                                     size_t after = 4);

}  // namespace coroner
