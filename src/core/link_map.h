// The dynamic linker's list of loaded objects (r_debug / link_map), read
// from a core's memory: where the modules are when the core does not say
// (qemu-user writes no NT_FILE note, nor the objects' header pages).
//
// The list is the process's own data, so it is untrusted like the rest of
// the core: the walk is bounded, stops at a loop, and each name is a bounded
// string.
#pragma once

#include <elf.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/memory.h"

namespace coroner {

struct LinkMapEntry {
  uint64_t load_bias = 0;  // l_addr
  std::string name;        // l_name: empty for the executable
  uint64_t dynamic = 0;    // l_ld
};

struct LinkMapList {
  std::vector<LinkMapEntry> entries;
  std::string problem;  // why the walk stopped early, in words; empty when it did not
};

// The main program's program headers, read where AT_PHDR puts them in
// memory (`phnum` of them, at most kMaxImagePhdrs); empty when any is not
// readable.
std::vector<Elf64_Phdr> ProgramHeadersAt(const Memory& memory, uint64_t at_phdr, uint64_t phnum);

// Where the main program was loaded, from its program headers and AT_PHDR:
// the load bias (by PT_PHDR; without one, the headers follow the ELF
// header in the first PT_LOAD) and its dynamic section's address.
struct ProgramPlace {
  std::optional<uint64_t> bias, dynamic;
};
ProgramPlace PlaceProgram(std::span<const Elf64_Phdr> phdrs, uint64_t at_phdr);

// The r_debug structure's address from the executable's dynamic section at
// `dynamic` (its DT_DEBUG entry, which the dynamic linker fills in); nullopt
// when the section is not readable or has none (a static program).
std::optional<uint64_t> DebugStructureAddress(const Memory& memory, uint64_t dynamic);

// The list r_debug at `r_debug` points to, in its order (the executable
// first, then the libraries as loaded).
LinkMapList ReadLinkMap(const Memory& memory, uint64_t r_debug);

}  // namespace coroner
