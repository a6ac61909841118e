// The general registers of one x86_64 thread, in the kernel's
// user_regs_struct order (the layout of NT_PRSTATUS pr_reg and of the
// ucontext's gregs' source), with their gdb names.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "text/json_writer.h"

namespace coroner {

enum class Reg : uint8_t {
  r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8, rax, rcx, rdx, rsi, rdi, orig_rax,
  rip, cs, eflags, rsp, ss, fs_base, gs_base, ds, es, fs, gs,
  kCount
};
constexpr size_t kRegCount = static_cast<size_t>(Reg::kCount);

std::string_view RegName(Reg r);
std::optional<Reg> RegFromName(std::string_view name);

// The order gdb's `info registers` prints them in, which is also the order
// the reports use.
extern const std::array<Reg, kRegCount> kRegDisplayOrder;

struct Registers {
  std::array<uint64_t, kRegCount> value{};
  uint64_t operator[](Reg r) const { return value[static_cast<size_t>(r)]; }
  uint64_t& operator[](Reg r) { return value[static_cast<size_t>(r)]; }
  uint64_t pc() const { return (*this)[Reg::rip]; }
  uint64_t sp() const { return (*this)[Reg::rsp]; }
};

// A register as an instruction names it: the 64-bit register, or its low
// half under an address-size prefix (0x67: `(%r8d)`, `0x10(%eip)`).
struct SizedReg {
  Reg reg = Reg::rax;
  uint8_t bits = 64;  // 64 or 32
  bool operator==(const SizedReg&) const = default;
};
// gdb's name: "rax", "eax", "r8d", "rip", "eip".
std::string SizedRegName(SizedReg r);
// Its value: the register, cut to its width.
uint64_t SizedRegValue(const Registers& regs, SizedReg r);

// {"rip":"0x...",...}: every register in display order, as compact JSON
// (the analyze JSON's `registers`; a scan stores one per thread).
void WriteRegistersJson(JsonWriter& w, const Registers& r);
std::string RegistersJsonText(const Registers& r);

}  // namespace coroner
