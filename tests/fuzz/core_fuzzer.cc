// libFuzzer target: the ELF core reader (headers, segments, notes of x86_64
// and aarch64 cores, modules, the dynamic linker's list) on arbitrary bytes. Any crash, hang or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/core.h"
#include "core/link_map.h"

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
      const uint64_t sp = c.threads()[0].registers.sp();
      sink = sink + c.memory().ReadUpTo(sp, std::as_writable_bytes(std::span(&word, 1)));
      // The dynamic linker's list, walked from whatever the stack holds (a
      // core without NT_FILE is read through it): bounded, loop-safe.
      sink = sink + coroner::DebugStructureAddress(c.memory(), sp).value_or(0);
      sink = sink + coroner::ReadLinkMap(c.memory(), sp).entries.size();
    }
    for (const auto& t : c.threads()) sink = sink + t.a64.pac_insn_mask.value_or(0) + (t.a64_fpregs ? 1 : 0);
  }
  return 0;
}
