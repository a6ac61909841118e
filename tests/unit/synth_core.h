// SynthCore: lays out an ELF core byte by byte for malformed-input tests.
//
// It writes the fields itself at their spec offsets instead of reusing the
// production structs, so a mistake in coroner's layout is not mirrored here.
// Real cores from the crash zoo cover the happy path; this covers the cores
// no kernel writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coroner::testing {

class SynthCore {
 public:
  struct Note {
    std::string name;
    uint32_t type;
    std::vector<std::byte> desc;
    // When set, written in the header instead of the real sizes.
    std::optional<uint32_t> fake_namesz, fake_descsz;
  };
  struct Load {
    uint64_t vaddr, memsz;
    std::vector<std::byte> data;  // filesz = data.size() unless fake_filesz
    uint32_t flags = 4;           // PF_R
    std::optional<uint64_t> fake_offset, fake_filesz;
  };

  // Header fields a test may break.
  uint8_t elf_class = 2, data_encoding = 1;
  uint16_t type = 4 /* ET_CORE */, machine = 62 /* EM_X86_64 */, phentsize = 56;
  std::optional<uint16_t> fake_phnum;
  std::optional<uint64_t> fake_phoff;

  std::vector<Note> notes;
  std::vector<Load> loads;

  SynthCore& AddNote(std::string name, uint32_t note_type, std::vector<std::byte> desc) {
    notes.push_back({std::move(name), note_type, std::move(desc), {}, {}});
    return *this;
  }
  SynthCore& AddLoad(uint64_t vaddr, uint64_t memsz, std::vector<std::byte> data, uint32_t flags = 4) {
    loads.push_back({vaddr, memsz, std::move(data), flags, {}, {}});
    return *this;
  }

  std::vector<std::byte> Build() const;

  // A minimal NT_PRSTATUS descriptor (336 bytes) for thread `tid` with rip/rsp set.
  static std::vector<std::byte> Prstatus(int tid, int signo, uint64_t rip, uint64_t rsp);
  // NT_SIGINFO (128 bytes).
  static std::vector<std::byte> Siginfo(int signo, int code, uint64_t addr);
  // NT_AUXV from (type, value) pairs; AT_NULL is appended.
  static std::vector<std::byte> Auxv(const std::vector<std::pair<uint64_t, uint64_t>>& entries);
};

void Put16(std::vector<std::byte>& b, size_t at, uint16_t v);
void Put32(std::vector<std::byte>& b, size_t at, uint32_t v);
void Put64(std::vector<std::byte>& b, size_t at, uint64_t v);

}  // namespace coroner::testing
