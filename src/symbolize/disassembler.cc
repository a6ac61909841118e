#include "symbolize/disassembler.h"

#include <Zydis/Zydis.h>

#include <algorithm>

#include "core/byte_view.h"
#include "symbolize/a64_disassembler.h"
#include "symbolize/gas_spelling.h"

namespace coroner {
namespace {

thread_local uint64_t formatted = 0;

// One decoded instruction: Zydis's decoding, gdb's words.
struct Decoded {
  ZydisDecodedInstruction in;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  std::string text;
};

// An x86-64 decoder and an AT&T formatter set to write numbers as gdb does
// (lowercase hex, no padding, rip-relative operands relative). Used one per
// thread (thread_local).
class X86Decoder {
 public:
  X86Decoder() {
    ok_ = ZYAN_SUCCESS(ZydisDecoderInit(&decoder_, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) &&
          ZYAN_SUCCESS(ZydisFormatterInit(&formatter_, ZYDIS_FORMATTER_STYLE_ATT));
    if (!ok_) return;
    ZydisFormatterSetProperty(&formatter_, ZYDIS_FORMATTER_PROP_FORCE_RELATIVE_RIPREL, ZYAN_TRUE);
    ZydisFormatterSetProperty(&formatter_, ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE);
    ZydisFormatterSetProperty(&formatter_, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&formatter_, ZYDIS_FORMATTER_PROP_ADDR_PADDING_RELATIVE, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&formatter_, ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&formatter_, ZYDIS_FORMATTER_PROP_DISP_PADDING, ZYDIS_PADDING_DISABLED);
    ZydisFormatterSetProperty(&formatter_, ZYDIS_FORMATTER_PROP_IMM_SIGNEDNESS, ZYDIS_SIGNEDNESS_UNSIGNED);
  }

  // The instruction at the start of `code`, which is at `address`; its
  // text only when `format` asks for it.
  std::optional<Decoded> DecodeOne(std::span<const std::byte> code, uint64_t address, bool format = true) const {
    if (!ok_ || code.empty()) return std::nullopt;
    Decoded d;
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder_, code.data(), code.size(), &d.in, d.ops))) return std::nullopt;
    if (!format) return d;
    char buf[256];
    if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&formatter_, &d.in, d.ops, d.in.operand_count_visible, buf,
                                                      sizeof buf, address, nullptr))) {
      return std::nullopt;
    }
    d.text = GasSpelling(buf, d.in, d.ops);
    ++formatted;
    return d;
  }

  // Where each instruction from the start of `code` begins, until bytes
  // that are no instruction, and where the last ends: lengths only, no
  // operand decoded, nothing formatted (a report prints a few instructions
  // of a function decoded from its start).
  std::vector<uint64_t> Starts(std::span<const std::byte> code, uint64_t address) const {
    std::vector<uint64_t> out;
    if (!ok_) return out;
    size_t at = 0;
    ZydisDecodedInstruction in;
    while (at < code.size() &&
           ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder_, nullptr, code.data() + at, code.size() - at, &in))) {
      out.push_back(address + at);
      at += in.length;
    }
    out.push_back(address + at);
    return out;
  }

  // The instruction at `address`, `code` starting there, as a report shows it.
  std::optional<Instruction> Format(std::span<const std::byte> code, uint64_t address) const {
    std::optional<Decoded> d = DecodeOne(code, address);
    if (!d) return std::nullopt;
    Instruction in;
    in.address = address;
    in.bytes = HexBytes(code.first(d->in.length));
    in.text = std::move(d->text);
    return in;
  }

  // Instructions from the start of `code` until one does not decode.
  std::vector<Instruction> Decode(std::span<const std::byte> code, uint64_t address) const {
    std::vector<Instruction> out;
    size_t at = 0;
    while (at < code.size()) {
      std::optional<Decoded> d = DecodeOne(code.subspan(at), address + at);
      if (!d) break;
      Instruction in;
      in.address = address + at;
      in.bytes = HexBytes(code.subspan(at, d->in.length));
      in.text = std::move(d->text);
      out.push_back(std::move(in));
      at += d->in.length;
    }
    return out;
  }

 private:
  ZydisDecoder decoder_{};
  ZydisFormatter formatter_{};
  bool ok_ = false;
};

