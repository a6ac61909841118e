#include "core/link_map.h"

#include <elf.h>

#include <algorithm>
#include <set>

#include "core/byte_view.h"
#include "core/elf_image.h"

namespace coroner {
namespace {

constexpr size_t kMaxDynamicEntries = 1024;
constexpr size_t kMaxObjects = 4096;
constexpr size_t kMaxName = 4096;

// struct r_debug: r_version (int, padded), r_map.
constexpr uint64_t kRdebugMap = 8;
// struct link_map: l_addr, l_name, l_ld, l_next, l_prev.
constexpr uint64_t kLinkName = 8, kLinkLd = 16, kLinkNext = 24;

}  // namespace

std::vector<Elf64_Phdr> ProgramHeadersAt(const Memory& memory, uint64_t at_phdr, uint64_t phnum) {
  std::vector<Elf64_Phdr> phdrs;
  for (uint64_t i = 0; i < std::min<uint64_t>(phnum, kMaxImagePhdrs); ++i) {
    auto ph = memory.Read<Elf64_Phdr>(at_phdr + i * sizeof(Elf64_Phdr));
    if (!ph) return {};
    phdrs.push_back(*ph);
  }
  return phdrs;
}

ProgramPlace PlaceProgram(std::span<const Elf64_Phdr> phdrs, uint64_t at_phdr) {
  ProgramPlace out;
  for (const auto& ph : phdrs)
    if (ph.p_type == PT_PHDR) out.bias = at_phdr - ph.p_vaddr;
  if (!out.bias) {
    for (const auto& ph : phdrs) {
      if (ph.p_type == PT_LOAD && ph.p_offset == 0) {
        out.bias = at_phdr - sizeof(Elf64_Ehdr) - ph.p_vaddr;
        break;
      }
    }
  }
  if (!out.bias) return out;
  for (const auto& ph : phdrs)
    if (ph.p_type == PT_DYNAMIC) out.dynamic = *out.bias + ph.p_vaddr;
  return out;
}

std::optional<uint64_t> DebugStructureAddress(const Memory& memory, uint64_t dynamic) {
  for (size_t i = 0; i < kMaxDynamicEntries; ++i) {
    auto at = CheckedAdd(dynamic, i * sizeof(Elf64_Dyn));
    if (!at) return std::nullopt;
    auto entry = memory.Read<Elf64_Dyn>(*at);
    if (!entry || entry->d_tag == DT_NULL) return std::nullopt;
    if (entry->d_tag == DT_DEBUG) {
      if (entry->d_un.d_ptr == 0) return std::nullopt;  // the linker had not run yet
      return entry->d_un.d_ptr;
    }
  }
  return std::nullopt;
}

LinkMapList ReadLinkMap(const Memory& memory, uint64_t r_debug) {
  LinkMapList list;
  auto map = memory.Read<uint64_t>(r_debug + kRdebugMap);
  if (!map) {
    list.problem = "r_debug at " + Hex(r_debug) + " is not in the core";
    return list;
  }
  std::set<uint64_t> seen;
  for (uint64_t at = *map; at != 0; ) {
    if (list.entries.size() >= kMaxObjects) {
      list.problem = "more than " + std::to_string(kMaxObjects) + " objects in the linker's list; the rest left out";
      break;
    }
    if (!seen.insert(at).second) {
      list.problem = "the linker's list loops at " + Hex(at);
      break;
    }
    auto addr = memory.Read<uint64_t>(at), name = memory.Read<uint64_t>(at + kLinkName),
         ld = memory.Read<uint64_t>(at + kLinkLd), next = memory.Read<uint64_t>(at + kLinkNext);
    if (!addr || !name || !ld || !next) {
      list.problem = "link_map entry at " + Hex(at) + " is not in the core";
      break;
    }
    LinkMapEntry e;
    e.load_bias = *addr;
    e.dynamic = *ld;
    if (*name != 0) e.name = memory.ReadCString(*name, kMaxName).value_or("");
    list.entries.push_back(std::move(e));
    at = *next;
  }
  return list;
}

}  // namespace coroner
