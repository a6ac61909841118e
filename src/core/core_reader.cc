// Core::Open: the ELF header, the program headers, the notes and the modules
// of an x86_64 or aarch64 core, each number checked before use.
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "core/byte_view.h"
#include "core/core.h"
#include "core/elf_image.h"
#include "core/link_map.h"
#include "core/machine_notes.h"
#include "core/module_files.h"
#include "core/signals.h"

namespace coroner {

namespace {

// Caps on what the input may make us allocate or walk.
constexpr uint64_t kMaxSegments = 1u << 20;
constexpr uint64_t kMaxNoteBytes = 64u << 20;  // per PT_NOTE segment
constexpr uint64_t kMaxThreads = 1u << 16;
constexpr uint64_t kMaxFileEntries = 1u << 20;
constexpr size_t kMaxAuxEntries = 512;
constexpr size_t kMaxAuxString = 4096;

// Note types the kernel and gdb write that <elf.h> may lack.
constexpr uint32_t kNtSiginfo = 0x53494749;
constexpr uint32_t kNtFile = 0x46494c45;
constexpr uint32_t kNtAmdgpuCoreState = 33;  // owner "AMDGPU"

// struct elf_prpsinfo (136 bytes on both machines).
constexpr size_t kPrpsinfoSize = 136;

std::string ElfTypeName(uint16_t t) {
  switch (t) {
    case ET_NONE: return "ET_NONE";
    case ET_REL: return "ET_REL (an object file)";
    case ET_EXEC: return "ET_EXEC (an executable)";
    case ET_DYN: return "ET_DYN (a shared object or PIE executable)";
    default: return "type " + std::to_string(t);
  }
}

uint64_t TimevalMicros(const ByteView& v, size_t off) {
  int64_t sec = v.AtOr<int64_t>(off, 0), usec = v.AtOr<int64_t>(off + 8, 0);
  if (sec < 0 || usec < 0 || sec > int64_t{1} << 40) return 0;
  return static_cast<uint64_t>(sec) * 1000000u + static_cast<uint64_t>(usec);
}

}  // namespace

const char* ModuleFileStatusName(ModuleFileStatus s) {
  switch (s) {
    case ModuleFileStatus::kUnchecked: return "unchecked";
    case ModuleFileStatus::kOk: return "ok";
    case ModuleFileStatus::kMissing: return "missing";
    case ModuleFileStatus::kMismatched: return "mismatched";
    case ModuleFileStatus::kUnreadable: return "unreadable";
  }
  return "unknown";
}

class CoreReader {
 public:
  CoreReader(Core& core, const CoreOptions& options) : c_(core), options_(options) {}

  Status Read() {
    auto r = ReadHeader();
    if (!r.ok()) return r;
    r = ReadProgramHeaders();
    if (!r.ok()) return r;
    constexpr size_t kMaxNoteSegments = 64;
    if (note_segments_.size() > kMaxNoteSegments) {
      c_.soft_errors_.push_back(std::to_string(note_segments_.size()) + " PT_NOTE segments; reading the first 64");
      note_segments_.resize(kMaxNoteSegments);
    }
    for (const auto& note : note_segments_) ReadNotes(note);
    Finish();
    return Ok{};
  }

 private:
  // An open that fails says what the source met too: "empty file" from a
  // compressed stream cut before its first block is a cut stream.
  Error Fail(ErrorKind kind, std::string msg) {
    for (const auto& p : c_.source_->Problems()) msg += "; " + p.what;
    return MakeError(kind, std::move(msg));
  }

  Status ReadHeader() {
    std::byte buf[sizeof(Elf64_Ehdr)];
    auto n = c_.source_->ReadUpTo(0, buf);
    if (!n.ok()) return n.error();
    if (*n == 0) {
      // A compressed stream cut before its first block decodes to nothing:
      // it is a cut core, not an empty file.
      for (const auto& p : c_.source_->Problems())
        if (p.kind == SourceProblem::Kind::kCut) return Fail(ErrorKind::kTruncated, "cut before the core's first byte");
      return Fail(ErrorKind::kNotElf, "empty file");
    }
    if (*n < SELFMAG || std::memcmp(buf, ELFMAG, SELFMAG) != 0) {
      return Fail(ErrorKind::kNotElf, "not an ELF file (no \\x7fELF magic)");
    }
    if (*n < EI_NIDENT) return Fail(ErrorKind::kTruncated, "ELF identification cut short");
    auto cls = static_cast<uint8_t>(buf[EI_CLASS]);
    if (cls == ELFCLASS32) {
      return Fail(ErrorKind::kUnsupported, "32-bit ELF (ELFCLASS32): coroner reads x86_64 and aarch64 cores only");
    }
    if (cls != ELFCLASS64) return Fail(ErrorKind::kMalformed, "unknown ELF class " + std::to_string(cls));
    if (static_cast<uint8_t>(buf[EI_DATA]) != ELFDATA2LSB) {
      return Fail(ErrorKind::kUnsupported, "big-endian ELF: coroner reads x86_64 and aarch64 cores only");
    }
    if (*n < sizeof(Elf64_Ehdr)) {
      return Fail(ErrorKind::kTruncated, "ELF header cut short (" + std::to_string(*n) + " of 64 bytes)");
    }
    std::memcpy(&eh_, buf, sizeof eh_);
    if (eh_.e_type != ET_CORE) {
      return Fail(ErrorKind::kUnsupported, "not a core dump: ELF " + ElfTypeName(eh_.e_type));
    }
    machine_ = NoteMachineFor(eh_.e_machine);
    if (!machine_) {
      return Fail(ErrorKind::kUnsupported, "core for machine " + std::to_string(eh_.e_machine) +
                                               ", not x86_64 (62) or aarch64 (183)");
    }
    c_.arch_ = machine_->arch;
    if (eh_.e_phentsize != sizeof(Elf64_Phdr)) {
      return Fail(ErrorKind::kMalformed, "e_phentsize is " + std::to_string(eh_.e_phentsize) +
                                             ", expected " + std::to_string(sizeof(Elf64_Phdr)));
    }
    return Ok{};
  }

