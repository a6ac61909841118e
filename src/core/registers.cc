#include "core/registers.h"

#include <elf.h>

#include "core/byte_view.h"

namespace coroner {
namespace {
constexpr std::array<std::string_view, kRegCount> kNames = {
    "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9",     "r8",      "rax", "rcx", "rdx", "rsi",
    "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x16",
    "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp", "pc",
    "cpsr"};

constexpr std::array<Reg, kX86RegCount> kX86DisplayOrder = {
    Reg::rax, Reg::rbx, Reg::rcx, Reg::rdx, Reg::rsi, Reg::rdi, Reg::rbp, Reg::rsp, Reg::r8,
    Reg::r9,  Reg::r10, Reg::r11, Reg::r12, Reg::r13, Reg::r14, Reg::r15, Reg::rip, Reg::eflags,
    Reg::cs,  Reg::ss,  Reg::ds,  Reg::es,  Reg::fs,  Reg::gs,  Reg::fs_base, Reg::gs_base,
    Reg::orig_rax};

// gdb's order is the kernel's.
constexpr std::array<Reg, kA64RegCount> kA64DisplayOrder = [] {
  std::array<Reg, kA64RegCount> order{};
  for (size_t i = 0; i < kA64RegCount; ++i) order[i] = static_cast<Reg>(static_cast<size_t>(kA64First) + i);
  return order;
}();
}  // namespace

std::string_view ArchName(Arch a) { return a == Arch::kAarch64 ? "aarch64" : "x86_64"; }
uint16_t ElfMachine(Arch a) { return a == Arch::kAarch64 ? EM_AARCH64 : EM_X86_64; }

std::span<const Reg> RegDisplayOrder(Arch arch) {
  if (arch == Arch::kAarch64) return kA64DisplayOrder;
  return kX86DisplayOrder;
}

std::string_view RegName(Reg r) { return kNames[static_cast<size_t>(r)]; }

std::optional<Reg> RegFromName(std::string_view name) {
  if (name == "fp") return Reg::x29;
  if (name == "lr") return Reg::x30;
  for (size_t i = 0; i < kRegCount; ++i) {
    if (kNames[i] == name) return static_cast<Reg>(i);
  }
  return std::nullopt;
}

std::string SizedRegName(SizedReg r) {
  std::string_view name = RegName(r.reg);
  if (r.bits == 64) return std::string(name);
  if (r.reg >= kA64First) {  // w0..w30, wsp
    if (r.reg == Reg::sp) return "wsp";
    return "w" + std::string(name.substr(1));
  }
  // r8..r15 take a "d"; the others trade their "r" for an "e".
  if (name.size() >= 2 && name[1] >= '0' && name[1] <= '9') return std::string(name) + "d";
  return "e" + std::string(name.substr(1));
}

uint64_t SizedRegValue(const Registers& regs, SizedReg r) {
  uint64_t v = regs[r.reg];
  return r.bits >= 64 ? v : v & ((uint64_t{1} << r.bits) - 1);
}

void WriteRegistersJson(JsonWriter& w, const Registers& r) {
  w.BeginObject();
  for (Reg reg : RegDisplayOrder(r.arch)) w.Key(RegName(reg)).String(ShownWord(r[reg]));
  w.EndObject();
}

std::string RegistersJsonText(const Registers& r) {
  std::string out;
  out.reserve(RegDisplayOrder(r.arch).size() * 32);  // "name":"0x" and 16 digits each
  JsonWriter w(out);
  WriteRegistersJson(w, r);
  return out;
}

}  // namespace coroner