const X86Decoder& Decoder() {
  thread_local X86Decoder decoder;
  return decoder;
}

std::vector<std::byte> Read(const ModuleMap& modules, uint64_t from, size_t len) {
  std::vector<std::byte> code(len);
  code.resize(modules.ReadCode(from, code));
  return code;
}

// SSE/AVX accesses that fault on a misaligned operand.
bool NeedsAlignment(ZydisMnemonic m) {
  static const ZydisMnemonic kAligned[] = {
      ZYDIS_MNEMONIC_MOVAPS,    ZYDIS_MNEMONIC_MOVAPD,    ZYDIS_MNEMONIC_MOVDQA,    ZYDIS_MNEMONIC_MOVNTPS,
      ZYDIS_MNEMONIC_MOVNTPD,   ZYDIS_MNEMONIC_MOVNTDQ,   ZYDIS_MNEMONIC_MOVNTDQA,  ZYDIS_MNEMONIC_VMOVAPS,
      ZYDIS_MNEMONIC_VMOVAPD,   ZYDIS_MNEMONIC_VMOVDQA,   ZYDIS_MNEMONIC_VMOVDQA32, ZYDIS_MNEMONIC_VMOVDQA64,
      ZYDIS_MNEMONIC_VMOVNTPS,  ZYDIS_MNEMONIC_VMOVNTPD,  ZYDIS_MNEMONIC_VMOVNTDQ,  ZYDIS_MNEMONIC_VMOVNTDQA,
      ZYDIS_MNEMONIC_FXSAVE,    ZYDIS_MNEMONIC_FXSAVE64,  ZYDIS_MNEMONIC_FXRSTOR,   ZYDIS_MNEMONIC_FXRSTOR64};
  for (ZydisMnemonic a : kAligned) {
    if (m == a) return true;
  }
  return false;
}

// A general register (or rip) of a memory operand, at its width.
std::optional<SizedReg> GeneralRegister(ZydisRegister r) {
  if (r == ZYDIS_REGISTER_NONE) return std::nullopt;
  ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
  const char* name = ZydisRegisterGetString(full);
  std::optional<Reg> reg = name ? RegFromName(name) : std::nullopt;
  if (!reg) return std::nullopt;
  return SizedReg{*reg, static_cast<uint8_t>(ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, r))};
}

// A relative branch's target; nullopt for another instruction or an
// indirect branch.
std::optional<uint64_t> BranchTarget(const Decoded& d, uint64_t address) {
  ZydisInstructionCategory c = d.in.meta.category;
  if (c != ZYDIS_CATEGORY_COND_BR && c != ZYDIS_CATEGORY_UNCOND_BR) return std::nullopt;
  const ZydisDecodedOperand& op = d.ops[0];
  if (op.type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !op.imm.is_relative) return std::nullopt;
  return address + d.in.length + static_cast<uint64_t>(op.imm.value.s);
}

bool SameMemory(const ZydisDecodedOperand& a, const ZydisDecodedOperand& b) {
  return a.mem.base == b.mem.base && a.mem.index == b.mem.index && a.mem.scale == b.mem.scale &&
         a.mem.disp.value == b.mem.disp.value && a.mem.segment == b.mem.segment && a.size == b.size;
}

}  // namespace

uint64_t InstructionsFormatted() { return formatted + a64::Formatted(); }

std::vector<Instruction> DecodeInstructions(std::span<const std::byte> code, uint64_t address, Arch arch) {
  if (arch == Arch::kAarch64) return a64::DecodeInstructions(code, address);
  return Decoder().Decode(code, address);
}