  Status ReadProgramHeaders() {
    uint64_t phnum = eh_.e_phnum;
    if (phnum == PN_XNUM) {  // the real count is in section header 0's sh_info
      auto sh = c_.source_->Read<Elf64_Shdr>(eh_.e_shoff);
      if (!sh) return Fail(ErrorKind::kTruncated, "e_phnum is PN_XNUM but section header 0 is absent");
      phnum = sh->sh_info;
    }
    if (phnum == 0) return Fail(ErrorKind::kMalformed, "core has no program headers");
    if (phnum > kMaxSegments) {
      return Fail(ErrorKind::kMalformed, std::to_string(phnum) + " program headers (more than " +
                                             std::to_string(kMaxSegments) + ")");
    }
    auto end = CheckedAdd(eh_.e_phoff, phnum * sizeof(Elf64_Phdr));
    if (!end) return Fail(ErrorKind::kMalformed, "program header table overflows");
    auto size = c_.source_->Size();
    uint64_t have_phnum = phnum;
    if (size && *end > *size) {
      have_phnum = eh_.e_phoff >= *size ? 0 : (*size - eh_.e_phoff) / sizeof(Elf64_Phdr);
      c_.truncated_ = true;
      c_.missing_.push_back("program headers cut short: " + std::to_string(have_phnum) + " of " +
                            std::to_string(phnum) + " present");
      if (have_phnum == 0) return Fail(ErrorKind::kTruncated, "program headers are beyond the end of the data");
    }
    // Read in chunks so that a count the data does not back is never allocated at once.
    constexpr uint64_t kChunk = 4096;
    std::vector<Elf64_Phdr> chunk;
    for (uint64_t i = 0; i < have_phnum; i += kChunk) {
      uint64_t n = std::min(kChunk, have_phnum - i);
      chunk.resize(n);
      auto got = c_.source_->ReadUpTo(eh_.e_phoff + i * sizeof(Elf64_Phdr),
                                      std::as_writable_bytes(std::span(chunk)));
      if (!got.ok()) return got.error();
      uint64_t whole = *got / sizeof(Elf64_Phdr);
      for (uint64_t k = 0; k < whole; ++k) AddProgramHeader(chunk[k]);
      if (whole < n) {
        c_.truncated_ = true;
        c_.missing_.push_back("program headers cut short: " + std::to_string(i + whole) + " of " +
                              std::to_string(phnum) + " present");
        if (i + whole == 0) return Fail(ErrorKind::kTruncated, "program headers are beyond the end of the data");
        break;
      }
    }
    BuildMemory(size);
    return Ok{};
  }

  void AddProgramHeader(const Elf64_Phdr& ph) {
    if (ph.p_type == PT_NOTE) {
      note_segments_.push_back(ph);
      return;
    }
    if (ph.p_type != PT_LOAD) return;
    if (!CheckedAdd(ph.p_vaddr, ph.p_memsz) || !CheckedAdd(ph.p_offset, ph.p_filesz)) {
      c_.soft_errors_.push_back("PT_LOAD at " + Hex(ph.p_vaddr) + " overflows; ignored");
      return;
    }
    Segment s;
    s.vaddr = ph.p_vaddr;
    s.memsz = ph.p_memsz;
    s.offset = ph.p_offset;
    s.filesz = std::min(ph.p_filesz, ph.p_memsz);
    s.read = ph.p_flags & PF_R;
    s.write = ph.p_flags & PF_W;
    s.exec = ph.p_flags & PF_X;
    if (s.memsz > 0) segments_.push_back(s);
  }

  void BuildMemory(std::optional<uint64_t> size) {
    std::stable_sort(segments_.begin(), segments_.end(),
                     [](const Segment& a, const Segment& b) { return a.vaddr < b.vaddr; });
    std::vector<Segment> kept;
    kept.reserve(segments_.size());
    uint64_t absent_segments = 0;
    for (auto& s : segments_) {
      if (!kept.empty() && s.vaddr < kept.back().end()) {
        c_.soft_errors_.push_back("PT_LOAD at " + Hex(s.vaddr) + " overlaps the one at " +
                                  Hex(kept.back().vaddr) + "; ignored");
        continue;
      }
      s.present = s.filesz;
      if (size && s.filesz > 0) {
        if (s.offset >= *size) s.present = 0;
        else s.present = std::min(s.filesz, *size - s.offset);
        if (s.present < s.filesz) {
          c_.truncated_ = true;
          ++absent_segments;
        }
      }
      kept.push_back(s);
    }
    if (absent_segments > 0) {
      c_.missing_.push_back("memory of " + std::to_string(absent_segments) + " of " +
                            std::to_string(kept.size()) + " segments is beyond the end of the data");
    }
    c_.memory_ = std::make_unique<Memory>(*c_.source_, std::move(kept));
  }

  void ReadNotes(const Elf64_Phdr& ph) {
    uint64_t want = ph.p_filesz;
    if (want > kMaxNoteBytes) {
      c_.soft_errors_.push_back("PT_NOTE of " + std::to_string(want) + " bytes; reading the first " +
                                std::to_string(kMaxNoteBytes));
      want = kMaxNoteBytes;
    }
    if (auto size = c_.source_->Size()) {
      uint64_t room = ph.p_offset >= *size ? 0 : *size - ph.p_offset;
      want = std::min(want, room);  // allocate only what the data can back
    }
    std::vector<std::byte> buf(static_cast<size_t>(want));
    auto got = c_.source_->ReadUpTo(ph.p_offset, buf);
    if (!got.ok()) {
      c_.missing_.push_back("notes at offset " + Hex(ph.p_offset) + " unreadable: " + got.error().message);
      return;
    }
    buf.resize(*got);
    bool cut = *got < ph.p_filesz && ph.p_filesz <= kMaxNoteBytes;
    ByteView notes(buf);
    size_t pos = 0;
    size_t parsed = 0;
    while (pos < notes.size()) {
      if (!notes.Has(pos, 12)) { cut = true; break; }
      uint32_t namesz = *notes.At<uint32_t>(pos);
      uint32_t descsz = *notes.At<uint32_t>(pos + 4);
      uint32_t type = *notes.At<uint32_t>(pos + 8);
      uint64_t name_at = pos + 12;
      uint64_t desc_at = name_at + AlignUp4(namesz);
      uint64_t next = desc_at + AlignUp4(descsz);
      if (!notes.Has(name_at, namesz) || !notes.Has(desc_at, descsz)) {
        // A note that claims more than the segment holds: cut, or corrupt.
        if (!cut) c_.soft_errors_.push_back("note at offset " + Hex(ph.p_offset + pos) +
                                            " claims more bytes than its segment holds");
        cut = true;
        break;
      }
      std::string name = notes.FixedString(name_at, namesz);
      HandleNote(name, type, *notes.Sub(desc_at, descsz), ph.p_offset + pos);
      ++parsed;
      pos = next > notes.size() ? notes.size() : next;
    }
    if (cut) {
      c_.truncated_ = true;
      c_.missing_.push_back("notes cut at offset " + Hex(ph.p_offset + pos) + " after " +
                            std::to_string(parsed) + " notes (" + std::to_string(threads_seen_) +
                            " threads read): later threads and process notes may be missing");
    }
  }

