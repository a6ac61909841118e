#include "unwind/frame_variables.h"

#include <dwarf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "unwind/dwarf_expression.h"

namespace coroner {
namespace {

constexpr size_t kMaxObject = 4096;    // bytes read for one variable
constexpr int kMaxDepth = 20;          // nested structs and arrays (gdb's `print max-depth`)
constexpr size_t kMaxVariables = 256;  // per frame
constexpr size_t kMaxFrames = 64;      // physical frames whose variables are read
// Values (members, elements, pointers) read for one variable, for all the
// variables of one scope, and for all the frames of one thread. Depth alone
// does not bound the work: a struct whose members are the struct itself, 20
// levels deep, is 2^20 values and more, so hostile DWARF could otherwise
// keep analyze busy for hours, and the values are kept (some 100 bytes
// each) until the report is printed.
constexpr size_t kMaxValuesPerVariable = 4096;
constexpr size_t kMaxValuesPerFrame = 32768;
constexpr size_t kMaxValuesPerThread = 262144;

std::optional<Dwarf_Die> TypeOf(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Die out;
  if (!dwarf_attr_integrate(die, DW_AT_type, &attr) || !dwarf_formref_die(&attr, &out)) return std::nullopt;
  return out;
}

// Typedefs and qualifiers removed: the type that decides how bytes print.
std::optional<Dwarf_Die> Strip(std::optional<Dwarf_Die> t) {
  for (int i = 0; t && i < 16; ++i) {
    int tag = dwarf_tag(&*t);
    if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type &&
        tag != DW_TAG_restrict_type && tag != DW_TAG_atomic_type) {
      return t;
    }
    t = TypeOf(&*t);
  }
  return t;
}

std::optional<uint64_t> Unsigned(Dwarf_Die* die, int name) {
  Dwarf_Attribute attr;
  Dwarf_Word v;
  if (!dwarf_attr_integrate(die, name, &attr) || dwarf_formudata(&attr, &v) != 0) return std::nullopt;
  return v;
}

std::string Name(Dwarf_Die* die) {
  const char* n = dwarf_diename(die);
  return n ? n : "";
}

// Elements of a one-dimensional array type; nullopt for other arrays.
std::optional<uint64_t> ArrayCount(Dwarf_Die* array) {
  Dwarf_Die child;
  if (dwarf_child(array, &child) != 0) return std::nullopt;
  std::optional<uint64_t> count;
  int dims = 0;
  do {
    if (dwarf_tag(&child) != DW_TAG_subrange_type) continue;
    ++dims;
    if (auto c = Unsigned(&child, DW_AT_count)) count = c;
    else if (auto u = Unsigned(&child, DW_AT_upper_bound)) count = *u + 1;
  } while (dwarf_siblingof(&child, &child) == 0);
  if (dims != 1) return std::nullopt;
  return count;
}

std::string TypeName(std::optional<Dwarf_Die> t, bool cplus, int depth = 0) {
  if (!t) return "void";
  if (depth > 8) return "...";
  Dwarf_Die d = *t;
  std::string name = Name(&d);
  switch (dwarf_tag(&d)) {
    case DW_TAG_pointer_type: return TypeName(TypeOf(&d), cplus, depth + 1) + " *";
    case DW_TAG_reference_type: return TypeName(TypeOf(&d), cplus, depth + 1) + " &";
    case DW_TAG_rvalue_reference_type: return TypeName(TypeOf(&d), cplus, depth + 1) + " &&";
    case DW_TAG_const_type: return "const " + TypeName(TypeOf(&d), cplus, depth + 1);
    case DW_TAG_volatile_type: return "volatile " + TypeName(TypeOf(&d), cplus, depth + 1);
    case DW_TAG_restrict_type: return TypeName(TypeOf(&d), cplus, depth + 1) + " restrict";
    case DW_TAG_array_type: {
      auto n = ArrayCount(&d);
      return TypeName(TypeOf(&d), cplus, depth + 1) + (n ? fmt::format(" [{}]", *n) : " []");
    }
    case DW_TAG_subroutine_type: return "function";
    case DW_TAG_structure_type: return (cplus ? "" : "struct ") + (name.empty() ? "{...}" : name);
    case DW_TAG_class_type: return name.empty() ? "class {...}" : name;
    case DW_TAG_union_type: return (cplus ? "" : "union ") + (name.empty() ? "{...}" : name);
    case DW_TAG_enumeration_type: return (cplus ? "" : "enum ") + (name.empty() ? "{...}" : name);
    default: return name.empty() ? "?" : name;
  }
}

uint64_t LittleEndian(std::span<const std::byte> bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) v |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  return v;
}

