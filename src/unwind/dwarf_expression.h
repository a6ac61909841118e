// A DWARF expression evaluator (libdw's Dwarf_Op form) over one frame's
// registers and the core's memory, shared by the CFI stepper (register
// rules, CFA) and by the frame-variable reader (DW_AT_location,
// DW_AT_frame_base).
//
// Bounded: a fixed 64-entry stack, no branches, so every expression ends in
// at most `nops` steps. Anything it does not evaluate (typed stack ops, TLS,
// entry values it is given no resolver for) is a failure with the reason,
// never a guess.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "unwind/stack_memory.h"
#include "unwind/unwinder.h"

namespace coroner {

struct ExpressionContext {
  const DwarfRegisters* regs = nullptr;
  std::optional<uint64_t> cfa;         // DW_OP_call_frame_cfa
  std::optional<uint64_t> frame_base;  // DW_OP_fbreg
  uint64_t address_bias = 0;           // added to DW_OP_addr: the module's load bias
  StackMemory* memory = nullptr;
  // Resolves DW_OP_entry_value (the value its sub-expression had when the
  // function was entered); unset, entry values fail.
  std::function<std::optional<uint64_t>(const Dwarf_Op&)> entry_value;
};

struct ExpressionResult {
  enum class Kind {
    kAddress,   // the object is in memory at `value`
    kValue,     // the object's value is `value` (DW_OP_stack_value, or a register's contents)
    kFailed,
  };
  Kind kind = Kind::kFailed;
  uint64_t value = 0;
  int reg = -1;                 // the DWARF register a DW_OP_reg* location named
  const char* error = nullptr;  // why it failed, in words
};

ExpressionResult EvaluateExpression(const Dwarf_Op* ops, size_t nops, const ExpressionContext& context);

// The register a location of one DW_OP_reg0..31 / DW_OP_regx names;
// nullopt for any other operation.
std::optional<int> RegisterLocation(const Dwarf_Op& op);

// A machine's name of a DWARF register number ("rdi", "x19").
std::string DwarfRegisterName(int reg, Arch arch);

}  // namespace coroner
