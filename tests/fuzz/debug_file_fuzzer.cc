// libFuzzer target: hostile debug files with compressed sections. The bytes
// are taken as an ELF file; its decoded image (symbolize/decoded_debug_file.h)
// is sized, written, and opened again, in memory only. Seeded with zoo debug
// files compressed by objcopy (zlib and zstd). Any crash, hang, sanitizer
// report or oversized allocation is a bug; a refusal is an answer.
#include <libelf.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "symbolize/decoded_debug_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool initialized = elf_version(EV_CURRENT) != EV_NONE;
  if (!initialized) return 0;
  std::vector<char> file(data, data + size);  // libelf may write into a memory image
  Elf* elf = elf_memory(file.data(), file.size());
  if (!elf) return 0;
  if (elf_kind(elf) == ELF_K_ELF) {
    auto image_size = coroner::DecodedImageSize(elf);
    // Sizes beyond this are valid answers but slow the fuzzer down.
    if (image_size.ok() && *image_size <= (64u << 20)) {
      std::vector<std::byte> image(*image_size);
      if (coroner::WriteDecodedImage(elf, image).ok()) {
        Elf* decoded = elf_memory(reinterpret_cast<char*>(image.data()), image.size());
        if (!decoded || elf_kind(decoded) != ELF_K_ELF || coroner::HasCompressedSections(decoded)) __builtin_trap();
        elf_end(decoded);
      }
    }
    // The whole path as the symbolizer takes it, with no cache directory.
    auto opened = coroner::DecodedDebugFile::Open(elf, -1, "");
    if (opened && coroner::HasCompressedSections(opened->elf())) __builtin_trap();
  }
  elf_end(elf);
  return 0;
}