// The low `bits` bits of v as a signed number.
int64_t SignExtend(uint64_t v, uint64_t bits) {
  if (bits == 0 || bits >= 64) return static_cast<int64_t>(v);
  uint64_t m = uint64_t{1} << (bits - 1);
  v &= (m << 1) - 1;
  return static_cast<int64_t>((v ^ m) - m);
}

bool IsCharType(std::optional<Dwarf_Die> t) {
  t = Strip(t);
  if (!t || dwarf_tag(&*t) != DW_TAG_base_type) return false;
  auto enc = Unsigned(&*t, DW_AT_encoding);
  auto size = Unsigned(&*t, DW_AT_byte_size);
  return size == 1u && enc && (*enc == DW_ATE_signed_char || *enc == DW_ATE_unsigned_char);
}

Value Scalar(Value::Kind kind, uint64_t bits) {
  Value v;
  v.kind = kind;
  v.bits = bits;
  return v;
}

Value Chars(std::string text, bool truncated) {
  Value v;
  v.kind = Value::Kind::kChars;
  v.text = std::move(text);
  v.truncated = truncated;
  return v;
}

// Reads the values of one scope's variables from their bytes: the type
// decides the kind, pointers are followed to their symbol and, for char
// pointers, their string.
class ValueReader {
 public:
  ValueReader(const ModuleMap& modules, StackMemory& memory, bool cplus, size_t& thread_budget)
      : modules_(modules), memory_(memory), cplus_(cplus), thread_budget_(thread_budget) {}

  // The value of a variable of type `type` held in `bytes`; nullopt (with
  // `why`) when it cannot be read, or when it holds more values than one
  // variable, or what is left of the frame's or the thread's share, may.
  std::optional<Value> ReadVariable(std::optional<Dwarf_Die> type, std::span<const std::byte> bytes,
                                    std::string& why) {
    variable_budget_ = std::min({kMaxValuesPerVariable, frame_budget_, thread_budget_});
    size_t before = variable_budget_;
    auto v = Read(type, bytes, 0, why);
    frame_budget_ -= before - variable_budget_;
    thread_budget_ -= before - variable_budget_;
    return v;
  }

 private:
  std::optional<Value> Read(std::optional<Dwarf_Die> type, std::span<const std::byte> bytes, int depth,
                            std::string& why) {
    if (!Spend(why)) return std::nullopt;
    auto t = Strip(type);
    if (!t) {
      why = "its type is not described";
      return std::nullopt;
    }
    if (depth > kMaxDepth) return Scalar(Value::Kind::kTooDeep, 0);
    Dwarf_Die d = *t;
    switch (dwarf_tag(&d)) {
      case DW_TAG_base_type: return Base(&d, bytes, why);
      case DW_TAG_pointer_type: {
        if (bytes.size() < 8) break;
        return Pointer(TypeOf(&d), LittleEndian(bytes));
      }
      case DW_TAG_reference_type:
      case DW_TAG_rvalue_reference_type:
        if (bytes.size() < 8) break;
        return Scalar(Value::Kind::kReference, LittleEndian(bytes));
      case DW_TAG_enumeration_type: return Enum(&d, bytes);
      case DW_TAG_structure_type:
      case DW_TAG_class_type:
      case DW_TAG_union_type: return Struct(&d, bytes, depth, why);
      case DW_TAG_array_type: return Array(&d, bytes, depth, why);
      default: break;
    }
    why = "values of this type are not shown";
    return std::nullopt;
  }

  // Takes one value from the budget; false (with `why`) when none is left.
  bool Spend(std::string& why) {
    if (variable_budget_ == 0) {
      why = thread_budget_ < kMaxValuesPerVariable && thread_budget_ < frame_budget_
                ? fmt::format("the thread's variables hold more than {} values", kMaxValuesPerThread)
            : frame_budget_ < kMaxValuesPerVariable
                ? fmt::format("the frame's variables hold more than {} values", kMaxValuesPerFrame)
                : fmt::format("it holds more than {} values", kMaxValuesPerVariable);
      return false;
    }
    --variable_budget_;
    return true;
  }

