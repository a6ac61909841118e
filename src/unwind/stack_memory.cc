#include "unwind/stack_memory.h"

#include <algorithm>
#include <cstring>

namespace coroner {

const StackMemory::Page* StackMemory::GetPage(uint64_t page) {
  if (auto it = pages_.find(page); it != pages_.end()) return &it->second;
  if (pages_.size() >= kMaxPages) return nullptr;
  Page p;
  p.present = memory_.ReadUpTo(page, p.bytes);
  return &pages_.emplace(page, p).first->second;
}

std::optional<uint64_t> StackMemory::Read64(uint64_t addr) {
  uint64_t page = addr & ~(kPage - 1);
  size_t in = static_cast<size_t>(addr - page);
  uint64_t value = 0;
  if (in + 8 <= kPage) {
    const Page* p = GetPage(page);
    if (!p) return std::nullopt;
    if (in + 8 > p->present) {
      // A page the core holds only in pieces (a core made from a crashlog
      // line holds just the words it logged): read the word itself.
      if (p->present == kPage) return std::nullopt;
      std::byte b[8];
      if (memory_.ReadUpTo(addr, b) != 8) return std::nullopt;
      std::memcpy(&value, b, 8);
      return value;
    }
    std::memcpy(&value, p->bytes.data() + in, 8);
    return value;
  }
  // Straddles two pages.
  const Page* a = GetPage(page);
  const Page* b = GetPage(page + kPage);
  if (!a || !b || a->present < kPage || b->present < in + 8 - kPage) return std::nullopt;
  size_t first = kPage - in;
  std::memcpy(&value, a->bytes.data() + in, first);
  std::memcpy(reinterpret_cast<std::byte*>(&value) + first, b->bytes.data(), 8 - first);
  return value;
}

size_t StackMemory::Read(uint64_t addr, std::span<std::byte> out) {
  size_t done = 0;
  while (done < out.size()) {
    uint64_t at = addr + done;
    if (at < addr) break;  // wrapped past the top of the address space
    uint64_t page = at & ~(kPage - 1);
    size_t in = static_cast<size_t>(at - page);
    const Page* p = GetPage(page);
    if (!p) break;
    if (p->present < kPage) {
      // A page held only in pieces: ask the core for the rest directly.
      return done + memory_.ReadUpTo(at, out.subspan(done));
    }
    size_t n = std::min(out.size() - done, kPage - in);
    std::memcpy(out.data() + done, p->bytes.data() + in, n);
    done += n;
  }
  return done;
}

}  // namespace coroner
