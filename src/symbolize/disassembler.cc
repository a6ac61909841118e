#include "symbolize/disassembler.h"

#include <capstone/capstone.h>

#include <algorithm>

#include "core/byte_view.h"

namespace coroner {
namespace {

// "mov 8(%rax), %rax": mnemonic and operands as Capstone prints them.
std::string InstructionText(const cs_insn& insn) {
  return insn.op_str[0] ? std::string(insn.mnemonic) + " " + insn.op_str : std::string(insn.mnemonic);
}

// An x86-64 Capstone handle in AT&T syntax; `detail` adds operand details.
// Used one per thread (thread_local).
class Capstone {
 public:
  explicit Capstone(bool detail) {
    ok_ = cs_open(CS_ARCH_X86, CS_MODE_64, &handle_) == CS_ERR_OK;
    if (ok_) cs_option(handle_, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
    if (ok_ && detail) cs_option(handle_, CS_OPT_DETAIL, CS_OPT_ON);
  }
  ~Capstone() {
    if (ok_) cs_close(&handle_);
  }
  Capstone(const Capstone&) = delete;
  Capstone& operator=(const Capstone&) = delete;

  std::vector<Instruction> Decode(const std::vector<std::byte>& code, uint64_t address) const {
    std::vector<Instruction> out;
    if (!ok_ || code.empty()) return out;
    cs_insn* insn = nullptr;
    size_t n = cs_disasm(handle_, reinterpret_cast<const uint8_t*>(code.data()), code.size(), address, 0, &insn);
    for (size_t i = 0; i < n; ++i) {
      Instruction in;
      in.address = insn[i].address;
      in.bytes = HexBytes(std::as_bytes(std::span(insn[i].bytes, insn[i].size)));
      in.text = InstructionText(insn[i]);
      out.push_back(std::move(in));
    }
    if (insn) cs_free(insn, n);
    return out;
  }

  bool ok() const { return ok_; }
  csh handle() const { return handle_; }

 private:
  csh handle_ = 0;
  bool ok_ = false;
};

std::vector<std::byte> Read(const ModuleMap& modules, uint64_t from, size_t len) {
  std::vector<std::byte> code(len);
  code.resize(modules.ReadCode(from, code));
  return code;
}

}  // namespace

std::optional<MemoryOperand> MemoryOperandAt(const ModuleMap& modules, uint64_t pc) {
  std::byte code[16];
  size_t n = modules.ReadCode(pc, code);
  if (n == 0) return std::nullopt;
  thread_local Capstone detailed(true);
  if (!detailed.ok()) return std::nullopt;
  csh h = detailed.handle();
  cs_insn* insn = nullptr;
  std::optional<MemoryOperand> result;
  if (cs_disasm(h, reinterpret_cast<const uint8_t*>(code), n, pc, 1, &insn) == 1) {
    MemoryOperand m;
    m.mnemonic = insn->mnemonic;
    m.text = InstructionText(*insn);
    m.is_ret = insn->id == X86_INS_RET;
    m.is_call = insn->id == X86_INS_CALL;
    static const unsigned kAligned[] = {X86_INS_MOVAPS, X86_INS_MOVAPD, X86_INS_MOVDQA, X86_INS_MOVNTPS,
                                        X86_INS_MOVNTDQ, X86_INS_VMOVAPS, X86_INS_VMOVAPD, X86_INS_VMOVDQA,
                                        X86_INS_FXSAVE, X86_INS_FXRSTOR};
    for (unsigned id : kAligned) m.needs_alignment |= insn->id == id;
    const cs_x86& x86 = insn->detail->x86;
    for (uint8_t i = 0; i < x86.op_count; ++i) {
      if (x86.operands[i].type != X86_OP_MEM) continue;
      const x86_op_mem& mem = x86.operands[i].mem;
      if (mem.base != X86_REG_INVALID) m.base = cs_reg_name(h, mem.base);
      if (mem.index != X86_REG_INVALID) m.index = cs_reg_name(h, mem.index);
      m.scale = mem.scale;
      m.displacement = mem.disp;
      m.writes = (x86.operands[i].access & CS_AC_WRITE) != 0;
      result = m;
      break;
    }
    if (!result && (m.is_ret || m.is_call)) result = m;
  }
  if (insn) cs_free(insn, 1);
  return result;
}

std::vector<Instruction> Disassemble(const ModuleMap& modules, uint64_t pc, bool exact, size_t before, size_t after) {
  // Whatever bytes are at pc are shown, code or not (a jump into data runs
  // the data as instructions, and gdb shows it so too).
  if (pc == 0) return {};
  thread_local Capstone capstone(false);
  constexpr uint64_t kMaxFunctionPrefix = 4096;
  constexpr size_t kTail = 16 * 15;  // room for `after` instructions of up to 15 bytes
  PcSymbol sym = modules.Symbolize(exact ? pc : pc - 1);
  uint64_t start = pc;
  if (!sym.symbol.empty() && sym.symbol_offset <= kMaxFunctionPrefix) start = (exact ? pc : pc - 1) - sym.symbol_offset;
  std::vector<Instruction> all = capstone.Decode(Read(modules, start, static_cast<size_t>(pc - start) + kTail), start);
  // The current instruction: at pc, or the call ending at pc.
  auto cur = std::find_if(all.begin(), all.end(), [&](const Instruction& in) {
    return exact ? in.address == pc : in.address + in.bytes.size() / 2 == pc;
  });
  if (cur == all.end()) {
    // Out of step (data in code, a wrong symbol): decode from pc alone.
    std::vector<std::byte> code = Read(modules, pc, kTail);
    all = capstone.Decode(code, pc);
    if (all.empty() && exact && !code.empty()) {
      // Capstone 4 does not know every instruction (some AVX-512 forms):
      // show the bytes, as gdb shows "(bad)".
      Instruction raw;
      raw.address = pc;
      raw.bytes = HexBytes(std::span(code).first(std::min<size_t>(code.size(), 8)));
      raw.text = "(not decoded)";
      raw.current = true;
      return {raw};
    }
    cur = all.begin();
    if (cur == all.end() || !exact) {
      for (auto& in : all) in.current = false;
      if (all.size() > after) all.resize(after);
      return all;
    }
  }
  cur->current = true;
  size_t i = static_cast<size_t>(cur - all.begin());
  size_t first = i > before ? i - before : 0;
  size_t last = std::min(all.size(), i + after + 1);
  // Stop at the end of the function when the symbol table gives its size.
  if (start != pc && sym.symbol_size > 0) {
    while (last > i + 1 && all[last - 1].address >= start + sym.symbol_size) --last;
  }
  return {all.begin() + static_cast<long>(first), all.begin() + static_cast<long>(last)};
}

}  // namespace coroner