  std::optional<Value> Base(Dwarf_Die* d, std::span<const std::byte> bytes, std::string& why) {
    auto enc = Unsigned(d, DW_AT_encoding);
    size_t size = bytes.size();
    if (!enc || size == 0 || size > 8) {
      why = "a base type wider than 8 bytes";
      return std::nullopt;
    }
    uint64_t v = LittleEndian(bytes);
    auto sign_extended = static_cast<uint64_t>(SignExtend(v, 8 * size));
    switch (*enc) {
      case DW_ATE_boolean: return Scalar(v <= 1 ? Value::Kind::kBool : Value::Kind::kUnsigned, v);
      case DW_ATE_signed: return Scalar(Value::Kind::kSigned, sign_extended);
      case DW_ATE_unsigned: return Scalar(Value::Kind::kUnsigned, v);
      case DW_ATE_signed_char:
      case DW_ATE_unsigned_char: {
        uint64_t n = *enc == DW_ATE_signed_char ? sign_extended : v;
        if (size != 1) return Scalar(*enc == DW_ATE_signed_char ? Value::Kind::kSigned : Value::Kind::kUnsigned, n);
        return Scalar(Value::Kind::kChar, n);
      }
      case DW_ATE_float:
        if (size == 4) return Scalar(Value::Kind::kFloat, v);
        if (size == 8) return Scalar(Value::Kind::kDouble, v);
        break;
      default: return Scalar(Value::Kind::kUnsigned, v);
    }
    why = "a floating-point type of this size is not shown";
    return std::nullopt;
  }

  Value Pointer(std::optional<Dwarf_Die> pointee, uint64_t addr) {
    Value out = Scalar(Value::Kind::kPointer, addr);
    if (addr == 0) return out;
    // gdb names a pointer into a module's code or data by its symbol. A
    // data symbol of no size (a linker label such as a section start) is not
    // what the pointer points at; gdb leaves those out too.
    PcSymbol sym = modules_.Symbolize(addr);
    if (sym.module && !sym.symbol.empty() && (sym.symbol_size > 0 || modules_.IsCode(addr))) {
      out.text = sym.symbol;
      out.offset = sym.symbol_offset;
    }
    if (!IsCharType(pointee)) return out;
    if (auto s = modules_.ReadString(addr, kStringBytesRead)) {
      out.children.push_back(Chars(std::move(*s), false));
      return out;
    }
    char buf[kStringBytesRead];
    auto into = std::as_writable_bytes(std::span(buf));
    // A long string in read-only data the kernel did not dump is in the
    // module's file.
    size_t got = memory_.Read(addr, into);
    if (got != kStringBytesRead) got = modules_.ReadCode(addr, into);
    // No NUL in what gdb would print: the string goes on past it.
    if (got == kStringBytesRead) out.children.push_back(Chars(std::string(buf, got), true));
    else out.children.push_back(Scalar(Value::Kind::kUnreadable, addr));
    return out;
  }

