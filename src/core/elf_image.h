// Reading the headers and GNU build-id of an ELF object (an executable or a
// shared library), either as it was mapped in the process (from the core's
// memory) or as a file on disk. Both are untrusted: counts are capped and
// every read is bounded.
#pragma once

#include <elf.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace coroner {

// Reads up to out.size() bytes at `offset` of whatever the caller maps it to;
// returns how many were read.
using ReadAtFn = std::function<size_t(uint64_t offset, std::span<std::byte> out)>;

struct ElfImage {
  Elf64_Ehdr ehdr{};
  std::vector<Elf64_Phdr> phdrs;  // at most kMaxImagePhdrs
};

constexpr size_t kMaxImagePhdrs = 512;

// The ELF header and program headers at offset 0 of `read`. nullopt when the
// bytes are not a 64-bit little-endian x86_64 or aarch64 ELF object or are
// cut short. The caller compares ehdr.e_machine with the core's.
std::optional<ElfImage> ReadElfImage(const ReadAtFn& read);

// What an image's PT_NOTE segments say of it. `note_offset(phdr)` says
// where a note segment is for `read` (p_vaddr + bias in memory, p_offset in
// a file). Each is empty when there is none or it cannot be read.
struct ImageNotes {
  std::string build_id;  // the GNU build-id, lowercase hex
  // The package metadata note (FDO's `.note.package`, name "FDO", type
  // 0xcafe1a7e): its JSON text as the image holds it, at most 4 KiB, to
  // its first NUL. Untrusted: PackageNote parses it.
  std::string package_json;
};
ImageNotes ReadImageNotes(const ElfImage& image, const ReadAtFn& read,
                          const std::function<uint64_t(const Elf64_Phdr&)>& note_offset);
// ReadImageNotes' build-id alone.
std::string ReadBuildId(const ElfImage& image, const ReadAtFn& read,
                        const std::function<uint64_t(const Elf64_Phdr&)>& note_offset);

// The vaddr that file offset 0 is mapped at, per the first PT_LOAD: the load
// bias is mapped_address_of_offset_0 - this.
std::optional<uint64_t> FirstLoadVaddr(const ElfImage& image);

// The span of the PT_LOAD segments relative to the bias (the highest
// p_vaddr + p_memsz, rounded up to a page): an image mapped with bias B
// ends at B + this. nullopt when there is no PT_LOAD or a segment's end
// overflows.
std::optional<uint64_t> LoadEnd(const ElfImage& image);

}  // namespace coroner
