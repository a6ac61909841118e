#include "symbolize/gas_spelling.h"

#include <cctype>
#include <string>

namespace coroner {
namespace {

// AT&T size suffix of an operand of `bits`.
const char* Suffix(unsigned bits) { return bits == 8 ? "b" : bits == 16 ? "w" : bits == 32 ? "l" : "q"; }

const char* Accumulator(unsigned bits) {
  return bits == 8 ? "%al" : bits == 16 ? "%ax" : bits == 32 ? "%eax" : "%rax";
}

bool HasRegisterOperand(const ZydisDecodedInstruction& in, const ZydisDecodedOperand* ops) {
  for (unsigned i = 0; i < in.operand_count_visible; ++i) {
    if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && ZydisRegisterGetClass(ops[i].reg.value) != ZYDIS_REGCLASS_MASK) {
      return true;
    }
  }
  return false;
}

bool IsPrefixWord(std::string_view w) {
  for (std::string_view p : {"lock", "rep", "repe", "repne", "bnd", "notrack", "xacquire", "xrelease"}) {
    if (w == p) return true;
  }
  return false;
}

// Splits "mnemonic operands" at the first space.
void SplitWord(std::string_view s, std::string& word, std::string& rest) {
  size_t sp = s.find(' ');
  word = std::string(s.substr(0, sp));
  rest = sp == std::string_view::npos ? "" : std::string(s.substr(sp + 1));
}

// gas names a string instruction's implicit operands: `rep movsb
// %ds:(%rsi),%es:(%rdi)`, `rep stos %rax,%es:(%rdi)`.
std::string StringInstruction(std::string_view family, const ZydisDecodedInstruction& in) {
  unsigned bits = in.operand_width;
  const char* si = in.address_width == 32 ? "%ds:(%esi)" : "%ds:(%rsi)";
  const char* di = in.address_width == 32 ? "%es:(%edi)" : "%es:(%rdi)";
  std::string f(family);
  if (family == "movs") return f + Suffix(bits) + " " + si + "," + di;
  if (family == "cmps") return f + Suffix(bits) + " " + di + "," + si;
  if (family == "stos") return f + " " + Accumulator(bits) + "," + di;
  if (family == "lods") return f + " " + si + "," + Accumulator(bits);
  if (family == "scas") return f + " " + di + "," + Accumulator(bits);
  return {};
}

// Condition codes: Zydis's `z`, `nbe`, ... are gas's `e`, `a`, ...
std::string GasCondition(const std::string& m) {
  static const char* kCc[][2] = {{"nb", "ae"}, {"nbe", "a"}, {"nl", "ge"}, {"nle", "g"}, {"z", "e"}, {"nz", "ne"}};
  for (std::string_view family : {"j", "set", "cmov"}) {
    if (m.rfind(family, 0) != 0) continue;
    std::string_view cc = std::string_view(m).substr(family.size());
    for (auto& p : kCc) {
      if (cc == p[0]) return std::string(family) + p[1];
    }
  }
  return m;
}

bool IsOneOperandArithmetic(ZydisMnemonic m) {
  static const ZydisMnemonic kOne[] = {
      ZYDIS_MNEMONIC_INC, ZYDIS_MNEMONIC_DEC, ZYDIS_MNEMONIC_NEG, ZYDIS_MNEMONIC_NOT, ZYDIS_MNEMONIC_MUL,
      ZYDIS_MNEMONIC_IMUL, ZYDIS_MNEMONIC_DIV, ZYDIS_MNEMONIC_IDIV, ZYDIS_MNEMONIC_SHL, ZYDIS_MNEMONIC_SHR,
      ZYDIS_MNEMONIC_SAR, ZYDIS_MNEMONIC_ROL, ZYDIS_MNEMONIC_ROR, ZYDIS_MNEMONIC_RCL, ZYDIS_MNEMONIC_RCR};
  for (ZydisMnemonic one : kOne) {
    if (m == one) return true;
  }
  return false;
}

}  // namespace