  Value Enum(Dwarf_Die* d, std::span<const std::byte> bytes) {
    uint64_t v = LittleEndian(bytes);
    int64_t sv = SignExtend(v, 8 * bytes.size());
    Dwarf_Die child;
    if (dwarf_child(d, &child) == 0) {
      do {
        if (dwarf_tag(&child) != DW_TAG_enumerator) continue;
        Dwarf_Attribute attr;
        Dwarf_Sword s;
        Dwarf_Word u;
        if (!dwarf_attr(&child, DW_AT_const_value, &attr)) continue;
        bool match = (dwarf_formsdata(&attr, &s) == 0 && s == sv) || (dwarf_formudata(&attr, &u) == 0 && u == v);
        if (match) {
          Value out = Scalar(Value::Kind::kEnumerator, static_cast<uint64_t>(sv));
          out.text = Name(&child);
          return out;
        }
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    return Scalar(Value::Kind::kSigned, static_cast<uint64_t>(sv));
  }

  std::optional<Value> Struct(Dwarf_Die* d, std::span<const std::byte> bytes, int depth, std::string& why) {
    Value out = Scalar(Value::Kind::kStruct, 0);
    Dwarf_Die child;
    if (dwarf_child(d, &child) == 0) {
      do {
        int tag = dwarf_tag(&child);
        if (tag != DW_TAG_member && tag != DW_TAG_inheritance) continue;
        if (dwarf_hasattr(&child, DW_AT_external) || dwarf_hasattr(&child, DW_AT_declaration)) continue;  // static
        auto type = TypeOf(&child);
        auto offset = Unsigned(&child, DW_AT_data_member_location).value_or(0);
        Value member;
        if (auto bits = Unsigned(&child, DW_AT_bit_size)) {
          // A bit-field: DWARF 4+ gives its first bit from the struct's start.
          if (!Spend(why)) return std::nullopt;
          auto first = Unsigned(&child, DW_AT_data_bit_offset);
          if (!first || *bits == 0 || *bits > 56 || *first / 8 >= bytes.size()) return Fail(why, "a bit-field");
          size_t from = static_cast<size_t>(*first / 8);
          size_t n = std::min<size_t>(8, bytes.size() - from);
          uint64_t word = LittleEndian(bytes.subspan(from, n)) >> (*first % 8);
          if (*bits < 64) word &= (uint64_t{1} << *bits) - 1;
          auto st = Strip(type);
          bool is_signed = st && Unsigned(&*st, DW_AT_encoding) == uint64_t{DW_ATE_signed};
          member = is_signed ? Scalar(Value::Kind::kSigned, static_cast<uint64_t>(SignExtend(word, *bits)))
                             : Scalar(Value::Kind::kUnsigned, word);
        } else {
          auto st = Strip(type);
          Dwarf_Word size = 0;
          // Checked without adding: a hostile offset near 2^64 would wrap.
          if (!st || dwarf_aggregate_size(&*st, &size) != 0 || offset > bytes.size() ||
              size > bytes.size() - offset) {
            return Fail(why, "a member outside the object");
          }
          auto v = Read(type, bytes.subspan(offset, size), depth + 1, why);
          if (!v) return std::nullopt;
          member = std::move(*v);
        }
        member.name = tag == DW_TAG_inheritance ? "<" + TypeName(Strip(type), cplus_) + ">" : Name(&child);
        out.children.push_back(std::move(member));
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    return out;
  }

  std::optional<Value> Array(Dwarf_Die* d, std::span<const std::byte> bytes, int depth, std::string& why) {
    auto count = ArrayCount(d);
    auto element = TypeOf(d);
    auto st = Strip(element);
    Dwarf_Word size = 0;
    if (!count || !st || dwarf_aggregate_size(&*st, &size) != 0 || size == 0 || *count > bytes.size() / size) {
      return Fail(why, "an array of unknown or multiple dimensions");
    }
    if (IsCharType(element)) {
      size_t n = static_cast<size_t>(*count);
      // gdb drops the one terminating NUL at the end of a char array.
      if (n > 0 && bytes[n - 1] == std::byte{0}) --n;
      return Chars(std::string(reinterpret_cast<const char*>(bytes.data()), n), false);
    }
    Value out = Scalar(Value::Kind::kArray, 0);
    for (uint64_t i = 0; i < *count; ++i) {
      auto v = Read(element, bytes.subspan(i * size, size), depth + 1, why);
      if (!v) return std::nullopt;
      out.children.push_back(std::move(*v));
    }
    return out;
  }

  static std::optional<Value> Fail(std::string& why, const char* what) {
    why = std::string(what) + " is not shown";
    return std::nullopt;
  }

  const ModuleMap& modules_;
  StackMemory& memory_;
  bool cplus_;
  size_t frame_budget_ = kMaxValuesPerFrame;
  size_t& thread_budget_;
  size_t variable_budget_ = 0;
};

struct Scope {
  std::vector<Dwarf_Die> blocks;  // lexical blocks, innermost first
  std::optional<Dwarf_Die> function;
};

// A frame's registers, CFA and frame base, for its DWARF expressions.
// Registers the CFI does not recover are unknown (libdw reports the
// call-clobbered ones undefined); the unwinder carries the callee-saved ones.
ExpressionContext Context(const Frame& frame, const MappedModule& module, StackMemory& memory,
                          std::optional<uint64_t> frame_base) {
  ExpressionContext context;
  context.regs = &frame.regs;
  context.cfa = frame.cfa;
  context.frame_base = frame_base;
  context.address_bias = module.bias;
  context.memory = &memory;
  return context;
}

// What the caller passed in a register, for DW_OP_entry_value: nullopt
// when unknown.
using EntryRegister = std::function<std::optional<uint64_t>(int dwarf_reg)>;

// One variable's value at `vaddr` in a frame.
Variable ReadVariable(Dwarf_Die* die, uint64_t vaddr, ExpressionContext context, ValueReader& reader,
                      const ModuleMap& modules, bool cplus, const EntryRegister& entry_register) {
  Variable v;
  v.name = Name(die);
  auto type = TypeOf(die);
  v.type = TypeName(type, cplus);
  auto st = Strip(type);
  Dwarf_Word size = 0;
  if (!st || dwarf_aggregate_size(&*st, &size) != 0) {
    v.unavailable = "its type has no size";
    return v;
  }
  if (size > kMaxObject) {
    v.unavailable = fmt::format("larger than {} bytes", kMaxObject);
    return v;
  }
  std::vector<std::byte> bytes(size);
  Dwarf_Attribute attr;
  if (dwarf_attr(die, DW_AT_location, &attr)) {
    Dwarf_Op* expr = nullptr;
    size_t len = 0;
    int n = dwarf_getlocation_addr(&attr, vaddr, &expr, &len, 1);
    if (n == 0 || (n == 1 && len == 0)) {
      v.value = Value{};
      return v;
    }
    if (n < 0) {
      v.unavailable = "its location list cannot be read";
      return v;
    }
    // DW_OP_entry_value(DW_OP_regN): the register's value at entry, which
    // the caller's call site records (DW_TAG_call_site_parameter).
    context.entry_value = [&attr, &entry_register](const Dwarf_Op& op) -> std::optional<uint64_t> {
      Dwarf_Attribute sub;
      Dwarf_Op* ops = nullptr;
      size_t nops = 0;
      if (!entry_register || dwarf_getlocation_attr(&attr, &op, &sub) != 0 || dwarf_getlocation(&sub, &ops, &nops) != 0 ||
          nops != 1) {
        return std::nullopt;
      }
      auto reg = RegisterLocation(ops[0]);
      return reg ? entry_register(*reg) : std::nullopt;
    };
    ExpressionResult r = EvaluateExpression(expr, len, context);
    if (r.kind == ExpressionResult::Kind::kFailed) {
      v.unavailable = r.error ? r.error : "its location cannot be evaluated";
      if (r.reg >= 0) v.unavailable = fmt::format("it is in {}, not recovered in this frame", DwarfRegisterName(r.reg, modules.arch()));
      return v;
    }
    if (r.kind == ExpressionResult::Kind::kAddress) {
      // Read-only data the kernel did not dump is in the module's file.
      if (context.memory->Read(r.value, bytes) != bytes.size() && modules.ReadCode(r.value, bytes) != bytes.size()) {
        v.unavailable = fmt::format("its memory at 0x{:x} is not in the core", r.value);
        return v;
      }
    } else {
      if (size > 8) {
        v.unavailable = "a value wider than a register is not shown";
        return v;
      }
      for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(r.value >> (8 * i));
    }
  } else if (dwarf_attr_integrate(die, DW_AT_const_value, &attr)) {
    Dwarf_Block block;
    Dwarf_Word u;
    if (dwarf_formblock(&attr, &block) == 0 && block.length == size) {
      std::memcpy(bytes.data(), block.data, size);
    } else if (dwarf_formudata(&attr, &u) == 0 && size <= 8) {
      for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(u >> (8 * i));
    } else {
      v.unavailable = "its constant value cannot be read";
      return v;
    }
  } else {
    v.value = Value{};
    return v;
  }
  std::string why;
  v.value = reader.ReadVariable(type, bytes, why);
  if (!v.value) v.unavailable = why;
  return v;
}

bool HasPcRange(Dwarf_Die* die) {
  Dwarf_Addr low;
  return dwarf_lowpc(die, &low) == 0 || dwarf_hasattr(die, DW_AT_ranges);
}

// The variables a scope shows, as gdb collects them: its parameters and
// variables; those of nested blocks that have no address range (they belong
// to the scope); and, for an inlined or out-of-line instance, those of its
// abstract origin that no concrete child stands for (optimized out, or
// statics such as __PRETTY_FUNCTION__).
void CollectVariables(Dwarf_Die scope, bool function, std::vector<Dwarf_Die>& params, std::vector<Dwarf_Die>& vars,
                      int depth) {
  if (depth > 8) return;
  std::set<Dwarf_Off> concrete;
  auto add = [&](Dwarf_Die& child) {
    if (params.size() + vars.size() >= kMaxVariables) return;
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_lexical_block && !HasPcRange(&child)) {
      CollectVariables(child, false, params, vars, depth + 1);
      return;
    }
    bool param = function && tag == DW_TAG_formal_parameter;
    if (!param && tag != DW_TAG_variable) return;
    if (dwarf_hasattr(&child, DW_AT_declaration)) return;
    (param ? params : vars).push_back(child);
  };
  Dwarf_Die child;
  if (dwarf_child(&scope, &child) == 0) {
    do {
      Dwarf_Attribute attr;
      Dwarf_Die origin;
      if (dwarf_attr(&child, DW_AT_abstract_origin, &attr) && dwarf_formref_die(&attr, &origin)) {
        concrete.insert(dwarf_dieoffset(&origin));
      }
      add(child);
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  Dwarf_Attribute attr;
  Dwarf_Die abstract;
  if (dwarf_attr(&scope, DW_AT_abstract_origin, &attr) && dwarf_formref_die(&attr, &abstract) &&
      dwarf_child(&abstract, &child) == 0) {
    do {
      if (!concrete.count(dwarf_dieoffset(&child))) add(child);
    } while (dwarf_siblingof(&child, &child) == 0);
  }
}

// One physical frame as DWARF sees it: the address looked up, the scopes
// there (innermost first, out to the subprogram) and the frame base.
struct PhysicalFrame {
  const Frame* frame = nullptr;  // its innermost (first) frame
  const MappedModule* module = nullptr;
  uint64_t vaddr = 0;
  std::vector<Dwarf_Die> dies;
  std::optional<Dwarf_Die> subprogram;
  std::optional<uint64_t> frame_base;
  bool cplus = false;
};

std::optional<PhysicalFrame> Locate(const Frame& first, StackMemory& memory) {
  const MappedModule* m = first.module;
  if (!m || !m->image || !m->image->has_dwarf() || !first.lookup) return std::nullopt;
  PhysicalFrame p;
  p.frame = &first;
  p.module = m;
  p.vaddr = *first.lookup;
  p.dies = m->image->ScopesAt(p.vaddr);
  for (auto& die : p.dies) {
    if (dwarf_tag(&die) == DW_TAG_subprogram) {
      p.subprogram = die;
      break;
    }
  }
  if (!p.subprogram) return std::nullopt;
  int lang = dwarf_srclang(&p.dies.back());
  p.cplus = lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
  // The frame base (DW_OP_fbreg) is the physical function's.
  Dwarf_Attribute attr;
  if (dwarf_attr(&*p.subprogram, DW_AT_frame_base, &attr)) {
    Dwarf_Op* expr = nullptr;
    size_t len = 0;
    if (dwarf_getlocation_addr(&attr, p.vaddr, &expr, &len, 1) == 1) {
      ExpressionResult r = EvaluateExpression(expr, len, Context(first, *m, memory, std::nullopt));
      if (r.kind != ExpressionResult::Kind::kFailed) p.frame_base = r.value;
    }
  }
  return p;
}

// The value the caller put in `reg` for the call that made its callee's
// frame: the call site at the caller's return address, its parameter for
// that register, and the parameter's DW_AT_call_value evaluated in the
// caller's frame (no further entry values: bounded).
std::optional<uint64_t> CallSiteValue(const PhysicalFrame& caller, int reg, StackMemory& memory) {
  std::optional<Dwarf_Die> site = caller.module->image->CallSiteDie(caller.module->ToLink(caller.frame->pc));
  Dwarf_Die param;
  if (!site || dwarf_child(&*site, &param) != 0) return std::nullopt;
  do {
    int ptag = dwarf_tag(&param);
    if (ptag != DW_TAG_call_site_parameter && ptag != DW_TAG_GNU_call_site_parameter) continue;
    Dwarf_Attribute attr;
    Dwarf_Op* loc = nullptr;
    size_t n = 0;
    if (!dwarf_attr(&param, DW_AT_location, &attr) || dwarf_getlocation(&attr, &loc, &n) != 0 || n != 1) continue;
    if (RegisterLocation(loc[0]) != reg) continue;
    if (!dwarf_attr(&param, DW_AT_call_value, &attr) && !dwarf_attr(&param, DW_AT_GNU_call_site_value, &attr)) {
      return std::nullopt;
    }
    Dwarf_Op* value = nullptr;
    if (dwarf_getlocation(&attr, &value, &n) != 0 || n == 0) return std::nullopt;
    ExpressionResult r = EvaluateExpression(value, n, Context(*caller.frame, *caller.module, memory, caller.frame_base));
    if (r.kind == ExpressionResult::Kind::kFailed) return std::nullopt;
    return r.value;
  } while (dwarf_siblingof(&param, &param) == 0);
  return std::nullopt;
}

void ReadScope(const Scope& scope, Frame& frame, const PhysicalFrame& where, const std::optional<PhysicalFrame>& caller,
               StackMemory& memory, const ModuleMap& modules, size_t& thread_budget) {
  ExpressionContext context = Context(frame, *where.module, memory, where.frame_base);
  ValueReader reader(modules, memory, where.cplus, thread_budget);
  EntryRegister entry_register;
  if (caller) entry_register = [&caller, &memory](int reg) { return CallSiteValue(*caller, reg, memory); };
  std::vector<Dwarf_Die> params, vars;
  for (const auto& block : scope.blocks) CollectVariables(block, false, params, vars, 0);
  if (scope.function) CollectVariables(*scope.function, true, params, vars, 0);
  for (auto& die : params) {
    frame.args.push_back(ReadVariable(&die, where.vaddr, context, reader, modules, where.cplus, entry_register));
  }
  for (auto& die : vars) {
    frame.locals.push_back(ReadVariable(&die, where.vaddr, context, reader, modules, where.cplus, entry_register));
  }
}

}  // namespace

void ReadFrameVariables(Backtrace& bt, const ModuleMap& modules, StackMemory& memory) {
  size_t thread_budget = kMaxValuesPerThread;
  for (size_t i = 0; i < bt.frames.size();) {
    // A tail call's frame has no registers of its own to read variables with.
    if (bt.frames[i].trust == FrameTrust::kTailCall) {
      ++i;
      continue;
    }
    // The frames of one physical frame: its inlined calls, innermost first.
    size_t end = i;
    while (end < bt.frames.size() && bt.frames[end].physical == bt.frames[i].physical &&
           bt.frames[end].trust != FrameTrust::kTailCall) {
      ++end;
    }
    if (bt.frames[i].physical >= kMaxFrames) break;
    std::optional<PhysicalFrame> where = Locate(bt.frames[i], memory);
    if (!where) {
      i = end;
      continue;
    }
    std::vector<Scope> scopes(1);
    for (auto& die : where->dies) {
      int tag = dwarf_tag(&die);
      if (tag == DW_TAG_lexical_block) {
        scopes.back().blocks.push_back(die);
      } else if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) {
        scopes.back().function = die;
        if (tag == DW_TAG_subprogram) break;
        scopes.emplace_back();
      }
    }
    // The caller, for entry values: the next physical frame, when it called
    // this one (not a signal frame's interrupted context, not a scan guess,
    // not across tail calls, whose callers' call sites called another
    // function with other arguments).
    std::optional<PhysicalFrame> caller;
    if (end < bt.frames.size() && !bt.frames[i].signal_trampoline && bt.frames[end].trust != FrameTrust::kScan &&
        bt.frames[end].trust != FrameTrust::kSignal && bt.frames[end].trust != FrameTrust::kTailCall) {
      caller = Locate(bt.frames[end], memory);
    }
    if (scopes.size() == end - i) {
      for (size_t k = i; k < end; ++k) {
        bt.frames[k].variables_read = true;
        ReadScope(scopes[k - i], bt.frames[k], *where, caller, memory, modules, thread_budget);
      }
    }
    i = end;
  }
}

}  // namespace coroner
