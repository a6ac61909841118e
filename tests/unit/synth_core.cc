#include "unit/synth_core.h"

#include <cstring>

namespace coroner::testing {

void Put16(std::vector<std::byte>& b, size_t at, uint16_t v) {
  if (b.size() < at + 2) b.resize(at + 2);
  for (int i = 0; i < 2; ++i) b[at + i] = std::byte((v >> (8 * i)) & 0xff);
}
void Put32(std::vector<std::byte>& b, size_t at, uint32_t v) {
  if (b.size() < at + 4) b.resize(at + 4);
  for (int i = 0; i < 4; ++i) b[at + i] = std::byte((v >> (8 * i)) & 0xff);
}
void Put64(std::vector<std::byte>& b, size_t at, uint64_t v) {
  if (b.size() < at + 8) b.resize(at + 8);
  for (int i = 0; i < 8; ++i) b[at + i] = std::byte((v >> (8 * i)) & 0xff);
}

static size_t Align4(size_t v) { return (v + 3) & ~size_t{3}; }

std::vector<std::byte> SynthCore::Build() const {
  // Layout: ELF header, program headers (one PT_NOTE, then the PT_LOADs),
  // the notes, then each segment's data.
  std::vector<std::byte> notes_blob;
  for (const auto& n : notes) {
    size_t at = notes_blob.size();
    uint32_t namesz = static_cast<uint32_t>(n.name.size() + 1);
    Put32(notes_blob, at, n.fake_namesz.value_or(namesz));
    Put32(notes_blob, at + 4, n.fake_descsz.value_or(static_cast<uint32_t>(n.desc.size())));
    Put32(notes_blob, at + 8, n.type);
    notes_blob.resize(at + 12 + Align4(namesz), std::byte{0});
    std::memcpy(notes_blob.data() + at + 12, n.name.data(), n.name.size());
    size_t d = notes_blob.size();
    notes_blob.resize(d + Align4(n.desc.size()), std::byte{0});
    if (!n.desc.empty()) std::memcpy(notes_blob.data() + d, n.desc.data(), n.desc.size());
  }
  const size_t phnum = 1 + loads.size();
  const size_t phoff = 64;
  size_t notes_off = phoff + phnum * 56;
  size_t data_off = notes_off + notes_blob.size();

  std::vector<std::byte> b(64, std::byte{0});
  b[0] = std::byte{0x7f}; b[1] = std::byte{'E'}; b[2] = std::byte{'L'}; b[3] = std::byte{'F'};
  b[4] = std::byte{elf_class};
  b[5] = std::byte{data_encoding};
  b[6] = std::byte{1};  // EV_CURRENT
  Put16(b, 16, type);
  Put16(b, 18, machine);
  Put32(b, 20, 1);
  Put64(b, 32, fake_phoff.value_or(phoff));  // e_phoff
  Put16(b, 52, 64);                          // e_ehsize
  Put16(b, 54, phentsize);
  Put16(b, 56, fake_phnum.value_or(static_cast<uint16_t>(phnum)));

  auto phdr = [&](size_t i, uint32_t p_type, uint32_t flags, uint64_t off, uint64_t vaddr, uint64_t filesz,
                  uint64_t memsz) {
    size_t at = phoff + i * 56;
    Put32(b, at, p_type);
    Put32(b, at + 4, flags);
    Put64(b, at + 8, off);
    Put64(b, at + 16, vaddr);
    Put64(b, at + 24, 0);
    Put64(b, at + 32, filesz);
    Put64(b, at + 40, memsz);
    Put64(b, at + 48, 1);
  };
  phdr(0, 4 /* PT_NOTE */, 4, notes_off, 0, notes_blob.size(), 0);
  size_t off = data_off;
  for (size_t i = 0; i < loads.size(); ++i) {
    const Load& l = loads[i];
    phdr(1 + i, 1 /* PT_LOAD */, l.flags, l.fake_offset.value_or(off), l.vaddr,
         l.fake_filesz.value_or(l.data.size()), l.memsz);
    off += l.data.size();
  }
  b.resize(notes_off, std::byte{0});
  b.insert(b.end(), notes_blob.begin(), notes_blob.end());
  for (const auto& l : loads) b.insert(b.end(), l.data.begin(), l.data.end());
  return b;
}

std::vector<std::byte> SynthCore::Prstatus(int tid, int signo, uint64_t rip, uint64_t rsp) {
  std::vector<std::byte> d(336, std::byte{0});
  Put32(d, 0, static_cast<uint32_t>(signo));
  Put16(d, 12, static_cast<uint16_t>(signo));
  Put32(d, 32, static_cast<uint32_t>(tid));
  // pr_reg at 112, in user_regs_struct order: rip is register 16, rsp 19.
  Put64(d, 112 + 16 * 8, rip);
  Put64(d, 112 + 19 * 8, rsp);
  return d;
}

std::vector<std::byte> SynthCore::Siginfo(int signo, int code, uint64_t addr) {
  std::vector<std::byte> d(128, std::byte{0});
  Put32(d, 0, static_cast<uint32_t>(signo));
  Put32(d, 8, static_cast<uint32_t>(code));
  Put64(d, 16, addr);
  return d;
}

std::vector<std::byte> SynthCore::Auxv(const std::vector<std::pair<uint64_t, uint64_t>>& entries) {
  std::vector<std::byte> d;
  for (const auto& [t, v] : entries) {
    size_t at = d.size();
    Put64(d, at, t);
    Put64(d, at + 8, v);
  }
  size_t at = d.size();
  Put64(d, at, 0);
  Put64(d, at + 8, 0);
  return d;
}

}  // namespace coroner::testing
