// ModuleImage: one ELF object (executable or shared library) opened from
// disk for unwinding and symbolization, identified by its build-id.
//
// It holds the binary (code bytes and .eh_frame CFI) and, where one was found,
// the separate debug file (.symtab, DWARF, .debug_frame). Lookups take
// link-time addresses: vaddr = runtime address - the module's load bias.
// Images are shared (std::shared_ptr) by every core of a batch that maps the
// same build-id; an image is immutable after Open() apart from libdw's own
// lazily built caches, so it is used from one thread at a time.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbolize/decoded_debug_file.h"

namespace coroner {

struct Symbol {
  uint64_t addr = 0, size = 0;  // link-time address
  // As in the symbol table (mangled): a view of the table's strings, which
  // the image keeps mapped as long as it lives. A training process's
  // libtorch has 35,000 names, which copying made a tenth of an analysis.
  std::string_view name;
  int rank = 0;                 // binding preference among aliases: global 0, weak 1, local 2
};

// One function at an address: the outermost is the real (physical) function,
// the others are inlined into it.
struct SourceFunction {
  std::string name;  // demangled, without parameters; empty when unknown
  std::string file;  // source file of the address within this function
  int line = 0;
  bool inlined = false;
};

// A call instruction as DWARF describes it (DW_TAG_call_site, or GCC's
// DW_TAG_GNU_call_site): where the call returns to (link-time), the entry of
// the function it calls when DWARF names one (not for calls through a
// pointer), and whether it is a tail call (a jump: it never returns there).
struct CallSite {
  uint64_t return_pc = 0;
  std::optional<uint64_t> target;
  std::string target_name;  // an external function's linkage name: where another module defines it
  bool tail_call = false;
};

// The compile unit that holds an address: what built it and where.
struct CompileUnit {
  std::string name;       // DW_AT_name, the primary source file
  std::string comp_dir;   // DW_AT_comp_dir, the compiler's working directory
  std::string producer;   // DW_AT_producer, e.g. "GNU C17 12.2.0 -mtune=generic -O2 -g"
};

class ModuleImage {
 public:
  ~ModuleImage();
  ModuleImage(const ModuleImage&) = delete;
  ModuleImage& operator=(const ModuleImage&) = delete;

  // Opens `binary` (may be empty when only a debug file is known) and
  // `debug_file` (may be empty or equal to binary). nullptr when neither opens.
  static std::shared_ptr<ModuleImage> Open(const std::string& binary, const std::string& debug_file);

  const std::string& binary_path() const { return binary_path_; }
  const std::string& debug_path() const { return debug_path_; }
  const std::string& build_id() const { return build_id_; }
  bool has_dwarf() const { return has_dwarf_; }
  bool has_symtab() const { return has_symtab_; }
  // The decoded copy of the debug file that DWARF was read from (see
  // decoded_debug_file.h); empty when DWARF was not needed yet, was not
  // compressed, or the copy was made in memory.
  std::string debug_cache_path() const { return decoded_ ? decoded_->cache_path() : std::string(); }

  // The link-time address of file offset 0 (first PT_LOAD's p_vaddr -
  // p_offset, page aligned): load bias = mapped address of offset 0 - this.
  uint64_t link_base() const { return link_base_; }

  // CFI for a link-time address: .eh_frame of the binary, else .debug_frame.
  // The returned frame must be freed with free(). nullptr when there is none.
  Dwarf_Frame* FrameAt(uint64_t vaddr) const;

  // The symbol covering vaddr (or the nearest below it when sizes are 0).
  const Symbol* SymbolAt(uint64_t vaddr) const;

  // The functions at vaddr, innermost (inlined) first, from DWARF; null or
  // empty when there is no DWARF for it. Shared with the cache: the same
  // frames recur in every core of a batch, and a copy was 7 allocations.
  using Functions = std::shared_ptr<const std::vector<SourceFunction>>;
  Functions FunctionsAt(uint64_t vaddr) const;

  // The DWARF scopes at vaddr, innermost first, following the concrete
  // chain of inlined calls out to the physical subprogram (lexical blocks,
  // DW_TAG_inlined_subroutine, ..., DW_TAG_subprogram, the CU). The DIEs
  // point into this image's libdw data and live as long as the image.
  // Empty when there is no DWARF for vaddr.
  std::vector<Dwarf_Die> ScopesAt(uint64_t vaddr) const;
  // The compile unit covering vaddr; nullopt without DWARF there.
  std::optional<CompileUnit> CompileUnitAt(uint64_t vaddr) const;

  // The entry (link-time) of the physical function holding vaddr, from DWARF.
  std::optional<uint64_t> FunctionEntry(uint64_t vaddr) const;
  // The call site whose call returns to `return_pc`; nullopt without one.
  std::optional<CallSite> CallSiteReturningTo(uint64_t return_pc) const;
  // Its DIE (DW_TAG_call_site or DW_TAG_GNU_call_site), for its parameters.
  std::optional<Dwarf_Die> CallSiteDie(uint64_t return_pc) const;
  // The tail calls made by the function entered at `entry` (at most 256).
  std::vector<CallSite> TailCallsFrom(uint64_t entry) const;

