// ModuleMap: the modules of one core, each with its opened image (when one
// was found) and the load bias that turns runtime addresses into the image's
// link-time addresses. Answers "which module holds this pc" and "what is
// there": the symbolized functions (inline frames first), module offset.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/core.h"
#include "symbolize/module_image.h"
#include "symbolize/symbol_provider.h"

namespace coroner {

struct MappedModule {
  const Module* module;                 // owned by the Core
  std::shared_ptr<ModuleImage> image;   // nullptr when no file was found
  uint64_t bias = 0;                    // runtime address - link-time address
  std::string binary_found_by, debug_found_by;
  bool path_mismatched = false;
  uint64_t ToLink(uint64_t pc) const { return pc - bias; }
};

// What is at one pc: the module and offset, and the functions there (more
// than one when inlined; innermost first). `functions` is empty when the
// module has neither symbols nor DWARF for it.
struct PcSymbol {
  const MappedModule* module = nullptr;
  uint64_t offset = 0;  // link-time address within the module
  std::span<const SourceFunction> functions;  // held by functions_owner
  ModuleImage::Functions functions_owner;
  std::string symbol;          // ELF symbol name, demangled without parameters
  uint64_t symbol_offset = 0;  // pc - symbol start
  uint64_t symbol_size = 0;    // 0 when the symbol table does not say
};

class ModuleMap {
 public:
  ModuleMap(const Core& core, SymbolProvider& provider);

  const MappedModule* Find(uint64_t pc) const;
  Arch arch() const { return core_.arch(); }
  // Where the program began (AT_ENTRY), when the core says.
  std::optional<uint64_t> entry() const { return core_.auxv().entry; }
  const std::vector<MappedModule>& modules() const { return modules_; }

  // `pc` is looked up as is; callers pass pc - 1 for return addresses so
  // that the call instruction, not the next one, is symbolized.
  PcSymbol Symbolize(uint64_t pc) const;

  // Reads code bytes at a runtime address: from the module's file, else
  // from the core (vDSO, JIT code).
  size_t ReadCode(uint64_t pc, std::span<std::byte> out) const;
  // A NUL-terminated string at a runtime address, from the core when dumped,
  // else from the module file (read-only data is usually not dumped);
  // nullopt when it does not end within `limit` bytes, never longer.
  std::optional<std::string> ReadString(uint64_t addr, size_t limit) const;
  // True when pc lies in executable memory (the core's segment flags, or the
  // module file's executable segments).
  bool IsCode(uint64_t pc) const;
  // True when pc lies in executable memory that no module and no mapped
  // file holds: code a JIT compiler wrote (Java's code cache, V8's).
  bool IsJitCode(uint64_t pc) const;

 private:
  const Core& core_;
  std::vector<MappedModule> modules_;  // sorted by base
};

}  // namespace coroner