  void HandleNote(const std::string& name, uint32_t type, const ByteView& d, uint64_t at) {
    if (name == "CORE") {
      switch (type) {
        case NT_PRSTATUS: return Prstatus(d, at);
        case NT_PRFPREG: return Fpregset(d);
        case NT_PRPSINFO: return Prpsinfo(d, at);
        case NT_AUXV: return AuxvNote(d);
        case kNtSiginfo: return Siginfo(d, at);
        case kNtFile: return FileNote(d, at);
        default: return;
      }
    }
    if (name == "AMDGPU" && type == kNtAmdgpuCoreState) c_.amdgpu_state_bytes_ += d.size();
    // A machine's thread notes follow its NT_PRSTATUS.
    if (name == "LINUX" && !c_.threads_.empty()) machine_->read_linux_note(type, d, c_.threads_.back());
  }

  void Prstatus(const ByteView& d, uint64_t at) {
    ++threads_seen_;
    const size_t regs = machine_->prstatus_regs;
    if (d.size() < kPrstatusRegs + regs * 8) {
      c_.soft_errors_.push_back("NT_PRSTATUS at " + Hex(at) + " has " + std::to_string(d.size()) +
                                " bytes, expected " + std::to_string(machine_->prstatus_size) + "; thread skipped");
      return;
    }
    if (c_.threads_.size() >= kMaxThreads) {
      if (c_.threads_.size() == kMaxThreads) c_.soft_errors_.push_back("more than 65536 threads; the rest skipped");
      return;
    }
    Thread t;
    t.cursig = d.AtOr<int16_t>(12, 0);
    t.sigpend = d.AtOr<uint64_t>(16, 0);
    t.sighold = d.AtOr<uint64_t>(24, 0);
    t.tid = d.AtOr<int32_t>(32, 0);
    t.ppid = d.AtOr<int32_t>(36, 0);
    t.pgrp = d.AtOr<int32_t>(40, 0);
    t.sid = d.AtOr<int32_t>(44, 0);
    t.utime_us = TimevalMicros(d, 48);
    t.stime_us = TimevalMicros(d, 64);
    t.registers.arch = c_.arch_;
    const size_t first = static_cast<size_t>(machine_->first_reg);
    for (size_t i = 0; i < regs; ++i) t.registers.value[first + i] = d.AtOr<uint64_t>(kPrstatusRegs + 8 * i, 0);
    // pr_info (elf_siginfo: signo, code, errno) is the fallback signal.
    SignalInfo si;
    si.signo = d.AtOr<int32_t>(0, 0);
    si.code = d.AtOr<int32_t>(4, 0);
    si.err = d.AtOr<int32_t>(8, 0);
    if (si.signo == 0) si.signo = t.cursig;
    if (c_.threads_.empty()) prstatus_signal_ = si;
    c_.threads_.push_back(std::move(t));
  }

  void Fpregset(const ByteView& d) {
    if (!c_.threads_.empty()) machine_->read_fpregs(d, c_.threads_.back());
  }

  void Prpsinfo(const ByteView& d, uint64_t at) {
    if (d.size() < kPrpsinfoSize) {
      c_.soft_errors_.push_back("NT_PRPSINFO at " + Hex(at) + " is short; ignored");
      return;
    }
    ProcessInfo p;
    p.state = static_cast<char>(d.AtOr<uint8_t>(1, 0));
    p.flags = d.AtOr<uint64_t>(8, 0);
    p.uid = d.AtOr<uint32_t>(16, 0);
    p.gid = d.AtOr<uint32_t>(20, 0);
    p.pid = d.AtOr<int32_t>(24, 0);
    p.ppid = d.AtOr<int32_t>(28, 0);
    p.pgrp = d.AtOr<int32_t>(32, 0);
    p.sid = d.AtOr<int32_t>(36, 0);
    p.comm = d.FixedString(40, 16);
    // pr_psargs: the kernel replaces NULs between arguments with spaces.
    std::string args = d.FixedString(56, 80);
    while (!args.empty() && args.back() == ' ') args.pop_back();
    p.args = std::move(args);
    c_.process_ = std::move(p);
  }

  void Siginfo(const ByteView& d, uint64_t at) {
    if (d.size() < 32) {
      c_.soft_errors_.push_back("NT_SIGINFO at " + Hex(at) + " is short; ignored");
      return;
    }
    SignalInfo si;
    si.source = SignalInfo::Source::kSiginfoNote;
    si.signo = d.AtOr<int32_t>(0, 0);
    si.err = d.AtOr<int32_t>(4, 0);
    si.code = d.AtOr<int32_t>(8, 0);
    if (SignalHasFaultAddress(si.signo, si.code)) si.fault_address = d.AtOr<uint64_t>(16, 0);
    if (SignalHasSender(si.code)) {
      si.sender_pid = d.AtOr<int32_t>(16, 0);
      si.sender_uid = d.AtOr<uint32_t>(20, 0);
    }
    if (!c_.threads_.empty() && !c_.threads_.back().siginfo) c_.threads_.back().siginfo = si;
    if (!first_siginfo_) first_siginfo_ = si;
  }

