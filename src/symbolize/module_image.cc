#include "symbolize/module_image.h"

#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/byte_view.h"
#include "core/elf_image.h"
#include "symbolize/demangle.h"

namespace coroner {
namespace {

bool HasSection(Elf* elf, const char* wanted, bool need_bits) {
  size_t shstrndx;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name && std::strcmp(name, wanted) == 0) return !need_bits || sh.sh_type != SHT_NOBITS;
  }
  return false;
}

// The DIE's linkage name, following DW_AT_abstract_origin / DW_AT_specification.
const char* LinkageName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
      dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)) {
    return dwarf_formstring(&attr);
  }
  return nullptr;
}

std::string FunctionName(Dwarf_Die* die) {
  if (const char* linkage = LinkageName(die)) return DisplayName(linkage);
  const char* name = dwarf_diename(die);
  return name ? std::string(name) : std::string();
}

}  // namespace

ElfFile OpenElf(const std::string& path) {
  static const bool initialized = elf_version(EV_CURRENT) != EV_NONE;
  if (!initialized || path.empty()) return {};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf) elf_end(elf);
    ::close(fd);
    return {};
  }
  return {fd, elf};
}

void CloseElf(int fd, Elf* elf) {
  if (elf) elf_end(elf);
  if (fd >= 0) ::close(fd);
}

std::string ElfBuildId(Elf* elf) {
  size_t n;
  if (elf_getphdrnum(elf, &n) != 0) return {};
  // Notes through sections: works for separate debug files too, whose
  // PT_NOTE segments may be stripped of their bytes.
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    size_t off = 0, name_off, desc_off;
    GElf_Nhdr nh;
    while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
          std::memcmp(static_cast<char*>(data->d_buf) + name_off, "GNU", 4) == 0 && nh.n_descsz <= 64) {
        return HexBytes(std::span(static_cast<const std::byte*>(data->d_buf) + desc_off, nh.n_descsz));
      }
    }
  }
  return {};
}

ModuleImage::~ModuleImage() {
  if (eh_cfi_) dwarf_cfi_end(eh_cfi_);
  if (dwarf_) dwarf_end(dwarf_);
  if (debug_elf_ != elf_) CloseElf(debug_fd_, debug_elf_);
  CloseElf(fd_, elf_);
}

std::shared_ptr<ModuleImage> ModuleImage::Open(const std::string& binary, const std::string& debug_file) {
  std::shared_ptr<ModuleImage> img(new ModuleImage);
  ElfFile bin = OpenElf(binary);
  ElfFile dbg = (debug_file.empty() || debug_file == binary) ? ElfFile{} : OpenElf(debug_file);
  if (!bin.elf && !dbg.elf) return nullptr;
  img->fd_ = bin.fd;
  img->elf_ = bin.elf;
  img->binary_path_ = bin.elf ? binary : std::string();
  if (dbg.elf) {
    img->debug_fd_ = dbg.fd;
    img->debug_elf_ = dbg.elf;
    img->debug_path_ = debug_file;
  } else if (bin.elf) {
    img->debug_elf_ = bin.elf;  // the binary is its own debug file, if it has DWARF
    img->debug_path_ = binary;
  }
  Elf* main = bin.elf ? bin.elf : dbg.elf;
  img->build_id_ = ElfBuildId(main);

  // Segments of the binary (a debug file's segments have no bytes).
  size_t phnum = 0;
  if (bin.elf && elf_getphdrnum(bin.elf, &phnum) == 0) {
    bool first = true;
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(bin.elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
      if (first && ph.p_vaddr >= ph.p_offset) img->link_base_ = (ph.p_vaddr - ph.p_offset) & ~uint64_t{0xfff};
      first = false;
      img->loads_.push_back({ph.p_vaddr, ph.p_filesz, ph.p_offset, (ph.p_flags & PF_X) != 0});
    }
  } else if (dbg.elf && elf_getphdrnum(dbg.elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(dbg.elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) {
        img->link_base_ = (ph.p_vaddr - std::min(ph.p_vaddr, ph.p_offset)) & ~uint64_t{0xfff};
        break;
      }
    }
  }

  if (bin.elf && HasSection(bin.elf, ".eh_frame", true)) img->eh_cfi_ = dwarf_getcfi_elf(bin.elf);
  if (img->debug_elf_) {
    img->has_dwarf_ = HasSection(img->debug_elf_, ".debug_info", true);
    img->has_debug_frame_ = HasSection(img->debug_elf_, ".debug_frame", true);
    img->has_symtab_ = HasSection(img->debug_elf_, ".symtab", true);
  }
  if (bin.elf && !img->has_symtab_) img->has_symtab_ = HasSection(bin.elf, ".symtab", true);
  return img;
}

