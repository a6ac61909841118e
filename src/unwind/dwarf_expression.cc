#include "unwind/dwarf_expression.h"

#include <dwarf.h>

#include <utility>

namespace coroner {

std::optional<int> RegisterLocation(const Dwarf_Op& op) {
  if (op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) return op.atom - DW_OP_reg0;
  if (op.atom == DW_OP_regx && op.number < 1024) return static_cast<int>(op.number);
  return std::nullopt;
}

std::string DwarfRegisterName(int reg, Arch arch) {
  if (arch == Arch::kAarch64) {
    if (reg >= 0 && reg < 31) return "x" + std::to_string(reg);
    if (reg == 31) return "sp";
  } else {
    static const char* const kNames[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
                                         "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
    if (reg >= 0 && reg < 17) return kNames[reg];
  }
  return "a register coroner does not track";
}

ExpressionResult EvaluateExpression(const Dwarf_Op* ops, size_t nops, const ExpressionContext& ctx) {
  using Kind = ExpressionResult::Kind;
  constexpr size_t kMaxStack = 64;
  uint64_t stack[kMaxStack];
  size_t sp = 0;
  ExpressionResult fail;
  auto failed = [&fail](const char* why) {
    fail.error = why;
    return fail;
  };
  auto push = [&](uint64_t v) {
    if (sp == kMaxStack) return false;
    stack[sp++] = v;
    return true;
  };
  auto reg = [&](uint64_t r) -> std::optional<uint64_t> {
    if (!ctx.regs || r >= ctx.regs->size()) return std::nullopt;
    return (*ctx.regs)[r];
  };
  auto read = [&](uint64_t addr, size_t size) -> std::optional<uint64_t> {
    if (!ctx.memory || size == 0 || size > 8) return std::nullopt;
    if (size == 8) return ctx.memory->Read64(addr);
    std::byte b[8] = {};
    if (ctx.memory->Read(addr, std::span(b, size)) != size) return std::nullopt;
    uint64_t v = 0;
    for (size_t i = 0; i < size; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
    return v;
  };
  // A register location: the object is the register itself.
  auto register_location = [&](uint64_t r) {
    auto v = reg(r);
    ExpressionResult out;
    out.reg = static_cast<int>(r);
    if (!v) {
      out.error = "its register is not known in this frame";
      return out;
    }
    out.kind = Kind::kValue;
    out.value = *v;
    return out;
  };
  bool stack_value = false;
  for (size_t i = 0; i < nops; ++i) {
    const Dwarf_Op& op = ops[i];
    uint8_t a = op.atom;
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
      if (!push(a - DW_OP_lit0)) return failed("expression stack overflow");
    } else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
      auto v = reg(a - DW_OP_breg0);
      if (!v) return failed("its base register is not known in this frame");
      if (!push(*v + static_cast<int64_t>(op.number))) return failed("expression stack overflow");
    } else if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
      return register_location(a - DW_OP_reg0);
    } else {
      switch (a) {
        case DW_OP_regx:
          return register_location(op.number);
        case DW_OP_bregx: {
          auto v = reg(op.number);
          if (!v) return failed("its base register is not known in this frame");
          if (!push(*v + static_cast<int64_t>(op.number2))) return failed("expression stack overflow");
          break;
        }
        case DW_OP_call_frame_cfa:
          if (!ctx.cfa) return failed("the frame's CFA is not known");
          if (!push(*ctx.cfa)) return failed("expression stack overflow");
          break;
        case DW_OP_fbreg:
          if (!ctx.frame_base) return failed("the frame base is not known");
          if (!push(*ctx.frame_base + static_cast<int64_t>(op.number))) return failed("expression stack overflow");
          break;
        case DW_OP_addr:
          if (!push(op.number + ctx.address_bias)) return failed("expression stack overflow");
          break;
        case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u: case DW_OP_const8u: case DW_OP_constu:
        case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s: case DW_OP_const8s: case DW_OP_consts:
          if (!push(op.number)) return failed("expression stack overflow");
          break;
        case DW_OP_plus_uconst:
          if (sp < 1) return failed("malformed expression");
          stack[sp - 1] += op.number;
          break;
        case DW_OP_deref: case DW_OP_deref_size: {
          if (sp < 1) return failed("malformed expression");
          size_t size = a == DW_OP_deref ? 8 : static_cast<size_t>(op.number);
          auto v = read(stack[sp - 1], size);
          if (!v) return failed("memory it reads is not in the core");
          stack[sp - 1] = *v;
          break;
        }
        case DW_OP_dup:
          if (sp < 1 || !push(stack[sp - 1])) return failed("malformed expression");
          break;
        case DW_OP_over:
          if (sp < 2 || !push(stack[sp - 2])) return failed("malformed expression");
          break;
        case DW_OP_drop:
          if (sp < 1) return failed("malformed expression");
          --sp;
          break;
        case DW_OP_swap:
          if (sp < 2) return failed("malformed expression");
          std::swap(stack[sp - 1], stack[sp - 2]);
          break;
        case DW_OP_neg:
          if (sp < 1) return failed("malformed expression");
          stack[sp - 1] = 0 - stack[sp - 1];
          break;
        case DW_OP_not:
          if (sp < 1) return failed("malformed expression");
          stack[sp - 1] = ~stack[sp - 1];
          break;
        case DW_OP_plus: case DW_OP_minus: case DW_OP_and: case DW_OP_or: case DW_OP_xor:
        case DW_OP_shl: case DW_OP_shr: case DW_OP_shra: case DW_OP_mul:
        case DW_OP_ge: case DW_OP_gt: case DW_OP_le: case DW_OP_lt: case DW_OP_eq: case DW_OP_ne: {
          if (sp < 2) return failed("malformed expression");
          uint64_t b = stack[--sp], x = stack[sp - 1];
          int64_t sx = static_cast<int64_t>(x), sb = static_cast<int64_t>(b);
          uint64_t r = 0;
          switch (a) {
            case DW_OP_plus: r = x + b; break;
            case DW_OP_minus: r = x - b; break;
            case DW_OP_and: r = x & b; break;
            case DW_OP_or: r = x | b; break;
            case DW_OP_xor: r = x ^ b; break;
            case DW_OP_shl: r = b >= 64 ? 0 : x << b; break;
            case DW_OP_shr: r = b >= 64 ? 0 : x >> b; break;
            case DW_OP_shra: r = static_cast<uint64_t>(b >= 64 ? (sx < 0 ? -1 : 0) : sx >> b); break;
            case DW_OP_mul: r = x * b; break;
            case DW_OP_ge: r = sx >= sb; break;
            case DW_OP_gt: r = sx > sb; break;
            case DW_OP_le: r = sx <= sb; break;
            case DW_OP_lt: r = sx < sb; break;
            case DW_OP_eq: r = x == b; break;
            case DW_OP_ne: r = x != b; break;
          }
          stack[sp - 1] = r;
          break;
        }
        case DW_OP_stack_value:
          stack_value = true;
          break;
        case DW_OP_nop:
          break;
        case DW_OP_entry_value: case DW_OP_GNU_entry_value: {
          std::optional<uint64_t> v = ctx.entry_value ? ctx.entry_value(op) : std::nullopt;
          if (!v) return failed("its value at the function's entry (DW_OP_entry_value) is not recovered");
          if (!push(*v)) return failed("expression stack overflow");
          break;
        }
        case DW_OP_implicit_value:
          return failed("DW_OP_implicit_value is not evaluated");
        case DW_OP_piece: case DW_OP_bit_piece:
          return failed("a value in pieces is not evaluated");
        default:
          return failed("the expression uses an operation coroner does not evaluate");
      }
    }
  }
  if (sp == 0) return failed("empty expression");
  ExpressionResult out;
  out.kind = stack_value ? Kind::kValue : Kind::kAddress;
  out.value = stack[sp - 1];
  return out;
}

}  // namespace coroner