std::optional<MemoryOperand> MemoryOperandAt(const ModuleMap& modules, uint64_t pc) {
  if (modules.arch() == Arch::kAarch64) return a64::MemoryOperandAt(modules, pc);
  std::byte code[ZYDIS_MAX_INSTRUCTION_LENGTH];
  size_t n = modules.ReadCode(pc, code);
  std::optional<Decoded> d = Decoder().DecodeOne(std::span(code, n), pc);
  if (!d) return std::nullopt;
  MemoryOperand m;
  m.text = d->text;
  m.mnemonic = m.text.substr(0, m.text.find(' '));
  m.is_ret = d->in.meta.category == ZYDIS_CATEGORY_RET;
  m.is_call = d->in.meta.category == ZYDIS_CATEGORY_CALL;
  m.needs_alignment = NeedsAlignment(d->in.mnemonic);
  // The explicit memory operand; a string instruction's are implicit
  // (`rep movsb`: the destination first, then the source). A call's or
  // push's implicit stack slot is not the operand that names a bad pointer.
  const bool string_op = d->in.meta.category == ZYDIS_CATEGORY_STRINGOP;
  const unsigned count = string_op ? d->in.operand_count : d->in.operand_count_visible;
  for (unsigned i = 0; i < count; ++i) {
    const ZydisDecodedOperand& op = d->ops[i];
    if (op.type != ZYDIS_OPERAND_TYPE_MEMORY || op.mem.type != ZYDIS_MEMOP_TYPE_MEM) continue;
    m.base = GeneralRegister(op.mem.base);
    m.index = GeneralRegister(op.mem.index);
    m.scale = op.mem.index == ZYDIS_REGISTER_NONE ? 1 : op.mem.scale;
    m.displacement = op.mem.disp.has_displacement ? op.mem.disp.value : 0;
    m.writes = (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
    return m;
  }
  if (m.is_ret || m.is_call) return m;
  return std::nullopt;
}

std::optional<SpinLoop> SpinLoopAt(const ModuleMap& modules, uint64_t pc) {
  if (modules.arch() == Arch::kAarch64) return a64::SpinLoopAt(modules, pc);
  constexpr uint64_t kReach = 64;
  const uint64_t lo = pc - std::min(pc, kReach);
  std::vector<std::byte> code = Read(modules, lo, static_cast<size_t>(pc - lo + kReach) + ZYDIS_MAX_INSTRUCTION_LENGTH);
  if (code.size() <= pc - lo) return std::nullopt;
  auto at = [&](uint64_t a) { return std::span(code).subspan(static_cast<size_t>(a - lo)); };
  // Forward from pc to the first branch back to pc or before it: the
  // innermost loop around pc. Flow that leaves first (a jump forward, a
  // return, a call) is no spin.
  SpinLoop out;
  for (uint64_t a = pc; a < pc + kReach && a - lo < code.size();) {
    std::optional<Decoded> d = Decoder().DecodeOne(at(a), a, false);
    if (!d) return std::nullopt;
    ZydisInstructionCategory c = d->in.meta.category;
    if (c == ZYDIS_CATEGORY_RET || c == ZYDIS_CATEGORY_CALL || c == ZYDIS_CATEGORY_SYSCALL ||
        c == ZYDIS_CATEGORY_INTERRUPT)
      return std::nullopt;
    std::optional<uint64_t> target = BranchTarget(*d, a);
    if ((c == ZYDIS_CATEGORY_COND_BR || c == ZYDIS_CATEGORY_UNCOND_BR) && !target) return std::nullopt;
    if (target && *target <= pc && *target >= lo) {
      out.start = *target;
      out.end = a + d->in.length;
      break;
    }
    if (c == ZYDIS_CATEGORY_UNCOND_BR) return std::nullopt;
    a += d->in.length;
  }
  if (out.end == 0) return std::nullopt;
  // The loop decoded from its start must pass through pc in step.
  bool through_pc = false;
  std::optional<ZydisDecodedOperand> polled;
  uint64_t polled_at = 0;
  std::vector<ZydisRegister> written;
  for (uint64_t a = out.start; a < out.end;) {
    std::optional<Decoded> d = Decoder().DecodeOne(at(a), a, false);
    if (!d || a + d->in.length > out.end) return std::nullopt;
    through_pc |= a == pc;
    ZydisInstructionCategory c = d->in.meta.category;
    if (c == ZYDIS_CATEGORY_RET || c == ZYDIS_CATEGORY_CALL || c == ZYDIS_CATEGORY_SYSCALL ||
        c == ZYDIS_CATEGORY_INTERRUPT || (c == ZYDIS_CATEGORY_UNCOND_BR && a + d->in.length != out.end))
      return std::nullopt;
    out.pauses |= d->in.mnemonic == ZYDIS_MNEMONIC_PAUSE;
    for (unsigned i = 0; i < d->in.operand_count; ++i) {
      const ZydisDecodedOperand& op = d->ops[i];
      if (op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.type == ZYDIS_MEMOP_TYPE_MEM) {
        if (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) return std::nullopt;
        if (!polled) polled = op, polled_at = a;
        else if (!SameMemory(*polled, op)) return std::nullopt;
      } else if (op.type == ZYDIS_OPERAND_TYPE_REGISTER && (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)) {
        // The general registers only: every branch writes rip, and flags
        // have no enclosing register.
        ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op.reg.value);
        if (full != ZYDIS_REGISTER_NONE && full != ZYDIS_REGISTER_RIP) written.push_back(full);
      }
    }
    a += d->in.length;
  }
  // A thread-local word (fs, gs) has an address the registers do not give.
  if (!through_pc || !polled || polled->mem.segment == ZYDIS_REGISTER_FS || polled->mem.segment == ZYDIS_REGISTER_GS)
    return std::nullopt;
  for (ZydisRegister r : {polled->mem.base, polled->mem.index}) {
    if (r == ZYDIS_REGISTER_NONE) continue;
    ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
    if (std::find(written.begin(), written.end(), full) != written.end()) return std::nullopt;
  }
  std::optional<Decoded> load = Decoder().DecodeOne(at(polled_at), polled_at);
  if (!load) return std::nullopt;
  out.polled.text = load->text;
  out.polled.mnemonic = out.polled.text.substr(0, out.polled.text.find(' '));
  out.polled.base = GeneralRegister(polled->mem.base);
  out.polled.index = GeneralRegister(polled->mem.index);
  out.polled.scale = polled->mem.index == ZYDIS_REGISTER_NONE ? 1 : polled->mem.scale;
  out.polled.displacement = polled->mem.disp.has_displacement ? polled->mem.disp.value : 0;
  out.width = polled->size / 8;
  if (polled->mem.base == ZYDIS_REGISTER_RIP && polled->mem.index == ZYDIS_REGISTER_NONE)
    out.address = polled_at + load->in.length + static_cast<uint64_t>(out.polled.displacement);
  else if (polled->mem.base == ZYDIS_REGISTER_NONE && polled->mem.index == ZYDIS_REGISTER_NONE)
    out.address = static_cast<uint64_t>(out.polled.displacement);
  return out;
}

