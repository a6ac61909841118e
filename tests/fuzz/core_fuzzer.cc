// libFuzzer target: the ELF core reader (headers, segments, notes, modules)
// on arbitrary bytes. Any crash, hang or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/core.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data),
                               reinterpret_cast<const std::byte*>(data) + size);
  coroner::CoreOptions options;
  options.check_module_files = false;  // stay off the disk
  auto core = coroner::Core::Open(coroner::MakeMemorySource(std::move(bytes)), options);
  if (core.ok()) {
    // Touch what the report layer would.
    const auto& c = **core;
    volatile uint64_t sink = 0;
    for (const auto& t : c.threads()) sink = sink + t.registers.pc();
    for (const auto& m : c.modules()) sink = sink + m.base + m.build_id.size();
    if (!c.threads().empty()) {
      uint64_t word = 0;
      sink = sink + c.memory().ReadUpTo(c.threads()[0].registers.sp(), std::as_writable_bytes(std::span(&word, 1)));
    }
  }
  return 0;
}