  void AuxvNote(const ByteView& d) {
    size_t n = std::min(d.size() / 16, kMaxAuxEntries);
    for (size_t i = 0; i < n; ++i) {
      uint64_t type = *d.At<uint64_t>(16 * i), value = *d.At<uint64_t>(16 * i + 8);
      if (type == AT_NULL) break;
      c_.auxv_.entries.push_back({type, value});
      auto& a = c_.auxv_;
      switch (type) {
        case AT_ENTRY: a.entry = value; break;
        case AT_PHDR: a.phdr = value; break;
        case AT_PHNUM: a.phnum = value; break;
        case AT_PAGESZ: a.pagesz = value; break;
        case AT_BASE: a.base = value; break;
        case AT_HWCAP: a.hwcap = value; break;
        case AT_HWCAP2: a.hwcap2 = value; break;
        case AT_SYSINFO_EHDR: a.sysinfo_ehdr = value; break;
        case AT_EXECFN: a.execfn_addr = value; break;
        case AT_PLATFORM: a.platform_addr = value; break;
        case AT_SECURE: a.secure = value; break;
        case AT_UID: a.uid = value; break;
        case AT_EUID: a.euid = value; break;
        default: break;
      }
    }
  }

  void FileNote(const ByteView& d, uint64_t at) {
    auto count = d.At<uint64_t>(0);
    auto page = d.At<uint64_t>(8);
    if (!count || !page) {
      c_.soft_errors_.push_back("NT_FILE at " + Hex(at) + " is short; ignored");
      return;
    }
    uint64_t fits = (d.size() - 16) / 24;
    if (*count > fits || *count > kMaxFileEntries) {
      c_.soft_errors_.push_back("NT_FILE at " + Hex(at) + " claims " + std::to_string(*count) +
                                " entries, room for " + std::to_string(fits) + "; ignored");
      return;
    }
    size_t strings = 16 + static_cast<size_t>(*count) * 24;
    std::vector<FileMapping> files;
    files.reserve(static_cast<size_t>(*count));
    for (uint64_t i = 0; i < *count; ++i) {
      size_t e = 16 + static_cast<size_t>(i) * 24;
      FileMapping m;
      m.start = *d.At<uint64_t>(e);
      m.end = *d.At<uint64_t>(e + 8);
      auto off = CheckedMul(*d.At<uint64_t>(e + 16), *page);
      m.offset = off.value_or(0);
      if (strings >= d.size()) {
        c_.soft_errors_.push_back("NT_FILE at " + Hex(at) + " lacks names for its last " +
                                  std::to_string(*count - i) + " entries");
        break;
      }
      const char* p = reinterpret_cast<const char*>(d.bytes().data() + strings);
      size_t len = strnlen(p, d.size() - strings);
      m.path.assign(p, len);
      strings += len + 1;
      if (m.end < m.start) {
        c_.soft_errors_.push_back("NT_FILE entry for " + m.path + " ends before it starts; ignored");
        continue;
      }
      files.push_back(std::move(m));
    }
    c_.files_ = std::move(files);
    c_.file_note_ = true;
  }

  void Finish() {
    if (c_.threads_.empty()) c_.missing_.push_back("no NT_PRSTATUS note: no thread registers");
    if (!c_.process_) c_.missing_.push_back("no NT_PRPSINFO note: process name and arguments unknown");
    if (!c_.threads_.empty() && c_.threads_[0].siginfo) c_.signal_ = c_.threads_[0].siginfo;
    else if (first_siginfo_) c_.signal_ = first_siginfo_;
    else if (prstatus_signal_ && prstatus_signal_->signo != 0) {
      // (No signal at all: a snapshot of a running process, which gdb's
      // gcore and `analyze --pid --write-core` write.)
      c_.signal_ = prstatus_signal_;
      c_.missing_.push_back("no NT_SIGINFO note: signal code from NT_PRSTATUS, fault address unknown");
    }
    if (c_.files_.empty() && !options_.notes_only) FilesFromLinkMap();
    if (c_.files_.empty()) c_.missing_.push_back("no NT_FILE note: mapped files and modules unknown");
    if (options_.notes_only) {
      ReadModules();
      if (!c_.modules_.empty()) {
        c_.missing_.push_back("modules' header pages not read (notes only): build-ids from the files on disk, where found");
      }
      return;
    }
    PlanReads();
    ReadModules();
    auto& a = c_.auxv_;
    if (a.execfn_addr) a.execfn = c_.memory_->ReadCString(*a.execfn_addr, kMaxAuxString);
    if (a.platform_addr) a.platform = c_.memory_->ReadCString(*a.platform_addr, 64);
  }

  // What the analysis reads after the notes, told to the source before it
  // reads any of it, most needed first (the source keeps what its bound
  // allows): the crashing thread's stack (8 MiB above rsp: deep recursions
  // are unwound whole) and the page at its pc, each file mapping's first
  // page (module headers), the other threads' stacks around rsp (256 KiB
  // above for the unwinding, 16 KiB below for the red zone and the dead
  // frames the diagnosis looks at), and executable memory no file holds (JIT
  // code the crashing thread's frames are disassembled from). A compressed
  // core then decodes once, whatever order the analysis reads in: the module
  // headers go in file order now, the stacks and code later.
  void PlanReads() {
    constexpr uint64_t kBelowSp = 16 << 10, kAboveSp = 256 << 10, kCrashingAboveSp = 8 << 20, kPage = 4096;
    constexpr uint64_t kJitCode = 16 << 20;
    // A hostile core (thousands of threads over tens of thousands of tiny
    // segments) must not make the plan itself the cost: each window starts
    // at its first segment (they are sorted), ranges contiguous in the file
    // are one, and the plan stops at kMaxPlanVisits segments looked at or
    // kMaxPlanRanges ranges (what it leaves out is read when asked).
    constexpr size_t kMaxPlanVisits = 1 << 20, kMaxPlanRanges = 1 << 16;
    const std::vector<Segment>& segments = c_.memory_->segments();
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    size_t visits = 0;
    auto add = [&](uint64_t from, uint64_t to) {
      auto it = std::upper_bound(segments.begin(), segments.end(), from,
                                 [](uint64_t v, const Segment& s) { return v < s.vaddr; });
      if (it != segments.begin()) --it;
      for (; it != segments.end() && it->vaddr < to; ++it) {
        if (++visits > kMaxPlanVisits || ranges.size() >= kMaxPlanRanges) return;
        const Segment& s = *it;
        uint64_t dumped_end = s.vaddr + s.filesz;
        if (s.filesz == 0 || to <= s.vaddr || from >= dumped_end) continue;
        uint64_t a = std::max(from, s.vaddr), b = std::min(to, dumped_end);
        uint64_t lo = s.offset + (a - s.vaddr), hi = s.offset + (b - s.vaddr);
        if (!ranges.empty() && ranges.back().second == lo) ranges.back().second = hi;
        else ranges.emplace_back(lo, hi);
      }
    };
    auto saturating_add = [](uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; };
    auto add_thread = [&](const Thread& t, uint64_t above) {
      uint64_t sp = t.registers.sp(), pc = t.registers.pc() & ~(kPage - 1);
      add(sp - std::min(sp, kBelowSp), saturating_add(sp, above));
      add(pc, saturating_add(pc, kPage));
    };
    const size_t crashing = c_.crashing_thread();
    if (crashing < c_.threads_.size()) add_thread(c_.threads_[crashing], kCrashingAboveSp);
    for (const auto& f : c_.files_) {
      if (f.offset == 0) add(f.start, saturating_add(f.start, kPage));
    }
    for (size_t i = 0; i < c_.threads_.size(); ++i) {
      if (i != crashing) add_thread(c_.threads_[i], kAboveSp);
    }
    // Executable memory outside the file mappings: JIT code.
    uint64_t jit = 0;
    for (const Segment& s : c_.memory_->segments()) {
      // A segment is one mapping: file-backed or not from its start.
      if (!s.exec || s.filesz == 0 || jit >= kJitCode || c_.FileAt(s.vaddr)) continue;
      uint64_t take = std::min(s.filesz, kJitCode - jit);
      add(s.vaddr, s.vaddr + take);
      jit += take;
    }
    c_.source_->Retain(ranges);
    PlanInterpreterReads();
  }

