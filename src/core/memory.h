// Memory: the process's address space as the core's PT_LOAD segments give it.
//
// For any address it answers whether it was mapped, with which permissions,
// and whether its bytes are present in this core (a segment's filesz may be
// smaller than its memsz, and a truncated core or a prefix holds fewer bytes
// still). Reads go through the core's ByteSource. An unmapped or absent
// address is an answer (0 bytes, nullopt), not an error.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/registers.h"
#include "source/byte_source.h"

namespace coroner {

struct Segment {
  uint64_t vaddr = 0, memsz = 0;
  uint64_t offset = 0, filesz = 0;  // where its bytes are in the core
  uint64_t present = 0;             // bytes of filesz actually in the core (<= filesz)
  bool read = false, write = false, exec = false;
  uint64_t end() const { return vaddr + memsz; }
};

enum class AddressState { kUnmapped, kAbsent, kPresent };

// x86-64's 48-bit virtual addresses: bits 47 to 63 all equal. Any other
// value faults as a general-protection fault, with no fault address.
inline bool IsCanonicalAddress(uint64_t a) {
  uint64_t top = a >> 47;
  return top == 0 || top == 0x1ffff;
}

// aarch64 Linux ignores a data address's top byte (TBI): a tag goes there.
constexpr uint64_t kA64TagBits = 0xff00000000000000ull;
// `a` as the machine's loads and stores use it: without an aarch64 tag.
inline uint64_t UntaggedAddress(Arch arch, uint64_t a) { return arch == Arch::kAarch64 ? a & ~kA64TagBits : a; }
// An address the machine can use at all: x86_64's canonical ones, aarch64's
// 48-bit ones once untagged.
inline bool IsCanonicalAddress(Arch arch, uint64_t a) {
  return arch == Arch::kAarch64 ? (UntaggedAddress(arch, a) >> 48) == 0 : IsCanonicalAddress(a);
}

// The end of user space, where a user pointer (untagged) lies below:
// x86_64's 4-level paging gives 2^47, aarch64's 48-bit VA 2^48 (a native
// arm64 kernel puts the main stack and the mmap area just below it).
inline uint64_t UserSpaceEnd(Arch arch) { return uint64_t{1} << (arch == Arch::kAarch64 ? 48 : 47); }

class Memory {
 public:
  // `segments` must be sorted by vaddr and must not overlap.
  Memory(ByteSource& source, std::vector<Segment> segments)
      : source_(source), segments_(std::move(segments)) {}

  const std::vector<Segment>& segments() const { return segments_; }
  const Segment* Find(uint64_t addr) const;
  AddressState State(uint64_t addr) const;

  // Reads up to out.size() bytes at addr, stopping where the present bytes
  // stop (an unmapped gap, the end of a segment's dumped part). Contiguous
  // segments are read across.
  size_t ReadUpTo(uint64_t addr, std::span<std::byte> out) const;

  template <typename T>
  std::optional<T> Read(uint64_t addr) const {
    T value;
    if (ReadUpTo(addr, std::as_writable_bytes(std::span<T, 1>(&value, 1))) != sizeof(T)) {
      return std::nullopt;
    }
    return value;
  }

  // True when reading these bytes would decode a compressed core's stream
  // again from its start (ByteSource::Rereads).
  bool Rereads(uint64_t addr, uint64_t size) const;

  // A NUL-terminated string of at most `limit` bytes; nullopt when no NUL is
  // found within the limit or the bytes are absent.
  std::optional<std::string> ReadCString(uint64_t addr, size_t limit) const;

 private:
  ByteSource& source_;
  std::vector<Segment> segments_;
};

}  // namespace coroner
