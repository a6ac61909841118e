// libFuzzer target: hostile module files. The real zoo core CORONER_FUZZ_CORE
// is analyzed whole with --sysroot pointing at a directory where its
// executable (CORONER_FUZZ_MODULE, the same build) lies with the fuzzer's
// patches over its .eh_frame, .debug_info, .debug_abbrev, .debug_str,
// .debug_line, .debug_loclists, .debug_rnglists and .symtab; its build-id
// note is left alone, so the file is taken for the module. The patched file
// is written under CORONER_FUZZ_SYSROOT.
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <filesystem>

#include "full_analysis.h"

namespace {

struct Base {
  std::vector<std::byte> core, module;
  std::vector<coroner::fuzz::Region> sections;
  std::string sysroot, module_path;  // where the patched file goes
};

std::vector<coroner::fuzz::Region> Sections(const std::string& path) {
  std::vector<coroner::fuzz::Region> out;
  elf_version(EV_CURRENT);
  int fd = ::open(path.c_str(), O_RDONLY);
  Elf* elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr;
  size_t shstrndx = 0;
  if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) continue;
      std::string name = elf_strptr(elf, shstrndx, sh.sh_name) ? elf_strptr(elf, shstrndx, sh.sh_name) : "";
      for (const char* want : {".eh_frame", ".eh_frame_hdr", ".debug_info", ".debug_abbrev", ".debug_str",
                               ".debug_line", ".debug_line_str", ".debug_loclists", ".debug_rnglists", ".symtab",
                               ".strtab"}) {
        if (name == want) out.push_back({sh.sh_offset, sh.sh_size});
      }
    }
  }
  if (elf) elf_end(elf);
  if (fd >= 0) ::close(fd);
  return out;
}

Base Load() {
  Base b;
  b.core = coroner::fuzz::ReadNamedFile("CORONER_FUZZ_CORE");
  b.module = coroner::fuzz::ReadNamedFile("CORONER_FUZZ_MODULE");
  b.sections = Sections(std::getenv("CORONER_FUZZ_MODULE"));
  if (b.sections.empty()) std::exit(2);
  auto core = coroner::Core::Open(coroner::MakeMemorySource(b.core), coroner::CoreOptions{});
  if (!core.ok() || !(*core)->executable()) std::exit(2);
  // CORONER_FUZZ_SYSROOT: a directory of the run's own for the patched file.
  const char* sysroot = std::getenv("CORONER_FUZZ_SYSROOT");
  b.sysroot = std::string(sysroot ? sysroot : "/tmp/coroner-module-fuzzer") + "/" + std::to_string(::getpid());
  b.module_path = b.sysroot + (*core)->executable()->path;
  std::filesystem::create_directories(std::filesystem::path(b.module_path).parent_path());
  return b;
}

// The patched executable from a provider of its own (the file changed); the
// other modules (libc and its debug file among them) from one opened once.
class FreshExecutable final : public coroner::SymbolProvider {
 public:
  FreshExecutable(coroner::SymbolProvider& shared, const std::string& sysroot, std::string exe)
      : shared_(shared), fresh_(coroner::fuzz::FuzzSymbolOptions(sysroot)), exe_(std::move(exe)) {}
  coroner::ModuleLookup Find(const coroner::Module& m) override {
    return m.path == exe_ ? fresh_.Find(m) : shared_.Find(m);
  }

 private:
  coroner::SymbolProvider& shared_;
  coroner::FileSymbolProvider fresh_;
  std::string exe_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Base base = Load();
  std::vector<std::byte> module = base.module;
  coroner::fuzz::ApplyPatches(data, size, base.sections, module);
  {
    std::ofstream out(base.module_path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(module.data()), static_cast<std::streamsize>(module.size()));
  }
  static coroner::FileSymbolProvider shared(coroner::fuzz::FuzzSymbolOptions(base.sysroot));
  FreshExecutable provider(shared, base.sysroot, base.module_path.substr(base.sysroot.size()));
  coroner::fuzz::AnalyzeEverything(coroner::MakeMemorySource(base.core), base.sysroot, provider);
  return 0;
}