  // An interpreter's state lies in its writable data and the process's
  // heap and arenas, which no stack or code range covers: its own writable
  // mappings, then the brk heap (malloc's main arena: CPython's thread
  // states), then the small anonymous writable mappings (the object
  // allocator's arenas, the frames' chunks) smallest first, up to the plan's
  // bytes. A thread's stack is planned already. Kept only if there is room
  // beside the plan above (RetainIfRoom).
  void PlanInterpreterReads() {
    if (!options_.is_interpreter || options_.interpreter_plan_bytes == 0) return;
    constexpr uint64_t kSmallMapping = 8 << 20;
    // The kernel places the brk heap within 1 GiB above the executable's
    // end (32 MiB for a 32-bit process).
    constexpr uint64_t kBrkRange = (1ull << 30) + (32 << 20);
    std::set<std::string_view> interpreters;
    for (const auto& f : c_.files_)
      if (options_.is_interpreter(f.path)) interpreters.insert(f.path);
    if (interpreters.empty()) return;
    uint64_t exe_end = 0;
    if (const FileMapping* exe = c_.auxv_.phdr ? c_.FileAt(*c_.auxv_.phdr) : nullptr)
      for (const auto& f : c_.files_)
        if (f.path == exe->path) exe_end = std::max(exe_end, f.end);
    auto in_brk_range = [&](const Segment& s) { return exe_end && s.vaddr >= exe_end && s.vaddr - exe_end < kBrkRange; };
    // Hundreds of segments, threads and files: sorted once, looked up by
    // binary search.
    std::vector<uint64_t> sps;
    for (const Thread& t : c_.threads_) sps.push_back(t.registers.sp());
    std::sort(sps.begin(), sps.end());
    auto holds_sp = [&](const Segment& s) {
      auto it = std::lower_bound(sps.begin(), sps.end(), s.vaddr);
      return it != sps.end() && *it < s.end();
    };
    std::vector<const FileMapping*> files;
    for (const auto& f : c_.files_) files.push_back(&f);
    std::sort(files.begin(), files.end(), [](const FileMapping* a, const FileMapping* b) { return a->start < b->start; });
    auto file_at = [&](uint64_t addr) -> const FileMapping* {
      auto it = std::upper_bound(files.begin(), files.end(), addr,
                                 [](uint64_t a, const FileMapping* f) { return a < f->start; });
      // NT_FILE ranges may overlap in a hostile core: the nearest start
      // below is asked, as good an answer as any.
      return it != files.begin() && addr < (*std::prev(it))->end ? *std::prev(it) : nullptr;
    };
    std::vector<const Segment*> own, heap, anonymous;
    for (const Segment& s : c_.memory_->segments()) {
      if (!s.write || s.filesz == 0) continue;
      const FileMapping* f = file_at(s.vaddr);
      if (f && interpreters.count(f->path)) own.push_back(&s);
      else if (f || holds_sp(s)) continue;
      else if (in_brk_range(s)) heap.push_back(&s);
      else if (s.filesz <= kSmallMapping) anonymous.push_back(&s);
    }
    std::stable_sort(anonymous.begin(), anonymous.end(),
                     [](const Segment* a, const Segment* b) { return a->filesz < b->filesz; });
    own.insert(own.end(), heap.begin(), heap.end());
    own.insert(own.end(), anonymous.begin(), anonymous.end());
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    uint64_t planned = 0;
    for (const Segment* s : own) {
      uint64_t take = std::min(s->filesz, options_.interpreter_plan_bytes - planned);
      if (take == 0) break;
      ranges.emplace_back(s->offset, s->offset + take);
      planned += take;
    }
    c_.source_->RetainIfRoom(ranges);
  }

