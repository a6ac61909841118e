#include "core/process_strings.h"

#include <algorithm>
#include <cstring>

#include "core/core.h"
#include "core/memory.h"

namespace coroner {
namespace {

constexpr uint64_t kMinPointer = 65536;  // vm.mmap_min_addr: no array lives below

// Reads [from, to) of the stack whole, or says why not.
bool ReadStack(const Memory& memory, uint64_t from, uint64_t to, std::vector<std::byte>& bytes, std::string& missing) {
  if (memory.Rereads(from, to - from)) {
    missing = "the stack's top is behind the compressed core's decoded part";
    return false;
  }
  bytes.resize(to - from);
  if (memory.ReadUpTo(from, bytes) < bytes.size()) {
    missing = "the stack below AT_EXECFN is not in the core";
    return false;
  }
  return true;
}

// The top of the initial stack: the kernel's copy of the auxiliary vector
// and, above it up to AT_EXECFN, the strings.
struct StackTop {
  uint64_t auxv_at = 0;
  std::vector<std::byte> block;  // [auxv_at, execfn)
};

// The auxiliary vector's first two entries, as NT_AUXV has them, on an
// 8-byte boundary below AT_EXECFN: the highest match is the kernel's copy
// (only the strings lie above it; a copy a program made lies lower). The
// window grows from 16 KiB: most blocks are a few KiB.
std::optional<StackTop> FindAuxvCopy(const Core& core, const Segment& stack, uint64_t execfn, std::string& missing) {
  const Auxv& auxv = core.auxv();
  std::byte needle[32];
  for (size_t i = 0; i < 2; ++i) {
    std::memcpy(needle + 16 * i, &auxv.entries[i].type, 8);
    std::memcpy(needle + 16 * i + 8, &auxv.entries[i].value, 8);
  }
  uint64_t floor =
      (std::max<uint64_t>(stack.vaddr, execfn > kMaxProcessStrings ? execfn - kMaxProcessStrings : 0) + 7) & ~uint64_t{7};
  for (uint64_t window = 16 << 10;; window *= 4) {
    uint64_t lo = std::max(floor, (execfn > window ? execfn - window : 0) & ~uint64_t{7});
    std::vector<std::byte> bytes;
    if (!ReadStack(core.memory(), lo, execfn, bytes, missing)) return std::nullopt;
    for (size_t off = (bytes.size() - std::min<size_t>(bytes.size(), sizeof needle)) & ~size_t{7};; off -= 8) {
      if (off + sizeof needle <= bytes.size() && std::memcmp(bytes.data() + off, needle, sizeof needle) == 0) {
        if (lo + off < stack.vaddr + 16) {  // no room for argc below it
          missing = "the stack holds no copy of the auxiliary vector";
          return std::nullopt;
        }
        return StackTop{lo + off, std::vector<std::byte>(bytes.begin() + static_cast<std::ptrdiff_t>(off), bytes.end())};
      }
      if (off < 8) break;
    }
    if (lo <= floor) break;
  }
  missing = "the stack holds no copy of the auxiliary vector";
  return std::nullopt;
}

// argv's and envp's pointers, in order, and where the stack's envp array
// starts.
struct PointerArrays {
  std::vector<uint64_t> args, env;
  uint64_t envp_at = 0;
};

// Below the auxv copy: argc, the argv pointers, NULL, the envp pointers,
// NULL. Each pointer names a string of the block above, so there are no
// more of them than the NULs there.
std::optional<PointerArrays> ReadPointerArrays(const Core& core, const Segment& stack, const StackTop& top_of,
                                               std::string& missing) {
  size_t nuls = static_cast<size_t>(std::count(top_of.block.begin(), top_of.block.end(), std::byte{0}));
  uint64_t below = 8 * std::min<uint64_t>(nuls + 3, kMaxProcessPointers + 3);
  uint64_t lo = std::max<uint64_t>(stack.vaddr, top_of.auxv_at > below ? top_of.auxv_at - below : 0);
  std::vector<std::byte> bytes;
  if (!ReadStack(core.memory(), lo, top_of.auxv_at, bytes, missing)) return std::nullopt;
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
    missing = "no NULL ends the environment's pointers";
    return std::nullopt;
  }
  // unsetenv moves the entries after the one it removes down in place, so
  // each leaves one more NULL at the array's end. The layout is the one
  // that skips the most of the NULLs there and still has argc count its
  // argument pointers: fewer would read a NULL as argc 0. (With no
  // environment left, argv's own NULL is among them.)
  PointerArrays out;
  size_t off = 0;
  std::string why = "no NULL ends the command line's pointers";
  auto layout_after = [&](size_t skipped) {
    out.env.clear();
    out.args.clear();
    off = top - 8 * (1 + skipped);
    while (off >= 8 && is_string(word(off - 8)) && out.env.size() < kMaxProcessPointers) out.env.push_back(word(off -= 8));
    if (off < 8 || word(off - 8) != 0) {
      why = "no NULL ends the command line's pointers";
      return false;
    }
    off -= 8;
    while (off >= 8 && is_string(word(off - 8)) && out.env.size() + out.args.size() < kMaxProcessPointers)
      out.args.push_back(word(off -= 8));
    if (off < 8 || word(off - 8) != out.args.size()) {
      why = "argc (" + (off >= 8 ? std::to_string(word(off - 8)) : std::string("?")) +
            ") is not the number of argument pointers (" + std::to_string(out.args.size()) + ")";
      return false;
    }
    return true;
  };
  size_t nulls = 1;
  while (8 * (nulls + 2) <= top && word(top - 8 * (nulls + 1)) == 0 && nulls < kMaxProcessPointers) ++nulls;
  bool laid_out = false;
  for (size_t skipped = nulls; !laid_out && skipped-- > 0;) laid_out = layout_after(skipped);
  if (!laid_out) {
    missing = why;
    return std::nullopt;
  }
  std::reverse(out.env.begin(), out.env.end());
  std::reverse(out.args.begin(), out.args.end());
  // The stack's envp array starts just above argv's NULL.
  out.envp_at = lo + off + 8 * (out.args.size() + 1);
  return out;
}

// The array `environ` points at, when the program moved it (setenv grows
// it on the heap); empty when it cannot be read whole.
std::vector<uint64_t> EnvironArray(const Memory& memory, uint64_t environ) {
  std::vector<uint64_t> moved;
  for (uint64_t a = environ; moved.size() < kMaxProcessPointers; a += 8) {
    auto p = memory.Read<uint64_t>(a);
    if (!p) return {};
    if (*p == 0) break;
    moved.push_back(*p);
  }
  return moved;
}

// Reads the strings `pointers` name, all of them within kMaxProcessStrings
// bytes together (`total`, shared by argv and envp): from the block read
// already where they lie in it, else from the core.
struct StringReader {
  const Memory& memory;
  const StackTop& top_of;
  std::string& missing;
  size_t total = 0, unreadable = 0;

