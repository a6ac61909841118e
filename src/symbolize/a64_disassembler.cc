#include "symbolize/a64_disassembler.h"

#include <capstone/capstone.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/byte_view.h"

namespace coroner::a64 {
namespace {

thread_local uint64_t formatted = 0;

// A Capstone handle with operand details, one per thread (thread_local).
class Decoder {
 public:
  Decoder() {
    ok_ = cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &handle_) == CS_ERR_OK;
    if (ok_) ok_ = cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON) == CS_ERR_OK;
    if (ok_) insn_ = cs_malloc(handle_);
    ok_ = ok_ && insn_;
  }
  ~Decoder() {
    if (insn_) cs_free(insn_, 1);
    if (handle_) cs_close(&handle_);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // The instruction at the start of `code` (at `address`); nullptr for four
  // bytes that are no instruction. Valid until the next call.
  const cs_insn* One(std::span<const std::byte> code, uint64_t address) {
    if (!ok_ || code.size() < 4) return nullptr;
    const auto* p = reinterpret_cast<const uint8_t*>(code.data());
    size_t size = 4;
    uint64_t at = address;
    if (!cs_disasm_iter(handle_, &p, &size, &at, insn_)) return nullptr;
    ++formatted;
    return insn_;
  }
  csh handle() const { return handle_; }

 private:
  csh handle_ = 0;
  cs_insn* insn_ = nullptr;
  bool ok_ = false;
};

Decoder& TheDecoder() {
  thread_local Decoder decoder;
  return decoder;
}

std::string Text(const cs_insn& in) {
  std::string text = in.mnemonic;
  if (in.op_str[0]) text += std::string(" ") + in.op_str;
  return text;
}

// Four bytes Capstone does not decode, as binutils (gdb, objdump) writes
// them: `udf #imm16` (the permanently undefined instruction, top half
// zero, which Capstone 4 does not name), else `.inst 0x... ; undefined`.
std::string UndecodedText(std::span<const std::byte> word) {
  uint32_t insn = 0;
  std::memcpy(&insn, word.data(), sizeof insn);
  if ((insn >> 16) == 0) return "udf #" + std::to_string(insn & 0xffff);
  char text[40];
  std::snprintf(text, sizeof text, ".inst 0x%08x ; undefined", insn);
  return text;
}

// x0-x30 and sp, at their width (w registers are 32 bits); nullopt for
// the zero register and the vector ones.
std::optional<SizedReg> GeneralRegister(csh handle, unsigned reg) {
  if (reg == ARM64_REG_INVALID) return std::nullopt;
  const char* name = cs_reg_name(handle, reg);
  if (!name) return std::nullopt;
  std::string_view n = name;
  uint8_t bits = 64;
  std::string full(n);
  if (n == "wsp") full = "sp", bits = 32;
  else if (n.size() >= 2 && n[0] == 'w' && n[1] >= '0' && n[1] <= '9') full = "x" + std::string(n.substr(1)), bits = 32;
  std::optional<Reg> r = RegFromName(full);
  if (!r || *r < kA64First) return std::nullopt;
  return SizedReg{*r, bits};
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Stores, and the atomics that read and write (Capstone 4's access flags
// mark every store's operand read-write).
bool WritesMemory(std::string_view m) {
  return StartsWith(m, "st") || StartsWith(m, "swp") || StartsWith(m, "cas") ||
         (StartsWith(m, "ld") && m.size() > 4 &&
          (StartsWith(m, "ldadd") || StartsWith(m, "ldclr") || StartsWith(m, "ldeor") || StartsWith(m, "ldset")));
}

bool IsBranch(std::string_view m) {
  return m == "b" || StartsWith(m, "b.") || m == "cbz" || m == "cbnz" || m == "tbz" || m == "tbnz";
}

// An instruction that leaves the loop another way than its branch: a call,
// a return, an indirect jump, a system call or trap.
bool LeavesFlow(std::string_view m) {
  return m == "bl" || StartsWith(m, "blr") || StartsWith(m, "br") || StartsWith(m, "ret") || m == "svc" ||
         m == "hvc" || m == "smc" || m == "brk" || m == "udf" || m == "eret";
}

// The registers an instruction writes, as Capstone 4 shows them: the first
// operand of what is neither a comparison, a branch, a store nor a hint,
// and the second of a pair load.
std::vector<unsigned> WrittenRegisters(const cs_insn& in) {
  std::string_view m = in.mnemonic;
  const cs_arm64& d = in.detail->arm64;
  if (IsBranch(m) || WritesMemory(m) || m == "cmp" || m == "cmn" || m == "tst" || StartsWith(m, "ccm") ||
      m == "nop" || m == "yield" || m == "wfe" || m == "isb" || m == "dmb" || m == "dsb")
    return {};
  std::vector<unsigned> out;
  for (unsigned i = 0; i < d.op_count && i < (StartsWith(m, "ldp") || StartsWith(m, "ldxp") || StartsWith(m, "ldaxp") ? 2u : 1u); ++i)
    if (d.operands[i].type == ARM64_OP_REG) out.push_back(d.operands[i].reg);
  return out;
}

std::optional<uint64_t> BranchTarget(const cs_insn& in) {
  if (!IsBranch(in.mnemonic)) return std::nullopt;
  const cs_arm64& d = in.detail->arm64;
  if (d.op_count == 0 || d.operands[d.op_count - 1].type != ARM64_OP_IMM) return std::nullopt;
  return static_cast<uint64_t>(d.operands[d.op_count - 1].imm);
}

}  // namespace

std::vector<Instruction> DecodeInstructions(std::span<const std::byte> code, uint64_t address) {
  std::vector<Instruction> out;
  for (size_t at = 0; at + 4 <= code.size(); at += 4) {
    const cs_insn* in = TheDecoder().One(code.subspan(at), address + at);
    if (!in) break;
    out.push_back({address + at, HexBytes(code.subspan(at, 4)), Text(*in), false});
  }
  return out;
}

std::optional<MemoryOperand> MemoryOperandAt(const ModuleMap& modules, uint64_t pc) {
  std::byte code[4];
  if (pc % 4 != 0 || modules.ReadCode(pc, code) != sizeof code) return std::nullopt;
  Decoder& d = TheDecoder();
  const cs_insn* in = d.One(code, pc);
  if (!in) return std::nullopt;
  MemoryOperand m;
  m.text = Text(*in);
  m.mnemonic = in->mnemonic;
  m.is_ret = m.mnemonic == "ret" || m.mnemonic == "retaa" || m.mnemonic == "retab";
  m.is_call = m.mnemonic == "bl" || StartsWith(m.mnemonic, "blr");
  const cs_arm64& detail = in->detail->arm64;
  for (unsigned i = 0; i < detail.op_count; ++i) {
    const cs_arm64_op& op = detail.operands[i];
    if (op.type != ARM64_OP_MEM) continue;
    m.base = GeneralRegister(d.handle(), op.mem.base);
    m.index = GeneralRegister(d.handle(), op.mem.index);
    m.displacement = op.mem.disp;
    // A register index is extended (uxtw, sxtw, sxtx) and shifted
    // (lsl #3, sxtw #2) before it is added: a[i] on an 8-byte element.
    if (m.index) {
      if (op.shift.type == ARM64_SFT_LSL && op.shift.value < 8) m.scale = 1 << op.shift.value;
      m.index_sign_extended = op.ext == ARM64_EXT_SXTW;
    }
    m.writes = WritesMemory(m.mnemonic);
    return m;
  }
  if (m.is_ret || m.is_call) return m;
  return std::nullopt;
}

std::optional<SpinLoop> SpinLoopAt(const ModuleMap& modules, uint64_t pc) {
  constexpr uint64_t kReach = 64;
  if (pc % 4 != 0) return std::nullopt;
  const uint64_t lo = pc - std::min(pc, kReach);
  std::vector<std::byte> code(static_cast<size_t>(pc - lo + kReach));
  code.resize(modules.ReadCode(lo, code) / 4 * 4);
  if (code.size() <= pc - lo) return std::nullopt;
  Decoder& dec = TheDecoder();
  auto one = [&](uint64_t a) { return dec.One(std::span(code).subspan(static_cast<size_t>(a - lo)), a); };
  SpinLoop out;
  for (uint64_t a = pc; a - lo < code.size(); a += 4) {
    const cs_insn* in = one(a);
    if (!in || LeavesFlow(in->mnemonic)) return std::nullopt;
    std::optional<uint64_t> target = BranchTarget(*in);
    if (target && *target <= pc && *target >= lo) {
      out.start = *target;
      out.end = a + 4;
      break;
    }
    if (std::string_view(in->mnemonic) == "b") return std::nullopt;
  }
  if (out.end == 0) return std::nullopt;
  std::optional<cs_arm64_op> polled;
  uint64_t polled_at = 0;
  std::vector<unsigned> written;
  for (uint64_t a = out.start; a < out.end; a += 4) {
    const cs_insn* in = one(a);
    if (!in || LeavesFlow(in->mnemonic) || (std::string_view(in->mnemonic) == "b" && a + 4 != out.end))
      return std::nullopt;
    std::string_view m = in->mnemonic;
    out.pauses |= m == "yield" || m == "wfe";
    const cs_arm64& d = in->detail->arm64;
    for (unsigned i = 0; i < d.op_count; ++i) {
      const cs_arm64_op& op = d.operands[i];
      if (op.type != ARM64_OP_MEM) continue;
      if (WritesMemory(m) || d.writeback) return std::nullopt;
      if (!polled) polled = op, polled_at = a;
      else if (op.mem.base != polled->mem.base || op.mem.index != polled->mem.index || op.mem.disp != polled->mem.disp)
        return std::nullopt;
    }
    for (unsigned r : WrittenRegisters(*in)) written.push_back(r);
  }
  if (!polled) return std::nullopt;
  auto full = [&](unsigned reg) { return GeneralRegister(dec.handle(), reg); };
  for (unsigned r : {polled->mem.base, polled->mem.index}) {
    std::optional<SizedReg> pr = full(r);
    if (r == ARM64_REG_INVALID) continue;
    if (!pr) return std::nullopt;
    for (unsigned w : written)
      if (std::optional<SizedReg> wr = full(w); wr && wr->reg == pr->reg) return std::nullopt;
  }
  const cs_insn* load = one(polled_at);
  if (!load) return std::nullopt;
  out.polled.text = Text(*load);
  out.polled.mnemonic = load->mnemonic;
  out.polled.base = full(polled->mem.base);
  out.polled.index = full(polled->mem.index);
  out.polled.displacement = polled->mem.disp;
  // The width a load reads: its destination register's (w: 4, x: 8), a
  // byte or half-word load's own.
  std::string_view m = load->mnemonic;
  const cs_arm64& d = load->detail->arm64;
  std::optional<SizedReg> dest = d.op_count && d.operands[0].type == ARM64_OP_REG ? full(d.operands[0].reg) : std::nullopt;
  out.width = m.back() == 'b' ? 1 : m.back() == 'h' ? 2 : m.ends_with("sw") ? 4 : dest ? dest->bits / 8 : 8;
  return out;
}

std::vector<Instruction> Disassemble(const ModuleMap& modules, uint64_t pc, bool exact, size_t before, size_t after) {
  if (pc == 0 || pc % 4 != 0) return {};
  // A return address' instruction is the call before it.
  uint64_t current = exact ? pc : pc - 4;
  // Within the function when the symbol table says where it starts and ends.
  PcSymbol sym = modules.Symbolize(current);
  uint64_t first = current - std::min<uint64_t>(before * 4, current);
  uint64_t last = current + after * 4 + 4;
  if (!sym.symbol.empty()) {
    first = std::max(first, current - sym.symbol_offset);
    if (sym.symbol_size > 0) last = std::min(last, current - sym.symbol_offset + sym.symbol_size);
  }
  last = std::max(last, current + 4);
  std::vector<std::byte> code(static_cast<size_t>(last - first));
  // What is readable before the current instruction may be less than asked.
  while (first < current && modules.ReadCode(first, std::span(code).first(4)) != 4) first += 4, code.resize(code.size() - 4);
  code.resize(modules.ReadCode(first, code) / 4 * 4);
  std::vector<Instruction> out;
  for (size_t at = 0; at + 4 <= code.size(); at += 4) {
    const cs_insn* in = TheDecoder().One(std::span(code).subspan(at), first + at);
    Instruction shown{first + at, HexBytes(std::span(code).subspan(at, 4)), in ? Text(*in) : UndecodedText(std::span(code).subspan(at, 4)), first + at == current};
    out.push_back(std::move(shown));
  }
  return out;
}

uint64_t Formatted() { return formatted; }

}  // namespace coroner::a64