std::string GasSpelling(std::string_view zydis_text, const ZydisDecodedInstruction& in,
                        const ZydisDecodedOperand* ops) {
  std::string m, rest, prefixes;
  SplitWord(zydis_text, m, rest);
  while (IsPrefixWord(m)) {
    prefixes += (m == "repe" ? "repz" : m == "repne" ? "repnz" : m) + " ";
    std::string tail = rest;
    SplitWord(tail, m, rest);
  }
  const std::string base = ZydisMnemonicGetString(in.mnemonic) ? ZydisMnemonicGetString(in.mnemonic) : m;
  const unsigned visible = in.operand_count_visible;
  const bool legacy_map = in.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;

  if (in.meta.category == ZYDIS_CATEGORY_STRINGOP && base.size() == 5) {
    std::string s = StringInstruction(std::string_view(base).substr(0, 4), in);
    if (!s.empty()) return prefixes + s;
  }
  static const char* kConversions[][2] = {{"cdqe", "cltq"}, {"cwde", "cwtl"}, {"cdq", "cltd"},
                                          {"cqo", "cqto"},  {"cbw", "cbtw"},  {"cwd", "cwtd"}};
  for (auto& c : kConversions) {
    if (base == c[0]) return prefixes + c[1];
  }
  if (in.mnemonic == ZYDIS_MNEMONIC_RET && in.raw.prefix_count == 1 && in.raw.prefixes[0].value == 0xf3) {
    return "repz " + std::string(zydis_text);
  }
  if (in.mnemonic == ZYDIS_MNEMONIC_NOP && in.length == 2 && in.raw.prefix_count == 1 &&
      in.raw.prefixes[0].value == 0x66) {
    return prefixes + "xchg %ax,%ax";
  }

  if ((in.mnemonic == ZYDIS_MNEMONIC_MOVZX || in.mnemonic == ZYDIS_MNEMONIC_MOVSX ||
       in.mnemonic == ZYDIS_MNEMONIC_MOVSXD) &&
      visible >= 2) {
    m = std::string(in.mnemonic == ZYDIS_MNEMONIC_MOVZX ? "movz" : "movs") + Suffix(ops[1].size) + Suffix(ops[0].size);
  } else if (in.mnemonic == ZYDIS_MNEMONIC_NOP && visible == 2) {
    // Padding `nopw 0x0(%rax,%rax,1)`: gas shows the memory operand only and
    // spells the padding prefixes (0x66 data16, 0x2e cs), one 0x66 being
    // the operand size.
    bool size_taken = ops[0].size != 16;
    std::string spelled;
    for (int i = static_cast<int>(in.raw.prefix_count) - 1; i >= 0; --i) {
      uint8_t p = in.raw.prefixes[i].value;
      if (p == 0x66 && !size_taken) {
        size_taken = true;
        continue;
      }
      if (p == 0x66 || p == 0x2e) spelled = std::string(p == 0x66 ? "data16 " : "cs ") + spelled;
    }
    prefixes += spelled;
    m = std::string("nop") + Suffix(ops[0].size);
    rest = rest.substr(rest.find(',') + 1);
  } else if (in.mnemonic == ZYDIS_MNEMONIC_MOV &&
             (in.raw.imm[0].size == 64 || (legacy_map && in.opcode >= 0xa0 && in.opcode <= 0xa3))) {
    m = "movabs";
  } else if (m.size() > base.size() && m.rfind(base, 0) == 0 && HasRegisterOperand(in, ops)) {
    m = base;  // gas adds a size suffix only where no register operand gives the size
  } else if (m == base && !HasRegisterOperand(in, ops) && visible >= 1 && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
             IsOneOperandArithmetic(in.mnemonic)) {
    m += Suffix(ops[0].size);  // `incl (%rax)`: the size is the instruction's meaning
  }
  m = GasCondition(m);

  // vpcmp{b,w,d,q,ub,...} with a predicate immediate: gas's named forms.
  static const char* kPredicates[] = {"eq", "lt", "le", "false", "neq", "nlt", "nle", "true"};
  if (m.rfind("vpcmp", 0) == 0 && rest.size() > 5 && rest.rfind("$0x", 0) == 0 && rest[4] == ',' && rest[3] >= '0' &&
      rest[3] <= '7') {
    m = "vpcmp" + std::string(kPredicates[rest[3] - '0']) + m.substr(5);
    rest = rest.substr(5);
  }
  // Shift by one (opcodes d0, d1): the 1 is implicit.
  if (legacy_map && (in.opcode == 0xd0 || in.opcode == 0xd1) && rest.rfind("$0x1,", 0) == 0) rest = rest.substr(5);
  // Indirect branches are starred.
  if ((in.meta.category == ZYDIS_CATEGORY_CALL || in.meta.category == ZYDIS_CATEGORY_UNCOND_BR) && visible > 0 &&
      ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE) {
    rest = "*" + rest;
  }
  // An encoded zero displacement is shown: `0x0(%r13)`.
  for (unsigned i = 0; i < visible; ++i) {
    if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.disp.has_displacement && ops[i].mem.disp.value == 0 &&
        in.raw.disp.size > 0) {
      if (size_t p = rest.find('('); p != std::string::npos) rest.insert(p, "0x0");
      break;
    }
  }
  // Operands as `%r13,%rdi` and `%k4{%k1}`, without spaces; x87 registers
  // as `%st(1)`.
  std::string out;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == ' ' && (out.empty() || out.back() == ',' || (i + 1 < rest.size() && rest[i + 1] == '{'))) continue;
    if (rest.compare(i, 3, "%st") == 0 && i + 3 < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i + 3]))) {
      out += "%st(";
      out += rest[i + 3];
      out += ')';
      i += 3;
      continue;
    }
    out += rest[i];
  }
  return prefixes + m + (out.empty() ? "" : " " + out);
}

}  // namespace coroner
