// Disassembly (Zydis, in gdb's AT&T spelling, for x86_64; Capstone for
// aarch64: a64_disassembler.h) of the instructions around a
// frame's pc, from the code bytes in the core when dumped, else from the
// module's file.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/registers.h"
#include "symbolize/module_map.h"

namespace coroner {

struct Instruction {
  uint64_t address = 0;
  std::string bytes;  // hex
  std::string text;   // "mov 0x8(%rax),%rax", as gdb's x/i writes it
  bool current = false;  // the faulting instruction (frame 0) or the call (callers)
};

// The memory operand of the instruction at pc, for naming the register that
// held a bad pointer: base and index registers, scale, displacement. A string instruction's operands are implicit (`rep movsb`:
// the destination's). nullopt when the instruction has no memory operand
// (other than a call's or push's stack slot) or cannot be decoded.
struct MemoryOperand {
  std::string mnemonic, text;
  // Absent when the operand has none; Reg::rip for rip-relative. A vector
  // index (VSIB) is none of the general registers: absent too.
  std::optional<SizedReg> base, index;
  int scale = 1;  // x86_64's scale; aarch64's index shift as a factor (lsl #3: 8)
  bool index_sign_extended = false;  // aarch64's sxtw: the 32-bit index sign-extended before the shift
  int64_t displacement = 0;
  bool is_ret = false, is_call = false;
  bool writes = false;  // the instruction writes its memory operand (a store, or read-modify-write)
  // An SSE/AVX access that requires its operand aligned (movaps, movdqa, ...).
  bool needs_alignment = false;
};
std::optional<MemoryOperand> MemoryOperandAt(const ModuleMap& modules, uint64_t pc);

// A loop that only reads one word until it changes, around pc: a
// backward branch at most 64 bytes after pc, to at most 64 bytes before
// it, over instructions that call nothing, enter no system call, write no
// memory, and read one memory operand whose address registers the loop
// does not change (`while (!ready) _mm_pause();`, a spin lock's wait, a
// fence or flag polled by a GPU runtime). A thread there is spinning, not
// computing.
struct SpinLoop {
  uint64_t start = 0, end = 0;  // [start, end): the loop, its backward branch last
  MemoryOperand polled;         // the read; `text` its instruction
  unsigned width = 0;           // bytes read
  // The word's address when the operand names it without a register
  // (rip-relative); otherwise the registers' values give it.
  std::optional<uint64_t> address;
  bool pauses = false;  // the loop holds a spin-wait hint (pause; yield, wfe)
};
std::optional<SpinLoop> SpinLoopAt(const ModuleMap& modules, uint64_t pc);

// Instructions this thread has formatted so far (Zydis's formatter and
// gdb's spelling): what a report's disassembly costs, for tests that count
// work rather than time it.
uint64_t InstructionsFormatted();

// Every instruction from the start of `code` (at `address`) until bytes that
// are no instruction.
std::vector<Instruction> DecodeInstructions(std::span<const std::byte> code, uint64_t address,
                                            Arch arch = Arch::kX86_64);

// Where pc falls in the instruction stream of its function, decoded from
// the symbol's start (x86 cannot be decoded backwards): at the start of an
// instruction, or inside one (control reached a byte no jump of compiled
// code goes to: a corrupted return address or function pointer, or a bad
// CPU). Unknown without a symbol that covers pc by its size, a function
// longer than 64 KiB, or bytes that are no instruction before pc.
enum class InstructionBoundary { kStart, kInside, kUnknown };
struct BoundaryAt {
  InstructionBoundary where = InstructionBoundary::kUnknown;
  Instruction straddling;  // kInside: the instruction pc falls in
};
BoundaryAt InstructionBoundaryAt(const ModuleMap& modules, uint64_t pc);

// Up to `before` instructions before the current one and `after` after it.
// `exact` says pc is the instruction itself (frame 0, a signal's interrupted
// context); otherwise pc is a return address and the current instruction is
// the call that ends there. Decoding starts at the enclosing function's
// symbol so that it stays in step; without a symbol it starts at the current
// instruction (x86 cannot be decoded backwards). Empty when no bytes are
// readable at pc.
std::vector<Instruction> Disassemble(const ModuleMap& modules, uint64_t pc, bool exact, size_t before = 6,
                                     size_t after = 4);

}  // namespace coroner
