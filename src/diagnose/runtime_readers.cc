#include "diagnose/runtime_readers.h"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>

#include "core/elf_image.h"

namespace coroner {
namespace {

std::optional<std::string> DemangleType(const std::string& mangled) {
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return std::nullopt;
  std::string r(out);
  std::free(out);
  return r;
}

}  // namespace

std::optional<std::string> ReadAbortMessage(const Core& core, const ModuleMap& modules, StackMemory& mem) {
  for (const auto& m : modules.modules()) {
    if (!m.image) continue;
    auto sym = m.image->SymbolAddress("__abort_msg");
    if (!sym) continue;
    auto ptr = mem.Read64(m.bias + *sym);
    if (!ptr || *ptr == 0) continue;
    auto msg = core.memory().ReadCString(*ptr + 4, 4096);  // struct abort_msg_s { unsigned size; char msg[]; }
    if (!msg) continue;
    while (!msg->empty() && (msg->back() == '\n' || msg->back() == ' ')) msg->pop_back();
    return msg;
  }
  return std::nullopt;
}

ThrownException ReadThrownException(const Core& core, const ModuleMap& modules, StackMemory& mem, uint64_t sp) {
  ThrownException out;
  std::optional<uint64_t> tinfo;
  for (uint64_t a = sp; a < sp + 16384 && !tinfo; a += 8) {
    auto w = mem.Read64(a);
    if (!w || *w < kNullPages || !core.memory().Find(*w)) continue;
    auto vptr = mem.Read64(*w);
    auto name_ptr = mem.Read64(*w + 8);
    if (!vptr || !name_ptr || !modules.Find(*vptr)) continue;
    auto name = modules.ReadString(*name_ptr, 256);  // .rodata: usually only in the file
    if (!name || name->size() < 2) continue;
    if (auto demangled = DemangleType(*name)) {
      tinfo = *w;
      out.type = *demangled;
    }
  }
  if (!tinfo) return out;
  for (uint64_t a = sp; a < sp + 16384; a += 8) {
    auto obj = mem.Read64(a);
    if (!obj || *obj < 128) continue;
    // __cxa_refcounted_exception: referenceCount, then (16-aligned) the
    // __cxa_exception whose first member is exceptionType; 128 bytes in all.
    auto header_type = mem.Read64(*obj - 112);
    if (!header_type || *header_type != *tinfo) continue;
    // std::runtime_error and std::logic_error keep their message behind the vtable.
    if (auto msg_ptr = mem.Read64(*obj + 8)) {
      if (auto what = core.memory().ReadCString(*msg_ptr, 1024); what && !what->empty()) out.what = *what;
    }
    return out;
  }
  return out;
}

std::vector<const MappedModule*> LinkMapOrder(const Core& core, const ModuleMap& modules, StackMemory& stack) {
  std::vector<const MappedModule*> out;
  // The executable's PT_DYNAMIC -> DT_DEBUG -> r_debug -> the link_map chain.
  const Memory& mem = core.memory();
  const MappedModule* exe = core.executable() ? modules.Find(core.executable()->base) : nullptr;
  if (exe) {
    ReadAtFn read = [&](uint64_t off, std::span<std::byte> o) { return mem.ReadUpTo(exe->module->base + off, o); };
    if (auto img = ReadElfImage(read)) {
      for (const auto& ph : img->phdrs) {
        if (ph.p_type != PT_DYNAMIC) continue;
        uint64_t dyn = exe->module->load_bias + ph.p_vaddr;
        std::optional<uint64_t> r_debug;
        for (uint64_t i = 0; i < 512; ++i) {
          auto tag = stack.Read64(dyn + 16 * i), val = stack.Read64(dyn + 16 * i + 8);
          if (!tag || !val || *tag == DT_NULL) break;
          if (*tag == DT_DEBUG) r_debug = *val;
        }
        if (!r_debug || *r_debug == 0) break;
        auto lm = stack.Read64(*r_debug + 8);
        for (int n = 0; lm && *lm && n < 4096; ++n) {
          auto l_addr = stack.Read64(*lm), l_name = stack.Read64(*lm + 8);
          if (!l_addr || !l_name) break;
          auto name = mem.ReadCString(*l_name, 4096).value_or("");
          for (const auto& m : modules.modules()) {
            bool same = name.empty() ? &m == exe : (m.module->path == name || m.bias == *l_addr);
            if (same && std::find(out.begin(), out.end(), &m) == out.end()) {
              out.push_back(&m);
              break;
            }
          }
          lm = stack.Read64(*lm + 24);  // l_next
        }
      }
    }
  }
  for (const auto& m : modules.modules()) {  // whatever the link map did not list
    if (std::find(out.begin(), out.end(), &m) == out.end()) out.push_back(&m);
  }
  return out;
}

}  // namespace coroner
