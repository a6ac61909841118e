// The general registers of one thread of an x86_64 or aarch64 process, with
// their gdb names. One enum holds both register files: the x86_64 ones in
// the kernel's user_regs_struct order (the layout of NT_PRSTATUS pr_reg),
// then the aarch64 ones in user_pt_regs order (x0-x30, sp, pc, pstate), so
// that an instruction's operand, a diagnosis' evidence and a report name a
// register the same way whichever machine the core is from.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "text/json_writer.h"

namespace coroner {

enum class Arch : uint8_t { kX86_64, kAarch64 };
// "x86_64" or "aarch64": the dataset's `arch` and the reports' words.
std::string_view ArchName(Arch a);
// Its ELF e_machine: EM_X86_64 or EM_AARCH64.
uint16_t ElfMachine(Arch a);

enum class Reg : uint8_t {
  r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8, rax, rcx, rdx, rsi, rdi, orig_rax,
  rip, cs, eflags, rsp, ss, fs_base, gs_base, ds, es, fs, gs,
  x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15, x16, x17, x18, x19, x20,
  x21, x22, x23, x24, x25, x26, x27, x28, x29, x30, sp, pc, pstate,
  kCount
};
constexpr size_t kRegCount = static_cast<size_t>(Reg::kCount);
// Each machine's registers, in its NT_PRSTATUS order from its first.
constexpr size_t kX86RegCount = static_cast<size_t>(Reg::gs) + 1;
constexpr size_t kA64RegCount = static_cast<size_t>(Reg::pstate) - static_cast<size_t>(Reg::x0) + 1;
constexpr Reg kA64First = Reg::x0;
// A register's 8-byte slot in NT_PRSTATUS's pr_reg: Reg follows the
// kernel's user_regs_struct (x86_64) and user_pt_regs (aarch64) orders.
constexpr size_t PrRegSlot(Reg r) {
  return r >= kA64First ? static_cast<size_t>(r) - static_cast<size_t>(kA64First) : static_cast<size_t>(r);
}
// x0 + n.
constexpr Reg A64X(size_t n) { return static_cast<Reg>(static_cast<size_t>(Reg::x0) + n); }

std::string_view RegName(Reg r);
// A register as gdb or a disassembler names it: "rax", "x29", "sp"; aarch64's
// "fp" and "lr" are x29 and x30, and "cpsr" its pstate.
std::optional<Reg> RegFromName(std::string_view name);

// The order gdb's `info registers` prints a machine's registers in, which is
// also the order the reports use.
std::span<const Reg> RegDisplayOrder(Arch arch);

struct Registers {
  Arch arch = Arch::kX86_64;
  std::array<uint64_t, kRegCount> value{};
  uint64_t operator[](Reg r) const { return value[static_cast<size_t>(r)]; }
  uint64_t& operator[](Reg r) { return value[static_cast<size_t>(r)]; }
  Reg pc_reg() const { return arch == Arch::kAarch64 ? Reg::pc : Reg::rip; }
  Reg sp_reg() const { return arch == Arch::kAarch64 ? Reg::sp : Reg::rsp; }
  uint64_t pc() const { return (*this)[pc_reg()]; }
  uint64_t sp() const { return (*this)[sp_reg()]; }
};

// A register as an instruction names it: the 64-bit register, or its low
// half under an address-size prefix (0x67: `(%r8d)`, `0x10(%eip)`) or as an
// aarch64 W register (`w1`).
struct SizedReg {
  Reg reg = Reg::rax;
  uint8_t bits = 64;  // 64 or 32
  bool operator==(const SizedReg&) const = default;
};
// gdb's name: "rax", "eax", "r8d", "rip", "eip", "x1", "w1".
std::string SizedRegName(SizedReg r);
// Its value: the register, cut to its width.
uint64_t SizedRegValue(const Registers& regs, SizedReg r);

// {"rip":"0x...",...}: every register in display order, as compact JSON
// (the analyze JSON's `registers`; a scan stores one per thread).
void WriteRegistersJson(JsonWriter& w, const Registers& r);
std::string RegistersJsonText(const Registers& r);

}  // namespace coroner