  // Without an NT_FILE note (qemu-user writes none, nor the objects' header
  // pages): the mappings of the executable and of each object in the
  // dynamic linker's list, from their files' program headers. The
  // executable's own headers are read at AT_PHDR when the core holds them,
  // else from its file (AT_EXECFN); its dynamic section's DT_DEBUG leads to
  // the list.
  void FilesFromLinkMap() {
    const auto& a = c_.auxv_;
    const Memory& mem = *c_.memory_;
    if (!a.phdr || !options_.check_module_files) return;
    const uint16_t machine = ElfMachine(c_.arch_);
    uint64_t page = a.pagesz && *a.pagesz >= 4096 && *a.pagesz <= (1u << 20) && (*a.pagesz & (*a.pagesz - 1)) == 0
                        ? *a.pagesz : 4096;
    std::string exe;
    if (a.execfn_addr) exe = mem.ReadCString(*a.execfn_addr, kMaxAuxString).value_or("");
    if (exe.empty() && c_.process_) exe = c_.process_->args.substr(0, c_.process_->args.find(' '));
    auto look_up = [&](const std::string& path) {
      ModuleFileInfo info = LookUpModuleFile(InSysroot(options_.sysroot.For(c_.arch_), path));
      if (info.state == ModuleFileInfo::State::kFound && info.machine != machine) info.state = ModuleFileInfo::State::kNotElf;
      return info;
    };
    // Not under the sysroot: a file the user gave (--exe), as gdb is given
    // the program beside the core and a library search path: the one file
    // given, for the program, else the one of the same name.
    auto given = [&](const std::string& path, bool program) {
      ModuleFileInfo info;
      auto base = [](std::string_view p) { return p.substr(p.rfind('/') + 1); };
      for (const auto& f : options_.executable_files) {
        bool sole = program && options_.sole_file_is_the_program && options_.executable_files.size() == 1;
        if (!sole && base(f) != base(path)) continue;
        info = LookUpModuleFile(f);
        if (info.state == ModuleFileInfo::State::kFound && info.machine == machine) return info;
      }
      info.state = ModuleFileInfo::State::kMissing;
      return info;
    };
    ModuleFileInfo exe_info = exe.empty() ? ModuleFileInfo{} : look_up(exe);
    if (exe_info.state != ModuleFileInfo::State::kFound) exe_info = given(exe, true);
    if (exe_info.state != ModuleFileInfo::State::kFound && !exe.empty()) MissingProgramMappings(exe);
    std::vector<Elf64_Phdr> phdrs = ProgramHeadersAt(mem, *a.phdr, a.phnum.value_or(0));
    if (phdrs.empty()) phdrs = exe_info.segments;
    const ProgramPlace place = PlaceProgram(phdrs, *a.phdr);
    const std::optional<uint64_t> exe_bias = place.bias, dynamic = place.dynamic;
    if (!exe_bias) return;
    std::vector<std::pair<std::string, uint64_t>> objects;  // path, load bias
    if (!exe.empty()) objects.emplace_back(exe, *exe_bias);
    std::optional<uint64_t> r_debug = dynamic ? DebugStructureAddress(mem, *dynamic) : std::nullopt;
    if (r_debug) {
      LinkMapList list = ReadLinkMap(mem, *r_debug);
      if (!list.problem.empty()) c_.missing_.push_back("dynamic linker's list: " + list.problem);
      for (auto& e : list.entries) {
        // The dynamic linker's own entry may have no name (glibc names it
        // from PT_INTERP only when it is run as the interpreter).
        if (e.name.empty() && a.base && e.load_bias == *a.base) e.name = exe_info.interpreter;
        // The executable is the entry without a name; the vDSO's name is no path.
        if (e.name.empty() || e.name.find('/') == std::string::npos) continue;
        objects.emplace_back(std::move(e.name), e.load_bias);
      }
    }
    for (const auto& [path, bias] : objects) {
      ModuleFileInfo info = path == exe ? exe_info : look_up(path);
      if (info.state != ModuleFileInfo::State::kFound && path != exe) info = given(path, false);
      if (info.state != ModuleFileInfo::State::kFound) continue;
      link_map_objects_[path] = {bias, info.build_id};
      for (const auto& ph : info.segments) {
        if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
        auto start = CheckedAdd(bias, ph.p_vaddr & ~(page - 1));
        auto end = CheckedAdd(bias, ph.p_vaddr);
        if (end) end = CheckedAdd(*end, ph.p_memsz + page - 1);
        if (!start || !end) continue;
        c_.files_.push_back({*start, *end & ~(page - 1), ph.p_offset & ~(page - 1), path});
      }
    }
    if (!c_.files_.empty()) {
      std::sort(c_.files_.begin(), c_.files_.end(),
                [](const FileMapping& x, const FileMapping& y) { return x.start < y.start; });
      c_.missing_.push_back("no NT_FILE note: modules from the dynamic linker's list and their files' program headers");
    }
  }

  // The program whose file is found nowhere still has its mappings: the
  // segment holding its program headers (AT_PHDR; AT_ENTRY when absent) and
  // those that follow it without a gap, through its first writable one
  // (its data). Its code is then the program's, a module whose file is
  // missing, not code no module holds.
  void MissingProgramMappings(const std::string& exe) {
    const auto& a = c_.auxv_;
    const auto& segments = c_.memory_->segments();
    std::optional<uint64_t> at = a.phdr ? a.phdr : a.entry;
    if (!at) return;
    auto s = std::find_if(segments.begin(), segments.end(),
                          [&](const Segment& seg) { return seg.vaddr <= *at && *at - seg.vaddr < seg.memsz; });
    if (s == segments.end()) return;
    uint64_t offset = 0;
    for (uint64_t end = s->vaddr;; ++s) {
      if (s == segments.end() || s->vaddr != end) break;
      c_.files_.push_back({s->vaddr, s->vaddr + s->memsz, offset, exe});
      offset += s->memsz;
      end = s->vaddr + s->memsz;
      if (s->write) break;
    }
    std::sort(c_.files_.begin(), c_.files_.end(),
              [](const FileMapping& x, const FileMapping& y) { return x.start < y.start; });
    c_.missing_.push_back("no NT_FILE note, and the program's file " + exe +
                          " is missing: its mappings from the core's segments (pass --exe)");
  }

