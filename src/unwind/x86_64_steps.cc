// x86_64's unwinding: the SysV ABI's registers, `call`'s encodings, and the
// prologue of a function without CFI.
#include "unwind/machine_steps.h"

namespace coroner {
namespace {

constexpr DwarfAbi kAbi{16, 7, 6, 17};

// The SysV ABI's rbx, rbp, r12-r15.
bool CalleeSaved(int r) { return r == 3 || r == 6 || (r >= 12 && r <= 15); }

DwarfRegisters ToDwarf(const Registers& r) {
  DwarfRegisters d;
  const Reg order[] = {Reg::rax, Reg::rdx, Reg::rcx, Reg::rbx, Reg::rsi, Reg::rdi, Reg::rbp, Reg::rsp, Reg::r8,
                       Reg::r9,  Reg::r10, Reg::r11, Reg::r12, Reg::r13, Reg::r14, Reg::r15, Reg::rip};
  for (size_t i = 0; i < 17; ++i) d[i] = r[order[i]];
  return d;
}

uint64_t CleanReturnAddress(uint64_t address, std::optional<uint64_t>) { return address; }

// call rel32, or call r/m64 (ff /2, 2 to 7 bytes with an optional REX prefix).
bool FollowsCall(const ModuleMap& modules, uint64_t addr) {
  std::byte b[8];
  if (modules.ReadCode(addr - 8, b) != 8) return false;
  auto at = [&](int back) { return static_cast<uint8_t>(b[8 - back]); };
  if (at(5) == 0xe8) return true;
  for (int n = 2; n <= 7; ++n) {
    if (at(n) == 0xff && ((at(n - 1) >> 3) & 7) == 2) {
      uint8_t modrm = at(n - 1);
      int mod = modrm >> 6, rm = modrm & 7;
      int len = 2;
      if (mod != 3 && rm == 4) ++len;  // SIB
      if (mod == 1) len += 1;
      else if (mod == 2 || (mod == 0 && rm == 5)) len += 4;
      else if (mod == 0 && rm == 4 && (at(n - 2) & 7) == 5) len += 4;  // SIB with no base
      if (len == n) return true;
    }
  }
  return false;
}

// Without CFI, at an exact pc (the crash itself), the function's prologue
// says where the return address is (what gdb's prologue analyzer does): not
// yet pushed rbp, or no frame at all (a leaf), means it is at [rsp]; between
// `push %rbp` and `mov %rsp,%rbp` it is at [rsp+8].
std::optional<RawFrame> StepPrologue(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                     std::optional<uint64_t>) {
  if (!cur.exact_pc) return std::nullopt;
  PcSymbol sym = modules.Symbolize(cur.pc);
  if (sym.symbol.empty() || sym.symbol_offset > 4096) return std::nullopt;
  uint64_t start = cur.pc - sym.symbol_offset;
  uint8_t code[12] = {};
  if (modules.ReadCode(start, std::as_writable_bytes(std::span(code))) < sizeof code) return std::nullopt;
  size_t p = (code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa) ? 4 : 0;  // endbr64
  bool push = code[p] == 0x55;
  bool mov = push && code[p + 1] == 0x48 && ((code[p + 2] == 0x89 && code[p + 3] == 0xe5) ||
                                             (code[p + 2] == 0x8b && code[p + 3] == 0xec));
  uint64_t ra_slot;
  std::optional<uint64_t> rbp = cur.regs[kAbi.fp];
  if (!push || cur.pc <= start + p) {
    ra_slot = cur.sp;  // a frameless function, or before its push
  } else if (mov && cur.pc <= start + p + 1) {
    ra_slot = cur.sp + 8;  // pushed rbp, not yet moved rsp into it
    rbp = mem.Read64(cur.sp);
  } else {
    return std::nullopt;  // the frame is set up: the rbp chain applies
  }
  auto ra = mem.Read64(ra_slot);
  if (!ra || !LooksLikeReturnAddress(modules, *ra)) return std::nullopt;
  RawFrame next;
  next.pc = *ra;
  next.sp = ra_slot + 8;
  next.regs[kAbi.sp] = next.sp;
  next.regs[kAbi.fp] = rbp;
  next.regs[kAbi.ra] = next.pc;
  next.trust = FrameTrust::kFp;
  next.exact_pc = false;
  return next;
}

}  // namespace

const UnwindMachine kX86_64Unwind{kAbi,        CalleeSaved, ToDwarf, CleanReturnAddress, FollowsCall,
                                  nullptr,     StepPrologue, nullptr, false};

}  // namespace coroner
