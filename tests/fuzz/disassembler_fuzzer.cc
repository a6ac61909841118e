// libFuzzer target: the decoder and gdb's spelling on arbitrary bytes (a pc
// in data, a corrupt code page, JIT code). Any crash, hang or sanitizer
// report is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "symbolize/disassembler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A few KiB is a function; more only slows the fuzzer down.
  auto bytes = std::as_bytes(std::span(data, std::min<size_t>(size, 2048)));
  // x86 decodes differently from each start offset.
  for (size_t skip = 0; skip < 4 && skip < bytes.size(); ++skip) {
    for (const coroner::Instruction& in : coroner::DecodeInstructions(bytes.subspan(skip), 0x401000 + skip)) {
      if (in.text.empty() || in.bytes.empty()) __builtin_trap();
    }
  }
  // AArch64 (Capstone): fixed-size, but any four bytes may be read.
  for (const coroner::Instruction& in : coroner::DecodeInstructions(bytes, 0x400000, coroner::Arch::kAarch64)) {
    if (in.text.empty() || in.bytes.size() != 8) __builtin_trap();
  }
  return 0;
}