  // One module per mapped ELF object (NT_FILE paths with code, or with an ELF
  // header at their offset-0 mapping), plus the vDSO.
  void ReadModules() {
    const Memory& mem = *c_.memory_;
    auto objects = GroupMappings(
        c_.files_,
        [&](uint64_t a) {
          if (const Segment* s = mem.Find(a)) return s->exec;
          return !options_.notes_only && MappedAsCode(a);
        },
        [&](uint64_t header) { return options_.notes_only ? std::nullopt : HeaderAt(header).image_end; });
    std::set<std::string> loaded_build_ids;  // of the objects with code
    std::vector<std::pair<Module, bool>> found;  // and whether it has code
    for (auto& object : objects) {
      Module& m = object.module;
      bool elf_in_core = object.header_at && !options_.notes_only && ReadModuleFromMemory(m, *object.header_at);
      if (!elf_in_core && !object.has_code) {
        // No code mapped and no ELF header dumped: keep it only if the file says ELF.
        if (!options_.check_module_files) continue;
        auto info = LookUpModuleFile(InSysroot(options_.sysroot.For(c_.arch_), m.path));
        if (info.state != ModuleFileInfo::State::kFound) continue;
      }
      auto listed = link_map_objects_.find(m.path);
      if (!elf_in_core) m.load_bias = listed != link_map_objects_.end() ? listed->second.bias : m.base;
      if (object.has_code && !m.build_id.empty()) loaded_build_ids.insert(m.build_id);
      found.emplace_back(std::move(m), object.has_code);
    }
    for (auto& [m, has_code] : found) {
      // A file read with mmap that is a loaded object's copy under another
      // name (ruby's crash reporter maps libc's separate debug file) is data,
      // not a second image of that object.
      if (!has_code && loaded_build_ids.count(m.build_id)) continue;
      m.arch = c_.arch_;
      CheckFile(m);
      if (auto listed = link_map_objects_.find(m.path);
          m.file_status == ModuleFileStatus::kMissing && listed != link_map_objects_.end()) {
        // Its file was found outside the sysroot (--exe).
        m.build_id = m.file_build_id = listed->second.build_id;
        if (!m.build_id.empty()) m.build_id_source = Module::BuildIdSource::kFile;
        m.file_status = ModuleFileStatus::kOk;
      }
      c_.modules_.push_back(std::move(m));
    }
    if (c_.auxv_.sysinfo_ehdr) {
      Module v;
      v.path = "[vdso]";
      v.is_vdso = true;
      v.arch = c_.arch_;
      v.base = *c_.auxv_.sysinfo_ehdr;
      const Segment* s = mem.Find(v.base);
      v.end = s ? s->end() : v.base;
      if ((!options_.notes_only && ReadModuleFromMemory(v, v.base)) || s) c_.modules_.push_back(std::move(v));
    }
    std::stable_sort(c_.modules_.begin(), c_.modules_.end(),
                     [](const Module& a, const Module& b) { return a.base < b.base; });
  }

  bool ReadModuleFromMemory(Module& m, uint64_t header) {
    const HeaderRead& h = HeaderAt(header);
    if (!h.elf) return false;
    m.load_bias = h.load_bias;
    m.build_id = h.build_id;
    m.package = h.package;
    if (!m.build_id.empty()) m.build_id_source = Module::BuildIdSource::kCore;
    return true;
  }

  // What the ELF headers at `header` in the core's memory say, read once and
  // all at once (the headers, then the build-id note beside them): grouping
  // the mappings wants the image's end, the module its bias and build-id,
  // and a compressed core reads backwards only by decoding again.
  struct HeaderRead {
    bool elf = false;
    uint64_t load_bias = 0;
    std::string build_id;
    std::optional<PackageNote> package;
    std::optional<uint64_t> image_end;  // where the PT_LOAD segments end
    // Where the loader maps each executable PT_LOAD (page-aligned address
    // and file offset) for an image whose header is mapped here.
    std::vector<std::pair<uint64_t, uint64_t>> code_mappings;
  };

  // For a mapping the core has no segment for (gdb's gcore leaves out a
  // library's unmodified code): code when it is where the loader puts an
  // executable segment of the image whose header is the nearest offset-0
  // mapping of the same file below it. A file read with mmap has one
  // mapping from offset 0 and none there.
  bool MappedAsCode(uint64_t start) {
    if (!mappings_indexed_) {
      // Indexed once: a gcore of a big process has thousands of mappings.
      mappings_indexed_ = true;
      for (const auto& m : c_.files_) {
        mapping_at_.emplace(m.start, &m);
        if (m.offset == 0) headers_of_path_[m.path].push_back(m.start);
      }
      for (auto& [path, starts] : headers_of_path_) std::sort(starts.begin(), starts.end());
    }
    auto f = mapping_at_.find(start);
    if (f == mapping_at_.end() || f->second->offset == 0) return false;
    auto headers = headers_of_path_.find(f->second->path);
    if (headers == headers_of_path_.end()) return false;
    auto above = std::lower_bound(headers->second.begin(), headers->second.end(), start);
    if (above == headers->second.begin()) return false;
    for (const auto& [at, offset] : HeaderAt(*std::prev(above)).code_mappings) {
      if (at == start && offset == f->second->offset) return true;
    }
    return false;
  }
  const HeaderRead& HeaderAt(uint64_t header) {
    auto it = headers_.find(header);
    if (it != headers_.end()) return it->second;
    HeaderRead h;
    if (auto image = ReadElfImage(AtAddress(header))) {
      h.elf = true;
      auto first = FirstLoadVaddr(*image);
      h.load_bias = first ? header - *first : header;
      const Memory& mem = *c_.memory_;
      ReadAtFn absolute = [&](uint64_t addr, std::span<std::byte> out) { return mem.ReadUpTo(addr, out); };
      uint64_t bias = h.load_bias;
      ImageNotes notes = ReadImageNotes(*image, absolute, [bias](const Elf64_Phdr& ph) { return bias + ph.p_vaddr; });
      h.build_id = std::move(notes.build_id);
      h.package = ParsePackageNote(notes.package_json);
      auto end = LoadEnd(*image);
      if (first && end && *end >= *first) h.image_end = CheckedAdd(header, *end - *first);
      constexpr uint64_t kPage = 4096;
      for (const auto& ph : image->phdrs) {
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || !first || ph.p_vaddr < *first) continue;
        if (auto at = CheckedAdd(header, (ph.p_vaddr & ~(kPage - 1)) - (*first & ~(kPage - 1)))) {
          h.code_mappings.emplace_back(*at, ph.p_offset & ~(kPage - 1));
        }
      }
    }
    return headers_.emplace(header, std::move(h)).first->second;
  }

  // Reads at offsets from `base` in the core's memory.
  ReadAtFn AtAddress(uint64_t base) const {
    const Memory& mem = *c_.memory_;
    return [&mem, base](uint64_t off, std::span<std::byte> out) -> size_t {
      auto a = CheckedAdd(base, off);
      return a ? mem.ReadUpTo(*a, out) : 0;
    };
  }

