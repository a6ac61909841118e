// AArch64 disassembly (Capstone), behind the machine-neutral functions of
// disassembler.h: they call these for an aarch64 core. Every instruction is
// four bytes, so the window around a pc needs no decoding from the
// function's start.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "symbolize/disassembler.h"

namespace coroner::a64 {

std::vector<Instruction> DecodeInstructions(std::span<const std::byte> code, uint64_t address);
std::optional<MemoryOperand> MemoryOperandAt(const ModuleMap& modules, uint64_t pc);
std::optional<SpinLoop> SpinLoopAt(const ModuleMap& modules, uint64_t pc);
std::vector<Instruction> Disassemble(const ModuleMap& modules, uint64_t pc, bool exact, size_t before, size_t after);
// Instructions this thread has formatted.
uint64_t Formatted();

}  // namespace coroner::a64
