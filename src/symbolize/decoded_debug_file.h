// DecodedDebugFile: a debug file whose compressed sections are decoded once.
//
// Distributions compress the .debug_* sections of their debug files
// (SHF_COMPRESSED, zlib or zstd), and libdw decodes every one of them when it
// opens a file: for Debian's libc6-dbg that is 10 MB of zlib on every run,
// and it was 45% of the analysis of a 100 GiB core. So the first run that
// needs a module's DWARF writes a copy of the debug file with its sections
// decoded to a cache directory, keyed by build-id; later runs map the copy,
// and the pages libdw never touches (the units no frame lands in) are never
// read. Where no copy can be written (no cache directory, a full disk), the
// decoded copy is made in memory for this run only.
//
// The debug file is untrusted: sizes come from its compression headers, and
// each is checked against a cap before anything is allocated; a section that
// does not decode to its stated size makes the whole file fall back to
// libdw's own reading (which then fails or succeeds on its own terms).
#pragma once

#include <libelf.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/expected.h"

namespace coroner {

class DecodedDebugFile {
 public:
  ~DecodedDebugFile();
  DecodedDebugFile(const DecodedDebugFile&) = delete;
  DecodedDebugFile& operator=(const DecodedDebugFile&) = delete;

  // A decoded copy of `elf` (an opened debug file, open as `source_fd`):
  // from `cache_dir` when a copy of this very file is there (its build-id
  // and its identity: device, inode, size, times), else decoded now (and
  // written there when cache_dir is not empty and safe: a directory of the
  // user's that no one else may write, no link followed). nullptr when `elf`
  // has no compressed section or they cannot be decoded (or would decode
  // past 256 times their size: a bomb). `source_fd` -1: no cache.
  static std::unique_ptr<DecodedDebugFile> Open(Elf* elf, int source_fd, const std::string& cache_dir);

  // The decoded file, for libdw. Owned by this object.
  Elf* elf() const { return elf_; }
  // The copy in the cache this was read from; empty when made in memory.
  const std::string& cache_path() const { return cache_path_; }

 private:
  DecodedDebugFile() = default;
  Elf* elf_ = nullptr;
  int fd_ = -1;                 // the cached copy, when read from the cache
  void* memory_ = nullptr;      // the image, when made in memory
  uint64_t memory_size_ = 0;
  std::string cache_path_;
};

// The directory for decoded copies: $CORONER_CACHE_DIR (empty: no cache),
// else $XDG_CACHE_HOME/coroner, else $HOME/.cache/coroner.
std::string DefaultCacheDir();

// True when `elf` has a section with SHF_COMPRESSED set.
bool HasCompressedSections(Elf* elf);

// The size of `elf` with every compressed section decoded, laid out as
// WriteDecodedImage lays it out; an error for malformed headers or a file
// beyond the cap (4 GiB).
Expected<uint64_t> DecodedImageSize(Elf* elf);
// Writes that image into `out` (exactly DecodedImageSize bytes, zeroed):
// the ELF header, program headers, every section (decoded where it was
// compressed) and the section headers, with offsets, sizes and flags
// rewritten. An error when a section does not decode to its stated size.
Status WriteDecodedImage(Elf* elf, std::span<std::byte> out);

}  // namespace coroner
