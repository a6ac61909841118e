#include "core/elf_image.h"

#include <algorithm>
#include <cstring>

#include "core/byte_view.h"

namespace coroner {

std::optional<ElfImage> ReadElfImage(const ReadAtFn& read) {
  ElfImage image;
  auto* eh = reinterpret_cast<std::byte*>(&image.ehdr);
  if (read(0, std::span(eh, sizeof(Elf64_Ehdr))) != sizeof(Elf64_Ehdr)) return std::nullopt;
  const auto& e = image.ehdr;
  if (std::memcmp(e.e_ident, ELFMAG, SELFMAG) != 0 || e.e_ident[EI_CLASS] != ELFCLASS64 ||
      e.e_ident[EI_DATA] != ELFDATA2LSB || (e.e_machine != EM_X86_64 && e.e_machine != EM_AARCH64) ||
      e.e_phentsize != sizeof(Elf64_Phdr)) {
    return std::nullopt;
  }
  size_t n = std::min<size_t>(e.e_phnum, kMaxImagePhdrs);
  image.phdrs.resize(n);
  auto bytes = std::as_writable_bytes(std::span(image.phdrs));
  size_t got = read(e.e_phoff, bytes);
  image.phdrs.resize(got / sizeof(Elf64_Phdr));
  return image;
}

ImageNotes ReadImageNotes(const ElfImage& image, const ReadAtFn& read,
                          const std::function<uint64_t(const Elf64_Phdr&)>& note_offset) {
  constexpr size_t kMaxNoteSegment = 64 * 1024;
  constexpr uint32_t kPackageNote = 0xcafe1a7e;
  constexpr size_t kMaxPackageNote = 4096;
  ImageNotes out;
  for (const auto& ph : image.phdrs) {
    if (ph.p_type != PT_NOTE) continue;
    size_t len = static_cast<size_t>(std::min<uint64_t>(ph.p_filesz, kMaxNoteSegment));
    std::vector<std::byte> buf(len);
    buf.resize(read(note_offset(ph), buf));
    ByteView notes(buf);
    size_t pos = 0;
    while (notes.Has(pos, 12)) {
      uint32_t namesz = *notes.At<uint32_t>(pos);
      uint32_t descsz = *notes.At<uint32_t>(pos + 4);
      uint32_t type = *notes.At<uint32_t>(pos + 8);
      uint64_t name_at = pos + 12;
      uint64_t desc_at = name_at + AlignUp4(namesz);
      uint64_t next = desc_at + AlignUp4(descsz);
      if (!notes.Has(name_at, namesz) || !notes.Has(desc_at, descsz)) break;
      if (out.build_id.empty() && type == NT_GNU_BUILD_ID && namesz == 4 && notes.FixedString(name_at, 4) == "GNU" &&
          descsz > 0 && descsz <= 64) {
        out.build_id = HexBytes(notes.bytes().subspan(desc_at, descsz));
      }
      if (out.package_json.empty() && type == kPackageNote && namesz == 4 && notes.FixedString(name_at, 4) == "FDO" &&
          descsz > 0 && descsz <= kMaxPackageNote) {
        out.package_json = notes.FixedString(desc_at, descsz);
      }
      pos = next;
    }
  }
  return out;
}

std::string ReadBuildId(const ElfImage& image, const ReadAtFn& read,
                        const std::function<uint64_t(const Elf64_Phdr&)>& note_offset) {
  return ReadImageNotes(image, read, note_offset).build_id;
}

std::optional<uint64_t> FirstLoadVaddr(const ElfImage& image) {
  for (const auto& ph : image.phdrs) {
    if (ph.p_type == PT_LOAD) {
      if (ph.p_vaddr < ph.p_offset) return std::nullopt;
      return (ph.p_vaddr - ph.p_offset) & ~uint64_t{0xfff};
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> LoadEnd(const ElfImage& image) {
  std::optional<uint64_t> end;
  for (const auto& ph : image.phdrs) {
    if (ph.p_type != PT_LOAD) continue;
    if (ph.p_vaddr > UINT64_MAX - ph.p_memsz - 0xfff) return std::nullopt;
    end = std::max(end.value_or(0), (ph.p_vaddr + ph.p_memsz + 0xfff) & ~uint64_t{0xfff});
  }
  return end;
}

}  // namespace coroner