  // The link-time address of a function or object symbol by name (the
  // dynamic symbol table or .symtab); nullopt when absent.
  std::optional<uint64_t> SymbolAddress(const std::string& name) const;
  // True when the dynamic symbol table defines `name` (what the dynamic
  // linker can bind a reference to).
  bool DefinesDynamic(const std::string& name) const;

  // Code bytes at a link-time address from the binary's PT_LOAD segments.
  size_t ReadCode(uint64_t vaddr, std::span<std::byte> out) const;

  // True when vaddr lies in an executable PT_LOAD segment of the binary.
  bool IsCode(uint64_t vaddr) const;

 private:
  ModuleImage() = default;
  // DWARF and the symbol tables are read on first use: a batch pays for a
  // library's (often compressed) debug sections only if a frame lands in it.
  Dwarf* GetDwarf() const;
  const std::vector<Symbol>& Symbols() const;
  std::vector<SourceFunction> LookUpFunctions(uint64_t vaddr) const;
  std::vector<Dwarf_Die> LookUpScopes(uint64_t vaddr) const;
  void LoadSymbols(Elf* elf) const;
  std::optional<Dwarf_Die> SubprogramAt(uint64_t vaddr) const;
  std::optional<CallSite> ReadCallSite(Dwarf_Die& die) const;
  std::optional<CallSite> FindCallSite(uint64_t return_pc) const;
  std::optional<uint64_t> EntryOf(Dwarf_Die& function) const;

  std::string binary_path_, debug_path_, build_id_;
  int fd_ = -1, debug_fd_ = -1;
  Elf* elf_ = nullptr;
  Elf* debug_elf_ = nullptr;
  Dwarf_CFI* eh_cfi_ = nullptr;
  uint64_t link_base_ = 0;
  bool has_symtab_ = false, has_dwarf_ = false, has_debug_frame_ = false;
  mutable bool dwarf_tried_ = false, symbols_loaded_ = false;
  mutable Dwarf* dwarf_ = nullptr;
  mutable Dwarf_CFI* debug_cfi_ = nullptr;  // owned by dwarf_
  // What dwarf_ reads when the debug file's sections are compressed;
  // destroyed after dwarf_ (the destructor ends dwarf_ first).
  mutable std::unique_ptr<DecodedDebugFile> decoded_;
  struct Load {
    uint64_t vaddr, filesz, offset;
    bool exec;
  };
  std::vector<Load> loads_;
  mutable std::vector<Symbol> symbols_;  // sorted by addr
  // FunctionsAt answers by address: the same library frames recur in every
  // core of a batch. Bounded; cleared when full.
  mutable std::unordered_map<uint64_t, Functions> functions_cache_;
  // ScopesAt by address, as for FunctionsAt: dwarf_getscopes walks the CU
  // from its root each time, and the frame variables, the functions and the
  // call sites each ask it for the same pcs. Bounded; cleared when full.
  mutable std::unordered_map<uint64_t, std::vector<Dwarf_Die>> scopes_cache_;
  // The tail-call frames ask, for every frame of every thread, what the call
  // returning there called and which function is running: answers by
  // address, as for FunctionsAt. Bounded; cleared when full.
  mutable std::unordered_map<uint64_t, std::optional<CallSite>> call_site_cache_;
  mutable std::unordered_map<uint64_t, std::optional<uint64_t>> entry_cache_;
  // SymbolAddress by name: the diagnosis asks every module for the same
  // few names (__abort_msg) in every core, and each miss scans whole tables.
  mutable std::unordered_map<std::string, std::optional<uint64_t>> named_cache_;
  // Code pages read by ReadCode, by file offset / kCodePage. The unwinder
  // and the diagnosis read a few bytes around the same return addresses in
  // every core of a batch: a syscall each was two in three of a crash
  // line's reads. Bounded; cleared when full.
  static constexpr uint64_t kCodePage = 4096;
  static constexpr size_t kMaxCodePages = 256;
  struct CodePage {
    size_t size = 0;  // bytes the file had there (less at its end)
    std::unique_ptr<std::byte[]> bytes;
  };
  mutable std::unordered_map<uint64_t, CodePage> code_pages_;
  const CodePage& ReadCodePage(uint64_t page) const;
};

// An ELF file opened for reading (mapped): both empty when `path` does not
// open or is not ELF. CloseElf ends and closes what OpenElf opened.
struct ElfFile {
  int fd = -1;
  Elf* elf = nullptr;
};
ElfFile OpenElf(const std::string& path);
void CloseElf(int fd, Elf* elf);

// The build-id of the ELF file at `path` (empty when none or not ELF),
// reading only its headers and notes.
std::string FileBuildId(const std::string& path);

// The GNU build-id (lowercase hex) of an opened ELF; empty when none.
std::string ElfBuildId(Elf* elf);

}  // namespace coroner