BoundaryAt InstructionBoundaryAt(const ModuleMap& modules, uint64_t pc) {
  BoundaryAt out;
  if (modules.arch() == Arch::kAarch64) {
    // Fixed-size instructions: a pc off their grid is inside one.
    out.where = pc % 4 == 0 ? InstructionBoundary::kStart : InstructionBoundary::kInside;
    if (out.where == InstructionBoundary::kInside) {
      std::byte code[4];
      uint64_t at = pc & ~uint64_t{3};
      if (modules.ReadCode(at, code) != sizeof code) return {};
      auto in = a64::DecodeInstructions(code, at);
      if (in.empty()) return {};
      out.straddling = in.front();
    }
    return out;
  }
  constexpr uint64_t kMaxFunction = 64 * 1024;
  PcSymbol sym = modules.Symbolize(pc);
  if (sym.symbol.empty() || sym.symbol_size == 0 || sym.symbol_offset >= sym.symbol_size ||
      sym.symbol_offset > kMaxFunction)
    return out;
  uint64_t start = pc - sym.symbol_offset;
  std::vector<std::byte> code = Read(modules, start, static_cast<size_t>(sym.symbol_offset) + 15);
  if (code.size() < sym.symbol_offset + 1) return out;
  std::vector<uint64_t> starts = Decoder().Starts(code, start);
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    uint64_t at = starts[k], end = starts[k + 1];
    if (at == pc) {
      out.where = InstructionBoundary::kStart;
      return out;
    }
    if (at < pc && pc < end) {
      std::optional<Instruction> in = Decoder().Format(std::span(code).subspan(at - start), at);
      if (!in) return out;
      out.where = InstructionBoundary::kInside;
      out.straddling = std::move(*in);
      return out;
    }
    if (at > pc) break;
  }
  return out;  // the decode stopped short of pc: bytes that are no instruction
}

