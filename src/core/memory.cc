#include "core/memory.h"

#include <algorithm>
#include <array>

namespace coroner {

const Segment* Memory::Find(uint64_t addr) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), addr,
                             [](uint64_t a, const Segment& s) { return a < s.vaddr; });
  if (it == segments_.begin()) return nullptr;
  --it;
  if (addr - it->vaddr < it->memsz) return &*it;
  return nullptr;
}

AddressState Memory::State(uint64_t addr) const {
  const Segment* s = Find(addr);
  if (!s) return AddressState::kUnmapped;
  return addr - s->vaddr < s->present ? AddressState::kPresent : AddressState::kAbsent;
}

size_t Memory::ReadUpTo(uint64_t addr, std::span<std::byte> out) const {
  size_t done = 0;
  while (done < out.size()) {
    uint64_t a = addr + done;
    if (a < addr) break;  // wrapped around the address space
    const Segment* s = Find(a);
    if (!s) break;
    uint64_t in = a - s->vaddr;
    if (in >= s->present) break;
    size_t n = static_cast<size_t>(std::min<uint64_t>(out.size() - done, s->present - in));
    auto got = source_.ReadUpTo(s->offset + in, out.subspan(done, n));
    if (!got.ok()) break;
    done += *got;
    if (*got != n) break;
  }
  return done;
}

bool Memory::Rereads(uint64_t addr, uint64_t size) const {
  const Segment* s = Find(addr);
  if (!s || addr - s->vaddr >= s->present) return false;  // not in the core: nothing to decode
  uint64_t in = addr - s->vaddr;
  return source_.Rereads(s->offset + in, std::min(size, s->present - in));
}

std::optional<std::string> Memory::ReadCString(uint64_t addr, size_t limit) const {
  std::string result;
  std::array<char, 256> chunk;
  while (result.size() < limit) {
    size_t want = std::min(chunk.size(), limit - result.size());
    size_t n = ReadUpTo(addr + result.size(), std::as_writable_bytes(std::span(chunk.data(), want)));
    if (n == 0) return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
      if (chunk[i] == '\0') return result;
      result.push_back(chunk[i]);
    }
    if (n < want) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace coroner