  void Read(const std::vector<uint64_t>& pointers, std::vector<std::string>& strings, std::vector<uint64_t>* at_out) {
    for (uint64_t p : pointers) {
      if (total >= kMaxProcessStrings) {
        missing = "the command line and environment are cut at " + std::to_string(kMaxProcessStrings) + " bytes";
        return;
      }
      size_t limit = std::min(kMaxProcessString, kMaxProcessStrings - total);
      std::optional<std::string> s;
      uint64_t at = p - top_of.auxv_at;
      if (at < top_of.block.size()) {
        const auto* start = reinterpret_cast<const char*>(top_of.block.data()) + at;
        size_t span = std::min<size_t>(top_of.block.size() - at, limit);
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
  }
};

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
  std::optional<StackTop> top_of = FindAuxvCopy(core, *stack, execfn, out.missing);
  if (!top_of) return out;
  std::optional<PointerArrays> arrays = ReadPointerArrays(core, *stack, *top_of, out.missing);
  if (!arrays) return out;
  out.found = true;
  if (environ && *environ != arrays->envp_at && *environ >= kMinPointer) {
    if (std::vector<uint64_t> moved = EnvironArray(memory, *environ); !moved.empty()) {
      arrays->env = std::move(moved);
      out.from_environ = true;
    }
  }
  StringReader reader{memory, *top_of, out.missing};
  reader.Read(arrays->args, out.argv, nullptr);
  reader.Read(arrays->env, out.envp, &out.envp_at);
  if (reader.unreadable && out.missing.empty())
    out.missing = std::to_string(reader.unreadable) + " of the strings have no end within " +
                  std::to_string(kMaxProcessString) + " bytes or are not in the core";
  return out;
}

}  // namespace coroner