  void CheckFile(Module& m) {
    if (!options_.check_module_files || m.is_vdso) return;
    auto info = LookUpModuleFile(InSysroot(options_.sysroot.For(c_.arch_), m.path));
    switch (info.state) {
      case ModuleFileInfo::State::kMissing: m.file_status = ModuleFileStatus::kMissing; return;
      case ModuleFileInfo::State::kUnreadable:
      case ModuleFileInfo::State::kNotElf: m.file_status = ModuleFileStatus::kUnreadable; return;
      case ModuleFileInfo::State::kFound: break;
    }
    m.file_build_id = info.build_id;
    // The file's package note, unless the core's own said one or the file
    // is another build than the process ran.
    if (!m.package && (m.build_id.empty() || info.build_id == m.build_id)) m.package = info.package;
    if (m.build_id.empty()) {
      // The core did not hold the headers: the file is all we have. Its
      // build-id is reported, marked as coming from the file.
      m.build_id = info.build_id;
      if (!m.build_id.empty()) m.build_id_source = Module::BuildIdSource::kFile;
      m.file_status = ModuleFileStatus::kOk;
      return;
    }
    m.file_status = info.build_id == m.build_id ? ModuleFileStatus::kOk : ModuleFileStatus::kMismatched;
  }

  Core& c_;
  const CoreOptions& options_;
  Elf64_Ehdr eh_{};
  const NoteMachine* machine_ = &kX86_64Notes;  // set from the ELF header before any note is read
  std::vector<Segment> segments_;
  std::vector<Elf64_Phdr> note_segments_;
  std::optional<SignalInfo> first_siginfo_, prstatus_signal_;
  size_t threads_seen_ = 0;
  std::map<uint64_t, HeaderRead> headers_;
  bool mappings_indexed_ = false;
  std::unordered_map<uint64_t, const FileMapping*> mapping_at_;
  std::map<std::string_view, std::vector<uint64_t>> headers_of_path_;
  // The objects of the dynamic linker's list (FilesFromLinkMap), by path.
  struct LinkMapObject {
    uint64_t bias = 0;
    std::string build_id;  // of the file found for it
  };
  std::map<std::string, LinkMapObject> link_map_objects_;
};

std::vector<MappedObject> GroupMappings(
    const std::vector<FileMapping>& files, const std::function<bool(uint64_t)>& is_code,
    const std::function<std::optional<uint64_t>(uint64_t header)>& image_end) {
  // In address order, so that the headers are read in the order the core
  // holds them (a compressed core reads backwards only by decoding again).
  std::vector<const FileMapping*> order;
  order.reserve(files.size());
  for (const auto& f : files) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(),
                   [](const FileMapping* a, const FileMapping* b) { return a->start < b->start; });
  struct PathState {
    bool has_header = false;       // some mapping of the path is of offset 0
    std::optional<size_t> open;    // the image that still takes mappings
    uint64_t open_end = 0;
    bool any_code = false;
  };
  std::map<std::string_view, PathState> paths;  // views of the files' paths
  for (const auto* f : order) paths[f->path].has_header |= f->offset == 0;
  std::vector<MappedObject> out;
  out.reserve(files.size());  // at most one per file
  for (const auto* f : order) {
    PathState& p = paths[f->path];
    if (f->offset == 0 || (!p.has_header && !p.open)) {
      MappedObject o;
      o.module.path = f->path;
      o.module.base = f->start;
      o.module.end = f->end;
      if (f->offset == 0) o.header_at = f->start;
      std::optional<uint64_t> end;
      if (o.header_at && image_end) end = image_end(f->start);
      p.open = out.size();
      p.open_end = end ? std::max(*end, f->end) : UINT64_MAX;
      out.push_back(std::move(o));
    } else if (!p.open || f->start >= p.open_end) {
      continue;  // not part of a loaded image
    }
    MappedObject& o = out[*p.open];
    o.module.end = std::max(o.module.end, f->end);
    if (is_code(f->start)) o.has_code = p.any_code = true;
  }
  // Of a path's images, the ones with code are the loaded ones.
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const MappedObject& o) { return !o.has_code && paths[o.module.path].any_code; }),
            out.end());
  return out;
}

const FileMapping* Core::FileAt(uint64_t addr) const {
  for (const auto& f : files_) {
    if (addr >= f.start && addr < f.end) return &f;
  }
  return nullptr;
}

std::string Core::exe_path() const {
  if (auxv_.execfn) return *auxv_.execfn;
  const Module* exe = executable();
  return exe ? exe->path : std::string();
}

const Module* Core::executable() const {
  if (!auxv_.phdr) return nullptr;
  for (const auto& m : modules_) {
    if (*auxv_.phdr >= m.base && *auxv_.phdr < m.end) return &m;
  }
  return nullptr;
}

std::vector<std::string> Core::missing() const {
  std::vector<std::string> out = missing_;
  for (const auto& p : source_->Problems()) out.push_back(p.what);
  return out;
}

bool Core::read_failed() const {
  auto problems = source_->Problems();
  return std::any_of(problems.begin(), problems.end(),
                     [](const SourceProblem& p) {
                       return p.kind == SourceProblem::Kind::kFailed || p.kind == SourceProblem::Kind::kCorrupt;
                     });
}

void Core::SetLive(LiveCapture capture) {
  for (const auto& f : capture.threads) {
    for (auto& t : threads_) {
      if (t.tid == f.tid) t.name = f.name, t.run_state = f.state;
    }
  }
  live_ = std::move(capture);
}

std::unique_ptr<Core> Core::Assemble(CoreParts parts) {
  std::unique_ptr<Core> core(new Core);
  core->source_ = std::move(parts.source);
  core->memory_ = std::make_unique<Memory>(*core->source_, std::move(parts.segments));
  core->arch_ = parts.arch;
  core->threads_ = std::move(parts.threads);
  core->process_ = std::move(parts.process);
  core->signal_ = std::move(parts.signal);
  core->auxv_ = std::move(parts.auxv);
  core->files_ = std::move(parts.files);
  core->file_note_ = true;  // a line names its modules' mappings, as NT_FILE would
  core->modules_ = std::move(parts.modules);
  core->missing_ = std::move(parts.missing);
  return core;
}

Expected<std::unique_ptr<Core>> Core::Open(std::unique_ptr<ByteSource> source, const CoreOptions& options) {
  std::unique_ptr<Core> core(new Core);
  core->source_ = std::move(source);
  CoreReader reader(*core, options);
  auto r = reader.Read();
  if (!r.ok()) return r.error();
  return core;
}

}  // namespace coroner
