// The process's command line and environment, as the kernel laid them out
// at the top of the main thread's stack at exec: argc, the argv pointers, a
// NULL, the envp pointers, a NULL, the auxiliary vector, and above them the
// strings, the executable's name (AT_EXECFN) last. The auxiliary vector the
// core's NT_AUXV holds is the same bytes as the stack's copy, which finds
// the pointer arrays; the pointers are followed to their strings, so what a
// program wrote over its argv (for ps) or an environment entry putenv
// replaced in place is what is read.
//
// Every pointer and length comes from the process's memory: the search is
// limited to kMaxProcessStrings bytes below AT_EXECFN, a string to the
// kernel's MAX_ARG_STRLEN, the whole to kMaxProcessStrings; what could not
// be read is said in `missing`.
//
// The environment holds secrets. It is returned whole to the caller that
// decides what may be shown (processor/process_identity.h), and nowhere
// else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coroner {

class Core;

constexpr size_t kMaxProcessStrings = 8u << 20;   // bytes searched and read, in all
constexpr size_t kMaxProcessString = 128u << 10;  // one string (the kernel's MAX_ARG_STRLEN)
constexpr size_t kMaxProcessPointers = 1u << 20;  // argv and envp entries, together

struct ProcessStrings {
  std::vector<std::string> argv;
  std::vector<std::string> envp;  // "NAME=value" as the process had them
  std::vector<uint64_t> envp_at;  // where each of envp's strings lies in the process
  std::string missing;            // what could not be read, and why; empty when all was
  bool found = false;             // the pointer arrays were found
  bool from_environ = false;      // the environment is glibc's environ's, not the stack's array
};

// `environ`, when given, is where glibc's `environ` points now: when it is
// not the stack's envp array (a setenv moved it to the heap), the
// environment is read from it instead (the same bounds).
ProcessStrings ReadProcessStrings(const Core& core, std::optional<uint64_t> environ = std::nullopt);

}  // namespace coroner
