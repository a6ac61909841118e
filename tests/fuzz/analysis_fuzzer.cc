// libFuzzer target: the whole analysis of a real zoo core whose notes,
// crashing thread's stack pages and main stack's top (the argv and envp
// arrays, the auxv copy and the strings the command line and environment
// are read from) the fuzzer rewrites (CORONER_FUZZ_CORE names the core;
// its modules are read from disk as `coroner analyze` reads them).
// Any crash, hang, leak or sanitizer report is a bug.
#include <elf.h>

#include "full_analysis.h"

namespace {

struct Base {
  std::vector<std::byte> bytes;
  std::vector<coroner::fuzz::Region> regions;  // the notes, the stack pages around rsp
};

Base Load() {
  Base b;
  b.bytes = coroner::fuzz::ReadNamedFile("CORONER_FUZZ_CORE");
  Elf64_Ehdr eh;
  if (b.bytes.size() < sizeof eh) std::exit(2);
  std::memcpy(&eh, b.bytes.data(), sizeof eh);
  auto core = coroner::Core::Open(coroner::MakeMemorySource(b.bytes), coroner::CoreOptions{});
  uint64_t sp = core.ok() && !(*core)->threads().empty() ? (*core)->threads()[0].registers.sp() : 0;
  std::optional<uint64_t> execfn = core.ok() ? (*core)->auxv().execfn_addr : std::nullopt;
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    uint64_t at = eh.e_phoff + uint64_t{i} * sizeof ph;
    if (at + sizeof ph > b.bytes.size()) break;
    std::memcpy(&ph, b.bytes.data() + at, sizeof ph);
    if (ph.p_type == PT_NOTE) b.regions.push_back({ph.p_offset, ph.p_filesz});
    if (ph.p_type == PT_LOAD && sp >= ph.p_vaddr && sp - ph.p_vaddr < ph.p_filesz) {
      // 4 KiB below rsp (the red zone and more) and 12 KiB above it.
      uint64_t in = sp - ph.p_vaddr;
      uint64_t from = in > 4096 ? in - 4096 : 0;
      b.regions.push_back({ph.p_offset + from, std::min<uint64_t>(16384, ph.p_filesz - from)});
    }
    if (execfn && *execfn >= ph.p_vaddr && *execfn - ph.p_vaddr < ph.p_filesz) {
      // The 16 KiB below AT_EXECFN's string, to the segment's end: the
      // arrays, the auxv copy and the strings they point at.
      uint64_t in = *execfn - ph.p_vaddr;
      uint64_t from = in > 16384 ? in - 16384 : 0;
      b.regions.push_back({ph.p_offset + from, ph.p_filesz - from});
    }
  }
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Base base = Load();
  std::vector<std::byte> bytes = base.bytes;
  coroner::fuzz::ApplyPatches(data, size, base.regions, bytes);
  // The module files do not change: their symbols are opened once.
  static coroner::FileSymbolProvider provider(coroner::fuzz::FuzzSymbolOptions(""));
  coroner::fuzz::AnalyzeEverything(coroner::MakeMemorySource(std::move(bytes)), "", provider);
  return 0;
}