// With pread alone, not libelf: every mapped file of a core is checked here
// (a training process maps some 300), and libelf maps each whole file,
// faults in its section headers and unmaps it again; the unmapping was half
// of the time this check took. The notes are read as from the core's memory
// (core/elf_image), through the program headers; a file whose PT_NOTE
// segments give no build-id (another machine, notes only in sections) goes
// to libelf, which reads the SHT_NOTE sections.
std::string FileBuildId(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  ReadAtFn read = [fd](uint64_t offset, std::span<std::byte> out) -> size_t {
    if (offset > static_cast<uint64_t>(INT64_MAX)) return 0;
    ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
    return n > 0 ? static_cast<size_t>(n) : 0;
  };
  std::string id;
  if (auto image = ReadElfImage(read)) id = ReadBuildId(*image, read, [](const Elf64_Phdr& ph) { return ph.p_offset; });
  ::close(fd);
  if (!id.empty()) return id;
  ElfFile f = OpenElf(path);
  if (!f.elf) return {};
  id = ElfBuildId(f.elf);
  CloseElf(f.fd, f.elf);
  return id;
}

Dwarf* ModuleImage::GetDwarf() const {
  if (!dwarf_tried_) {
    dwarf_tried_ = true;
    if (has_dwarf_ || has_debug_frame_) {
      // libdw would decode every compressed section of the file at open;
      // a decoded copy (cached by build-id) is read instead when one can be
      // made, and libdw reads the original otherwise.
      decoded_ = DecodedDebugFile::Open(debug_elf_, debug_elf_ == elf_ ? fd_ : debug_fd_, DefaultCacheDir());
      dwarf_ = dwarf_begin_elf(decoded_ ? decoded_->elf() : debug_elf_, DWARF_C_READ, nullptr);
    }
    if (dwarf_ && has_debug_frame_) debug_cfi_ = dwarf_getcfi(dwarf_);
  }
  return dwarf_;
}

const std::vector<Symbol>& ModuleImage::Symbols() const {
  if (symbols_loaded_) return symbols_;
  symbols_loaded_ = true;
  if (debug_elf_ && debug_elf_ != elf_) LoadSymbols(debug_elf_);
  if (elf_) LoadSymbols(elf_);
  auto& syms = symbols_;
  // Aliases at one address: a global name beats a weak or local one, the
  // default version of a symbol its hidden ones (free@@ over cfree@), then
  // the public spelling beats the internal one ("clone3" over "__clone3",
  // as gdb shows them), then the larger size.
  auto underscores = [](std::string_view n) { return n.find_first_not_of('_'); };
  std::sort(syms.begin(), syms.end(), [&](const Symbol& a, const Symbol& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    if (a.rank != b.rank) return a.rank < b.rank;
    if (underscores(a.name) != underscores(b.name)) return underscores(a.name) < underscores(b.name);
    return a.size > b.size;
  });
  syms.erase(std::unique(syms.begin(), syms.end(), [](const Symbol& a, const Symbol& b) { return a.addr == b.addr; }),
             syms.end());
  return symbols_;
}

