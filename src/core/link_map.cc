#include "core/link_map.h"

#include <elf.h>

#include <set>

#include "core/byte_view.h"

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
