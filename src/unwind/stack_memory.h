// StackMemory: the core's memory as the unwinder reads it, one 4 KiB page at
// a time, each page read once. Only present pages are read, so the bytes a
// backtrace costs are the stack pages it touched, whatever the core's size.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>

#include "core/memory.h"

namespace coroner {

class StackMemory {
 public:
  explicit StackMemory(const Memory& memory) : memory_(memory) {}
  std::optional<uint64_t> Read64(uint64_t addr);
  // Reads up to out.size() bytes at addr through the same pages; returns how
  // many were present, stopping at the first absent byte.
  size_t Read(uint64_t addr, std::span<std::byte> out);

 private:
  static constexpr uint64_t kPage = 4096;
  static constexpr size_t kMaxPages = 4096;  // 16 MiB per core at most
  struct Page {
    std::array<std::byte, kPage> bytes;
    size_t present;  // bytes of the page that the core holds
  };
  const Page* GetPage(uint64_t page);

  const Memory& memory_;
  std::unordered_map<uint64_t, Page> pages_;
};

}  // namespace coroner