void ModuleImage::LoadSymbols(Elf* elf) const {
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || sh.sh_entsize == 0) continue;
    size_t count = sh.sh_size / sh.sh_entsize;
    // The dynamic symbols' versions: a hidden one (an old version kept for
    // old binaries, bit 15) is not the name gdb shows.
    Elf_Data* versions = nullptr;
    if (sh.sh_type == SHT_DYNSYM) {
      for (Elf_Scn* v = nullptr; (v = elf_nextscn(elf, v));) {
        GElf_Shdr vh;
        if (gelf_getshdr(v, &vh) && vh.sh_type == SHT_GNU_versym && vh.sh_link == elf_ndxscn(scn)) {
          versions = elf_getdata(v, nullptr);
          break;
        }
      }
    }
    // At most one Symbol per entry (the section's bytes bound the count):
    // growing by doubling copied libc's 10,000 names several times.
    symbols_.reserve(symbols_.size() + std::min(count, data->d_size / sizeof(Elf64_Sym)));
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
      int type = GELF_ST_TYPE(sym.st_info);
      // Objects too: a pc that jumped into data is named by the data (as gdb does).
      if ((type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT) || sym.st_value == 0 ||
          sym.st_shndx == SHN_UNDEF) {
        continue;
      }
      const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (!name || !*name) continue;
      int bind = GELF_ST_BIND(sym.st_info);
      int rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 2 : 4;
      GElf_Versym version = 0;
      if (versions && gelf_getversym(versions, static_cast<int>(i), &version) && (version & 0x8000)) ++rank;
      symbols_.push_back({sym.st_value, sym.st_size, name, rank});
    }
  }
}

