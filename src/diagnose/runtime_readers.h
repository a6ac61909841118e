// Readers of the runtime's own structures in a crashed process's memory:
// glibc's abort message, the C++ exception being thrown, and the dynamic
// linker's load order. Each follows pointers through the core, so each is
// bounded (a scan window, a string cap, a chain length) and returns what it
// could read, never more.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/core.h"
#include "diagnose/evidence.h"
#include "symbolize/module_map.h"
#include "unwind/stack_memory.h"

namespace coroner {

// glibc's __abort_msg (set by assert, malloc_printerr, abort with a message):
// its text, trailing newlines and spaces removed; nullopt when no module
// defines it or it is unset.
std::optional<std::string> ReadAbortMessage(const Core& core, const ModuleMap& modules, StackMemory& memory);

// The exception std::terminate was called for, from the 16 KiB of stack
// above `sp`: a pointer to its std::type_info (a vtable, then a mangled name)
// and the object whose exception header names that type; `what` when the
// object keeps its message behind its vtable (std::runtime_error and
// std::logic_error).
struct ThrownException {
  std::optional<std::string> type, what;
};
ThrownException ReadThrownException(const Core& core, const ModuleMap& modules, StackMemory& memory, uint64_t sp);

// The modules in the dynamic linker's load order (the executable's
// PT_DYNAMIC -> DT_DEBUG -> r_debug -> link_map chain, at most 4,096
// entries), then whatever the link map did not list.
std::vector<const MappedModule*> LinkMapOrder(const Core& core, const ModuleMap& modules, StackMemory& memory);

}  // namespace coroner
