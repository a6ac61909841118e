// ModuleImage's DWARF call sites: what a call instruction called, and the
// tail calls a function makes. The backtrace uses them to show the frames
// tail calls left no trace of on the stack (as gdb's tail-call frames do).
#include <dwarf.h>

#include <string>
#include <vector>

#include "symbolize/module_image.h"

namespace coroner {
namespace {

// Bounds on hostile DWARF: DIEs visited in one function, scopes pending.
constexpr size_t kMaxDies = 100000;
constexpr size_t kMaxPending = 4096;  // scopes waiting to be visited
constexpr size_t kMaxTailCalls = 256;
constexpr size_t kMaxCached = 65536;  // answers kept per image

std::optional<uint64_t> AddressAttribute(Dwarf_Die& die, int name) {
  Dwarf_Attribute attr;
  Dwarf_Addr value;
  if (!dwarf_attr(&die, name, &attr) || dwarf_formaddr(&attr, &value) != 0) return std::nullopt;
  return value;
}

bool FlagAttribute(Dwarf_Die& die, int name) {
  Dwarf_Attribute attr;
  bool flag = false;
  return dwarf_attr(&die, name, &attr) && dwarf_formflag(&attr, &flag) == 0 && flag;
}

bool IsCallSite(Dwarf_Die& die) {
  int tag = dwarf_tag(&die);
  return tag == DW_TAG_call_site || tag == DW_TAG_GNU_call_site;
}

// Whether `die` refers to the DIE at `offset` through `name`.
bool RefersTo(Dwarf_Die& die, int name, Dwarf_Off offset) {
  Dwarf_Attribute attr;
  Dwarf_Die target;
  return dwarf_attr(&die, name, &attr) && dwarf_formref_die(&attr, &target) && dwarf_dieoffset(&target) == offset;
}

}  // namespace

std::optional<Dwarf_Die> ModuleImage::SubprogramAt(uint64_t vaddr) const {
  for (Dwarf_Die& die : ScopesAt(vaddr)) {
    if (dwarf_tag(&die) == DW_TAG_subprogram) return die;
  }
  return std::nullopt;
}

std::optional<uint64_t> ModuleImage::FunctionEntry(uint64_t vaddr) const {
  if (auto it = entry_cache_.find(vaddr); it != entry_cache_.end()) return it->second;
  std::optional<Dwarf_Die> f = SubprogramAt(vaddr);
  Dwarf_Addr entry;
  std::optional<uint64_t> found;
  if (f && dwarf_entrypc(&*f, &entry) == 0) found = entry;
  if (entry_cache_.size() >= kMaxCached) entry_cache_.clear();
  entry_cache_.emplace(vaddr, found);
  return found;
}

// An external function's linkage name (what the dynamic linker binds);
// empty for a static one.
std::string ExternalName(Dwarf_Die& function) {
  if (!FlagAttribute(function, DW_AT_external)) return {};
  Dwarf_Attribute attr;
  const char* name = dwarf_formstring(dwarf_attr_integrate(&function, DW_AT_linkage_name, &attr));
  if (!name) name = dwarf_diename(&function);
  return name ? name : "";
}

// The entry of the function a call site's origin names: the origin itself
// when it has code; else its out-of-line instance or definition in the same
// compile unit (an abstract instance of a function also inlined, a
// declaration); else, for an external function, the symbol table.
std::optional<uint64_t> ModuleImage::EntryOf(Dwarf_Die& function) const {
  Dwarf_Addr entry;
  if (dwarf_entrypc(&function, &entry) == 0) return entry;
  Dwarf_Off offset = dwarf_dieoffset(&function);
  Dwarf_Die cu, child;
  if (dwarf_diecu(&function, &cu, nullptr, nullptr) && dwarf_child(&cu, &child) == 0) {
    size_t seen = 0;
    do {
      if (dwarf_tag(&child) == DW_TAG_subprogram &&
          (RefersTo(child, DW_AT_abstract_origin, offset) || RefersTo(child, DW_AT_specification, offset)) &&
          dwarf_entrypc(&child, &entry) == 0) {
        return entry;
      }
    } while (++seen < kMaxDies && dwarf_siblingof(&child, &child) == 0);
  }
  std::string name = ExternalName(function);
  return name.empty() ? std::nullopt : SymbolAddress(name);
}

std::optional<CallSite> ModuleImage::ReadCallSite(Dwarf_Die& die) const {
  bool gnu = dwarf_tag(&die) == DW_TAG_GNU_call_site;
  std::optional<uint64_t> return_pc = AddressAttribute(die, gnu ? DW_AT_low_pc : DW_AT_call_return_pc);
  if (!return_pc) return std::nullopt;
  CallSite site;
  site.return_pc = *return_pc;
  site.tail_call = FlagAttribute(die, gnu ? DW_AT_GNU_tail_call : DW_AT_call_tail_call);
  Dwarf_Attribute attr;
  Dwarf_Die origin;
  if (dwarf_attr(&die, gnu ? DW_AT_abstract_origin : DW_AT_call_origin, &attr) && dwarf_formref_die(&attr, &origin)) {
    site.target = EntryOf(origin);
    site.target_name = ExternalName(origin);
  }
  return site;
}

std::optional<CallSite> ModuleImage::CallSiteReturningTo(uint64_t return_pc) const {
  if (auto it = call_site_cache_.find(return_pc); it != call_site_cache_.end()) return it->second;
  std::optional<CallSite> found = FindCallSite(return_pc);
  if (call_site_cache_.size() >= kMaxCached) call_site_cache_.clear();
  call_site_cache_.emplace(return_pc, found);
  return found;
}

std::optional<CallSite> ModuleImage::FindCallSite(uint64_t return_pc) const {
  std::optional<Dwarf_Die> die = CallSiteDie(return_pc);
  return die ? ReadCallSite(*die) : std::nullopt;
}

std::optional<Dwarf_Die> ModuleImage::CallSiteDie(uint64_t return_pc) const {
  if (return_pc == 0) return std::nullopt;
  // The call site is a child of the innermost scope holding the call, the
  // instruction just before the return address.
  for (Dwarf_Die& scope : ScopesAt(return_pc - 1)) {
    Dwarf_Die child;
    if (dwarf_child(&scope, &child) == 0) {
      size_t seen = 0;
      do {
        if (!IsCallSite(child)) continue;
        bool gnu = dwarf_tag(&child) == DW_TAG_GNU_call_site;
        if (AddressAttribute(child, gnu ? DW_AT_low_pc : DW_AT_call_return_pc) == return_pc) return child;
      } while (++seen < kMaxDies && dwarf_siblingof(&child, &child) == 0);
    }
    if (dwarf_tag(&scope) == DW_TAG_subprogram) break;
  }
  return std::nullopt;
}

std::vector<CallSite> ModuleImage::TailCallsFrom(uint64_t entry) const {
  std::vector<CallSite> out;
  std::optional<Dwarf_Die> function = SubprogramAt(entry);
  Dwarf_Addr found;
  if (!function || dwarf_entrypc(&*function, &found) != 0 || found != entry) return out;
  // Depth first through the function's scopes (inlined calls, blocks).
  std::vector<Dwarf_Die> stack{*function};
  size_t seen = 0;
  while (!stack.empty() && seen < kMaxDies && out.size() < kMaxTailCalls) {
    Dwarf_Die parent = stack.back();
    stack.pop_back();
    Dwarf_Die child;
    if (dwarf_child(&parent, &child) != 0) continue;
    do {
      ++seen;
      if (IsCallSite(child)) {
        auto site = ReadCallSite(child);
        if (site && site->tail_call) out.push_back(*site);
      } else if (dwarf_haschildren(&child) && stack.size() < kMaxPending) {
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine) stack.push_back(child);
      }
    } while (seen < kMaxDies && out.size() < kMaxTailCalls && dwarf_siblingof(&child, &child) == 0);
  }
  return out;
}

}  // namespace coroner