namespace {

// Looks a symbol up by name in one symbol table section of `elf`.
std::optional<GElf_Sym> FindNamed(Elf* elf, Elf64_Word section_type, const std::string& name) {
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != section_type || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    size_t count = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
      const char* n = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (n && name == n) return sym;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> ModuleImage::SymbolAddress(const std::string& name) const {
  if (auto it = named_cache_.find(name); it != named_cache_.end()) return it->second;
  std::optional<uint64_t> found;
  for (Elf* e : {elf_, debug_elf_}) {
    if (!e || found) continue;
    for (Elf64_Word type : {SHT_DYNSYM, SHT_SYMTAB}) {
      if (auto sym = FindNamed(e, type, name)) {
        found = sym->st_value;
        break;
      }
    }
  }
  if (named_cache_.size() >= 1024) named_cache_.clear();  // callers ask for a few fixed names; bound it anyway
  named_cache_.emplace(name, found);
  return found;
}

bool ModuleImage::DefinesDynamic(const std::string& name) const {
  if (!elf_) return false;
  auto sym = FindNamed(elf_, SHT_DYNSYM, name);
  return sym && GELF_ST_BIND(sym->st_info) != STB_LOCAL;
}

Dwarf_Frame* ModuleImage::FrameAt(uint64_t vaddr) const {
  Dwarf_Frame* frame = nullptr;
  if (eh_cfi_ && dwarf_cfi_addrframe(eh_cfi_, vaddr, &frame) == 0) return frame;
  frame = nullptr;
  if (has_debug_frame_ && GetDwarf() && debug_cfi_ && dwarf_cfi_addrframe(debug_cfi_, vaddr, &frame) == 0) return frame;
  return nullptr;
}

const Symbol* ModuleImage::SymbolAt(uint64_t vaddr) const {
  const auto& syms = Symbols();
  auto it = std::upper_bound(syms.begin(), syms.end(), vaddr, [](uint64_t a, const Symbol& s) { return a < s.addr; });
  if (it == syms.begin()) return nullptr;
  --it;
  if (it->size > 0 && vaddr - it->addr >= it->size) {
    // Outside this symbol: maybe inside an earlier, larger one; else unknown.
    return nullptr;
  }
  return &*it;
}

ModuleImage::Functions ModuleImage::FunctionsAt(uint64_t vaddr) const {
  if (!has_dwarf_) return nullptr;
  if (auto it = functions_cache_.find(vaddr); it != functions_cache_.end()) return it->second;
  if (functions_cache_.size() >= 65536) functions_cache_.clear();
  return functions_cache_[vaddr] = std::make_shared<const std::vector<SourceFunction>>(LookUpFunctions(vaddr));
}

std::vector<Dwarf_Die> ModuleImage::ScopesAt(uint64_t vaddr) const {
  if (auto it = scopes_cache_.find(vaddr); it != scopes_cache_.end()) return it->second;
  if (scopes_cache_.size() >= 65536) scopes_cache_.clear();
  return scopes_cache_[vaddr] = LookUpScopes(vaddr);
}

std::vector<Dwarf_Die> ModuleImage::LookUpScopes(uint64_t vaddr) const {
  std::vector<Dwarf_Die> out;
  if (!has_dwarf_ || !GetDwarf()) return out;
  Dwarf_Die cu;
  if (!dwarf_addrdie(dwarf_, vaddr, &cu)) return out;
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(&cu, vaddr, &scopes);
  // Past an inlined instance, dwarf_getscopes follows the inlined function's
  // definition, not its caller; the concrete chain of callers comes from
  // dwarf_getscopes_die on the innermost instance.
  // The blocks inside the innermost instance stay as they are.
  for (int i = 0; i < n; ++i) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    Dwarf_Die inner = scopes[i];
    Dwarf_Die* chain = nullptr;
    int m = dwarf_getscopes_die(&inner, &chain);
    if (m > 0) {
      out.assign(scopes, scopes + i);
      out.insert(out.end(), chain, chain + m);
      std::free(chain);
      std::free(scopes);
      return out;
    }
    std::free(chain);
    break;
  }
  if (n > 0) out.assign(scopes, scopes + n);
  std::free(scopes);
  // Aliases: the assembler writes one subprogram for each name of a
  // function (glibc's __memmove_avx_unaligned_erms and
  // __memcpy_avx_unaligned_erms share their code). dwarf_getscopes takes
  // the first; gdb takes the block that starts last, and of blocks that
  // start together the last one written, and so does this.
  if (out.size() == 2 && dwarf_tag(&out[0]) == DW_TAG_subprogram) {
    Dwarf_Addr best_low = 0;
    dwarf_lowpc(&out[0], &best_low);
    Dwarf_Die sibling = out[0];
    for (int k = 0; k < 4096 && dwarf_siblingof(&sibling, &sibling) == 0; ++k) {
      Dwarf_Addr low = 0;
      if (dwarf_tag(&sibling) == DW_TAG_subprogram && dwarf_haspc(&sibling, vaddr) == 1 &&
          dwarf_lowpc(&sibling, &low) == 0 && low >= best_low) {
        out[0] = sibling;
        best_low = low;
      }
    }
  }
  return out;
}

std::optional<CompileUnit> ModuleImage::CompileUnitAt(uint64_t vaddr) const {
  if (!has_dwarf_ || !GetDwarf()) return std::nullopt;
  Dwarf_Die cu;
  if (!dwarf_addrdie(dwarf_, vaddr, &cu)) return std::nullopt;
  auto text = [&cu](int name) {
    Dwarf_Attribute attr;
    const char* s = dwarf_formstring(dwarf_attr(&cu, name, &attr));
    return std::string(s ? s : "");
  };
  return CompileUnit{text(DW_AT_name), text(DW_AT_comp_dir), text(DW_AT_producer)};
}

namespace {

// Whether more than one subprogram of the unit holds vaddr: an assembly
// function with several names, of which gdb shows the one ScopesAt picks
// (and the symbol table another).
bool AliasedAt(Dwarf_Die& cu, uint64_t vaddr) {
  Dwarf_Die child;
  if (dwarf_child(&cu, &child) != 0) return false;
  int holding = 0;
  for (int k = 0; k < 65536; ++k) {
    if (dwarf_tag(&child) == DW_TAG_subprogram && dwarf_haspc(&child, vaddr) == 1 && ++holding > 1) return true;
    if (dwarf_siblingof(&child, &child) != 0) break;
  }
  return false;
}

}  // namespace

std::vector<SourceFunction> ModuleImage::LookUpFunctions(uint64_t vaddr) const {
  std::vector<SourceFunction> out;
  std::vector<Dwarf_Die> scopes = ScopesAt(vaddr);
  if (scopes.empty()) return out;
  Dwarf_Die cu = scopes.back();
  if (dwarf_tag(&cu) != DW_TAG_compile_unit && dwarf_tag(&cu) != DW_TAG_partial_unit) {
    if (!dwarf_addrdie(dwarf_, vaddr, &cu)) return out;
  }
  // The assembler names an assembly function by its first label, often an
  // internal alias ("__clone3"); the symbol table's public name is what a
  // reader (and gdb) calls it, so the name is left to the symbol table.
  Dwarf_Attribute producer;
  const char* prod = dwarf_formstring(dwarf_attr(&cu, DW_AT_producer, &producer));
  bool assembler = prod && std::strncmp(prod, "GNU AS", 6) == 0;
  std::string file;
  int line = 0;
  if (Dwarf_Line* l = dwarf_getsrc_die(&cu, vaddr)) {
    if (const char* f = dwarf_linesrc(l, nullptr, nullptr)) file = f;
    dwarf_lineno(l, &line);
  }
  for (auto& scope : scopes) {
    int tag = dwarf_tag(&scope);
    if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) continue;
    SourceFunction f;
    if (!assembler || AliasedAt(cu, vaddr)) f.name = FunctionName(&scope);
    f.file = file;
    f.line = line;
    f.inlined = tag == DW_TAG_inlined_subroutine;
    out.push_back(std::move(f));
    if (tag == DW_TAG_subprogram) break;
    // The caller's position is this inline instance's call site.
    Dwarf_Attribute attr;
    Dwarf_Word value;
    line = 0;
    if (dwarf_attr(&scope, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &value) == 0) {
      line = static_cast<int>(value);
    }
    file.clear();
    if (dwarf_attr(&scope, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &value) == 0) {
      Dwarf_Files* files;
      size_t nfiles;
      if (dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 && value < nfiles) {
        if (const char* name = dwarf_filesrc(files, value, nullptr, nullptr)) file = name;
      }
    }
  }
  return out;
}

