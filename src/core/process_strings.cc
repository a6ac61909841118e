#include "core/process_strings.h"

#include <algorithm>
#include <cstring>

#include "core/core.h"
#include "core/memory.h"

namespace coroner {
namespace {

constexpr uint64_t kMinPointer = 65536;  // vm.mmap_min_addr: no array lives below

}  // namespace

ProcessStrings ReadProcessStrings(const Core& core, std::optional<uint64_t> environ) {
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
  // The auxiliary vector's first two entries, as NT_AUXV has them, on an
  // 8-byte boundary below AT_EXECFN: the highest match is the kernel's copy
  // (only the strings lie above it; a copy a program made lies lower). The
  // window grows from 16 KiB: most blocks are a few KiB.
  std::byte needle[32];
  for (size_t i = 0; i < 2; ++i) {
    std::memcpy(needle + 16 * i, &auxv.entries[i].type, 8);
    std::memcpy(needle + 16 * i + 8, &auxv.entries[i].value, 8);
  }
  auto read_stack = [&](uint64_t from, uint64_t to, std::vector<std::byte>& bytes) {
    if (memory.Rereads(from, to - from)) {
      out.missing = "the stack's top is behind the compressed core's decoded part";
      return false;
    }
    bytes.resize(to - from);
    if (memory.ReadUpTo(from, bytes) < bytes.size()) {
      out.missing = "the stack below AT_EXECFN is not in the core";
      return false;
    }
    return true;
  };
  uint64_t floor =
      (std::max<uint64_t>(stack->vaddr, execfn > kMaxProcessStrings ? execfn - kMaxProcessStrings : 0) + 7) & ~uint64_t{7};
  std::vector<std::byte> block;  // [auxv_at, execfn): the auxv copy and the strings
  std::optional<uint64_t> auxv_at;
  for (uint64_t window = 16 << 10;; window *= 4) {
    uint64_t lo = std::max(floor, (execfn > window ? execfn - window : 0) & ~uint64_t{7});
    std::vector<std::byte> bytes;
    if (!read_stack(lo, execfn, bytes)) return out;
    for (size_t off = (bytes.size() - std::min<size_t>(bytes.size(), sizeof needle)) & ~size_t{7};; off -= 8) {
      if (off + sizeof needle <= bytes.size() && std::memcmp(bytes.data() + off, needle, sizeof needle) == 0) {
        auxv_at = lo + off;
        block.assign(bytes.begin() + static_cast<std::ptrdiff_t>(off), bytes.end());
        break;
      }
      if (off < 8) break;
    }
    if (auxv_at || lo <= floor) break;
  }
  if (!auxv_at || *auxv_at < stack->vaddr + 16) {
    out.missing = "the stack holds no copy of the auxiliary vector";
    return out;
  }
  // Below it: argc, the argv pointers, NULL, the envp pointers, NULL. Each
  // pointer names a string of the block above, so there are no more of them
  // than the NULs there.
  size_t nuls = static_cast<size_t>(std::count(block.begin(), block.end(), std::byte{0}));
  uint64_t below = 8 * std::min<uint64_t>(nuls + 3, kMaxProcessPointers + 3);
  uint64_t lo = std::max<uint64_t>(stack->vaddr, *auxv_at > below ? *auxv_at - below : 0);
  std::vector<std::byte> bytes;
  if (!read_stack(lo, *auxv_at, bytes)) return out;
  size_t top = bytes.size() & ~size_t{7};  // the auxv copy's offset in `bytes`
  auto word = [&](size_t off) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + off, 8);
    return v;
  };
  // A pointer the arrays may hold: into the strings above them, or, for an
  // entry the program replaced (setenv over an existing name, a rewritten
  // argv), anywhere a user-space pointer of the machine can point. argc,
  // below argv, is far smaller.
  const uint64_t user_end = UserSpaceEnd(core.arch());
  auto is_string = [&](uint64_t v) { return v >= kMinPointer && v < user_end; };
  if (top < 8 || word(top - 8) != 0) {
    out.missing = "no NULL ends the environment's pointers";
    return out;
  }
  // unsetenv moves the entries after the one it removes down in place, so
  // each leaves one more NULL at the array's end. The layout is the one
  // that skips the most of the NULLs there and still has argc count its
  // argument pointers: fewer would read a NULL as argc 0. (With no
  // environment left, argv's own NULL is among them.)
  std::vector<uint64_t> env, args;
  size_t off = 0;
  std::string why = "no NULL ends the command line's pointers";
  auto layout_after = [&](size_t skipped) {
    env.clear();
    args.clear();
    off = top - 8 * (1 + skipped);
    while (off >= 8 && is_string(word(off - 8)) && env.size() < kMaxProcessPointers) env.push_back(word(off -= 8));
    if (off < 8 || word(off - 8) != 0) {
      why = "no NULL ends the command line's pointers";
      return false;
    }
    off -= 8;
    while (off >= 8 && is_string(word(off - 8)) && env.size() + args.size() < kMaxProcessPointers)
      args.push_back(word(off -= 8));
    if (off < 8 || word(off - 8) != args.size()) {
      why = "argc (" + (off >= 8 ? std::to_string(word(off - 8)) : std::string("?")) +
            ") is not the number of argument pointers (" + std::to_string(args.size()) + ")";
      return false;
    }
    return true;
  };
  size_t nulls = 1;
  while (8 * (nulls + 2) <= top && word(top - 8 * (nulls + 1)) == 0 && nulls < kMaxProcessPointers) ++nulls;
  bool laid_out = false;
  for (size_t skipped = nulls; !laid_out && skipped-- > 0;) laid_out = layout_after(skipped);
  if (!laid_out) {
    out.missing = why;
    return out;
  }
  out.found = true;
  std::reverse(env.begin(), env.end());
  std::reverse(args.begin(), args.end());
  // The stack's envp array starts just above argv's NULL.
  uint64_t stack_envp = lo + off + 8 * (args.size() + 1);
  if (environ && *environ != stack_envp && *environ >= kMinPointer) {
    std::vector<uint64_t> moved;
    for (uint64_t a = *environ; moved.size() < kMaxProcessPointers; a += 8) {
      auto p = memory.Read<uint64_t>(a);
      if (!p) {
        moved.clear();
        break;
      }
      if (*p == 0) break;
      moved.push_back(*p);
    }
    if (!moved.empty()) {
      env = std::move(moved);
      out.from_environ = true;
    }
  }
  size_t total = 0, unreadable = 0;
  auto read = [&](const std::vector<uint64_t>& pointers, std::vector<std::string>& strings,
                  std::vector<uint64_t>* at_out) {
    for (uint64_t p : pointers) {
      if (total >= kMaxProcessStrings) {
        out.missing = "the command line and environment are cut at " + std::to_string(kMaxProcessStrings) + " bytes";
        return;
      }
      size_t limit = std::min(kMaxProcessString, kMaxProcessStrings - total);
      // Within the block already read, without a read of its own.
      std::optional<std::string> s;
      uint64_t at = p - *auxv_at;
      if (at < block.size()) {
        const auto* start = reinterpret_cast<const char*>(block.data()) + at;
        size_t span = std::min<size_t>(block.size() - at, limit);
        if (const void* nul = std::memchr(start, 0, span))
          s.emplace(start, static_cast<size_t>(static_cast<const char*>(nul) - start));
      }
      if (!s) s = memory.ReadCString(p, limit);
      if (!s) {
        // Scanned all the same: a million pointers to one string without
        // an end must not scan it a million times.
        total += limit;
        ++unreadable;
        continue;
      }
      total += s->size() + 1;
      strings.push_back(std::move(*s));
      if (at_out) at_out->push_back(p);
    }
  };
  read(args, out.argv, nullptr);
  read(env, out.envp, &out.envp_at);
  if (unreadable && out.missing.empty())
    out.missing = std::to_string(unreadable) + " of the strings have no end within " +
                  std::to_string(kMaxProcessString) + " bytes or are not in the core";
  return out;
}

}  // namespace coroner
