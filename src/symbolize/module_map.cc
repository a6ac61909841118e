#include "symbolize/module_map.h"

#include <algorithm>

#include "symbolize/demangle.h"

namespace coroner {

ModuleMap::ModuleMap(const Core& core, SymbolProvider& provider) : core_(core) {
  modules_.reserve(core.modules().size());
  for (const auto& m : core.modules()) {
    MappedModule mm;
    mm.module = &m;
    ModuleLookup found = provider.Find(m);
    mm.image = found.image;
    mm.binary_found_by = found.binary_found_by;
    mm.debug_found_by = found.debug_found_by;
    mm.path_mismatched = found.path_mismatched;
    mm.bias = mm.image ? m.base - mm.image->link_base() : m.load_bias;
    modules_.push_back(std::move(mm));
  }
  std::sort(modules_.begin(), modules_.end(),
            [](const MappedModule& a, const MappedModule& b) { return a.module->base < b.module->base; });
}

const MappedModule* ModuleMap::Find(uint64_t pc) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), pc,
                             [](uint64_t a, const MappedModule& m) { return a < m.module->base; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return pc < it->module->end ? &*it : nullptr;
}

PcSymbol ModuleMap::Symbolize(uint64_t pc) const {
  PcSymbol s;
  s.module = Find(pc);
  if (!s.module) return s;
  s.offset = s.module->ToLink(pc);
  if (!s.module->image) return s;
  s.functions_owner = s.module->image->FunctionsAt(s.offset);
  if (s.functions_owner) s.functions = *s.functions_owner;
  if (const Symbol* sym = s.module->image->SymbolAt(s.offset)) {
    s.symbol = DisplayName(std::string(sym->name));
    s.symbol_offset = s.offset - sym->addr;
    s.symbol_size = sym->size;
  }
  return s;
}

size_t ModuleMap::ReadCode(uint64_t pc, std::span<std::byte> out) const {
  // The core's own bytes when it dumped them (the vDSO, JIT code, code
  // patched at run time), else the module's file.
  if (core_.memory().State(pc) == AddressState::kPresent) {
    size_t n = core_.memory().ReadUpTo(pc, out);
    if (n == out.size()) return n;
  }
  if (const MappedModule* m = Find(pc); m && m->image) {
    size_t n = m->image->ReadCode(m->ToLink(pc), out);
    if (n > 0) return n;
  }
  return core_.memory().ReadUpTo(pc, out);
}

std::optional<std::string> ModuleMap::ReadString(uint64_t addr, size_t limit) const {
  if (auto s = core_.memory().ReadCString(addr, limit)) return s;
  // Never more than `limit` bytes: callers size buffers by it.
  std::string out;
  char chunk[64];
  while (out.size() < limit) {
    size_t want = std::min(sizeof chunk, limit - out.size());
    size_t n = ReadCode(addr + out.size(), std::as_writable_bytes(std::span(chunk, want)));
    if (n == 0) return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
      if (chunk[i] == '\0') return out;
      out.push_back(chunk[i]);
    }
  }
  return std::nullopt;
}

bool ModuleMap::IsCode(uint64_t pc) const {
  if (const Segment* s = core_.memory().Find(pc)) return s->exec;
  if (const MappedModule* m = Find(pc); m && m->image) return m->image->IsCode(m->ToLink(pc));
  return false;
}

bool ModuleMap::IsJitCode(uint64_t pc) const {
  // A core that names no mapped files (qemu-user's) cannot tell a JIT's
  // code from a module whose file was not found: neither is called JIT.
  if (!core_.has_file_note()) return false;
  const Segment* s = core_.memory().Find(pc);
  return s && s->exec && !Find(pc) && !core_.FileAt(pc);
}

}  // namespace coroner