const ModuleImage::CodePage& ModuleImage::ReadCodePage(uint64_t page) const {
  if (auto it = code_pages_.find(page); it != code_pages_.end()) return it->second;
  if (code_pages_.size() >= kMaxCodePages) code_pages_.clear();
  CodePage p;
  p.bytes = std::make_unique<std::byte[]>(kCodePage);
  ssize_t got;
  do {
    got = ::pread(fd_, p.bytes.get(), kCodePage, static_cast<off_t>(page * kCodePage));
  } while (got < 0 && errno == EINTR);
  p.size = got < 0 ? 0 : static_cast<size_t>(got);
  return code_pages_.emplace(page, std::move(p)).first->second;
}

size_t ModuleImage::ReadCode(uint64_t vaddr, std::span<std::byte> out) const {
  for (const auto& l : loads_) {
    if (vaddr < l.vaddr || vaddr - l.vaddr >= l.filesz) continue;
    uint64_t in = vaddr - l.vaddr;
    size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), l.filesz - in));
    if (l.offset > UINT64_MAX - l.filesz) return 0;  // a hostile header: no such file offset
    uint64_t at = l.offset + in;
    size_t done = 0;
    while (done < n) {
      const CodePage& p = ReadCodePage((at + done) / kCodePage);
      size_t from = static_cast<size_t>((at + done) % kCodePage);
      if (from >= p.size) break;  // past the file's end
      size_t take = std::min(n - done, p.size - from);
      std::memcpy(out.data() + done, p.bytes.get() + from, take);
      done += take;
    }
    return done;
  }
  return 0;
}

bool ModuleImage::IsCode(uint64_t vaddr) const {
  for (const auto& l : loads_) {
    if (l.exec && vaddr >= l.vaddr && vaddr - l.vaddr < l.filesz) return true;
  }
  return false;
}

}  // namespace coroner
