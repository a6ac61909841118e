#include "core/process_strings.h"

#include <algorithm>
#include <cstring>

#include "core/core.h"

namespace coroner {

ProcessStrings ReadProcessStrings(const Core& core) {
  ProcessStrings out;
  const Auxv& auxv = core.auxv();
  const Memory& memory = core.memory();
  if (!auxv.execfn_addr || auxv.entries.size() < 2) {
    out.missing = "the core has no auxiliary vector with AT_EXECFN";
    return out;
  }
  uint64_t execfn = *auxv.execfn_addr;
  const Segment* stack = memory.Find(execfn);
  if (!stack || execfn < 8) {
    out.missing = "AT_EXECFN points outside the core's memory";
    return out;
  }
  // The stack's bytes below AT_EXECFN: the pointer arrays and strings.
  uint64_t lo = std::max<uint64_t>(stack->vaddr, execfn > kMaxProcessStrings ? execfn - kMaxProcessStrings : 0);
  lo &= ~uint64_t{7};
  if (memory.Rereads(lo, execfn - lo)) {
    out.missing = "the stack's top is behind the compressed core's decoded part";
    return out;
  }
  std::vector<std::byte> bytes(execfn - lo);
  size_t got = memory.ReadUpTo(lo, bytes);
  if (got < bytes.size()) {
    out.missing = "the stack below AT_EXECFN is not in the core";
    return out;
  }
  // The auxiliary vector's first two entries, as NT_AUXV has them, on an
  // 8-byte boundary: the last match is the kernel's copy (the strings lie
  // above it, and a copy a program made lies lower).
  std::byte needle[32];
  for (size_t i = 0; i < 2; ++i) {
    std::memcpy(needle + 16 * i, &auxv.entries[i].type, 8);
    std::memcpy(needle + 16 * i + 8, &auxv.entries[i].value, 8);
  }
  std::optional<size_t> at;
  for (size_t off = 0; off + sizeof needle <= bytes.size(); off += 8)
    if (std::memcmp(bytes.data() + off, needle, sizeof needle) == 0) at = off;
  if (!at || *at < 16) {
    out.missing = "the stack holds no copy of the auxiliary vector";
    return out;
  }
  auto word = [&](size_t off) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + off, 8);
    return v;
  };
  // A pointer into the strings: above the pointer arrays, up to AT_EXECFN.
  uint64_t strings_lo = lo + *at;
  auto is_string = [&](uint64_t v) { return v > strings_lo && v <= execfn; };
  if (word(*at - 8) != 0) {
    out.missing = "no NULL ends the environment's pointers";
    return out;
  }
  std::vector<uint64_t> env, args;
  size_t off = *at - 16;
  for (; off >= 8 && is_string(word(off)) && env.size() < kMaxProcessPointers; off -= 8) env.push_back(word(off));
  if (word(off) != 0 || off < 8) {
    out.missing = "no NULL ends the command line's pointers";
    return out;
  }
  for (off -= 8; off >= 8 && is_string(word(off)) && env.size() + args.size() < kMaxProcessPointers; off -= 8)
    args.push_back(word(off));
  if (word(off) != args.size()) {
    out.missing = "argc (" + std::to_string(word(off)) + ") is not the number of argument pointers (" +
                  std::to_string(args.size()) + ")";
    return out;
  }
  out.found = true;
  std::reverse(env.begin(), env.end());
  std::reverse(args.begin(), args.end());
  size_t total = 0, unreadable = 0;
  auto read = [&](const std::vector<uint64_t>& pointers, std::vector<std::string>& strings) {
    for (uint64_t p : pointers) {
      if (total >= kMaxProcessStrings) {
        out.missing = "the command line and environment are cut at " + std::to_string(kMaxProcessStrings) + " bytes";
        return;
      }
      auto s = memory.ReadCString(p, std::min(kMaxProcessString, kMaxProcessStrings - total));
      if (!s) {
        ++unreadable;
        continue;
      }
      total += s->size() + 1;
      strings.push_back(std::move(*s));
    }
  };
  read(args, out.argv);
  read(env, out.envp);
  if (unreadable && out.missing.empty())
    out.missing = std::to_string(unreadable) + " of the strings have no end within " +
                  std::to_string(kMaxProcessString) + " bytes or are not in the core";
  return out;
}

}  // namespace coroner