std::vector<Instruction> Disassemble(const ModuleMap& modules, uint64_t pc, bool exact, size_t before, size_t after) {
  // Whatever bytes are at pc are shown, code or not (a jump into data runs
  // the data as instructions, and gdb shows it so too).
  if (pc == 0) return {};
  if (modules.arch() == Arch::kAarch64) return a64::Disassemble(modules, pc, exact, before, after);
  constexpr uint64_t kMaxFunctionPrefix = 4096;
  constexpr size_t kTail = 16 * 15;  // room for `after` instructions of up to 15 bytes
  PcSymbol sym = modules.Symbolize(exact ? pc : pc - 1);
  uint64_t start = pc;
  if (!sym.symbol.empty() && sym.symbol_offset <= kMaxFunctionPrefix) start = (exact ? pc : pc - 1) - sym.symbol_offset;
  std::vector<std::byte> function = Read(modules, start, static_cast<size_t>(pc - start) + kTail);
  std::vector<uint64_t> starts = Decoder().Starts(function, start);
  // The current instruction: at pc, or the call ending at pc.
  size_t n = starts.empty() ? 0 : starts.size() - 1;  // instructions decoded
  size_t i = 0;
  while (i < n && !(exact ? starts[i] == pc : starts[i + 1] == pc)) ++i;
  if (i < n) {
    size_t first = i > before ? i - before : 0;
    size_t last = std::min(n, i + after + 1);
    // Stop at the end of the function when the symbol table gives its size.
    if (start != pc && sym.symbol_size > 0) {
      while (last > i + 1 && starts[last - 1] >= start + sym.symbol_size) --last;
    }
    // Only the instructions shown are formatted.
    std::vector<Instruction> shown;
    for (size_t k = first; k < last; ++k) {
      std::optional<Instruction> in = Decoder().Format(std::span(function).subspan(starts[k] - start), starts[k]);
      if (!in) break;
      in->current = k == i;
      shown.push_back(std::move(*in));
    }
    return shown;
  }
  // Out of step (data in code, a wrong symbol): decode from pc alone.
  std::vector<std::byte> code = Read(modules, pc, kTail);
  std::vector<Instruction> all = Decoder().Decode(code, pc);
  if (all.empty() && exact && !code.empty()) {
    // Bytes that are no instruction (a jump into data): gdb's "(bad)".
    Instruction raw;
    raw.address = pc;
    raw.bytes = HexBytes(std::span(code).first(1));
    raw.text = "(bad)";
    raw.current = true;
    return {raw};
  }
  if (all.empty() || !exact) {
    if (all.size() > after) all.resize(after);
    return all;
  }
  all.front().current = true;
  size_t last = std::min(all.size(), after + 1);
  // Stop at the end of the function when the symbol table gives its size.
  if (start != pc && sym.symbol_size > 0) {
    while (last > 1 && all[last - 1].address >= start + sym.symbol_size) --last;
  }
  all.resize(last);
  return all;
}

}  // namespace coroner
