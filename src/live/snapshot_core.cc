#include "live/snapshot_core.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>

#include "base/fd_io.h"
#include "core/link_map.h"
#include "core/machine_notes.h"
#include "live/process_memory.h"

namespace coroner {
namespace {

constexpr uint64_t kPage = 4096;
// Offsets inside struct elf_prpsinfo (the same on x86_64 and aarch64).
constexpr size_t kPrpsinfoSize = 136;

// A mapping as the core holds it. `offset` is where its bytes start in the
// in-memory core; a mapping that cannot be read (PROT_NONE, [vvar]) has
// filesz 0, as a kernel's core gives it.
struct Load {
  uint64_t vaddr = 0, memsz = 0, offset = 0, filesz = 0;
  uint32_t flags = 0;
};

void Put(std::vector<std::byte>& b, size_t at, const void* v, size_t n) { std::memcpy(b.data() + at, v, n); }
template <typename T>
void PutValue(std::vector<std::byte>& b, size_t at, T v) {
  Put(b, at, &v, sizeof v);
}

void AddNote(std::vector<std::byte>& out, const char* name, uint32_t type, const std::vector<std::byte>& desc) {
  auto pad4 = [](size_t n) { return (n + 3) & ~size_t{3}; };
  uint32_t namesz = static_cast<uint32_t>(std::strlen(name) + 1);
  size_t at = out.size();
  out.resize(at + 12 + pad4(namesz) + pad4(desc.size()));
  PutValue<uint32_t>(out, at, namesz);
  PutValue<uint32_t>(out, at + 4, static_cast<uint32_t>(desc.size()));
  PutValue<uint32_t>(out, at + 8, type);
  Put(out, at + 12, name, namesz);
  if (!desc.empty()) Put(out, at + 12 + pad4(namesz), desc.data(), desc.size());
}

void PutTimeval(std::vector<std::byte>& b, size_t at, uint64_t ticks) {
  static const long hz = std::max(1L, ::sysconf(_SC_CLK_TCK));
  PutValue<int64_t>(b, at, static_cast<int64_t>(ticks / static_cast<uint64_t>(hz)));
  PutValue<int64_t>(b, at + 8, static_cast<int64_t>(ticks % static_cast<uint64_t>(hz) * 1000000 / static_cast<uint64_t>(hz)));
}

std::vector<std::byte> Prstatus(const ProcessSnapshot& s, const ThreadSnapshot& t) {
  const NoteMachine& m = NoteMachineOf(s.arch);
  std::vector<std::byte> d(m.prstatus_size);
  PutValue<int32_t>(d, 32, t.tid);
  PutValue<int32_t>(d, 36, s.ppid);
  PutValue<int32_t>(d, 40, s.pgrp);
  PutValue<int32_t>(d, 44, s.sid);
  PutTimeval(d, 48, t.utime_ticks);
  PutTimeval(d, 64, t.stime_ticks);
  Put(d, kPrstatusRegs, t.regs.data(), std::min(t.regs.size(), m.prstatus_regs * 8));
  PutValue<int32_t>(d, kPrstatusRegs + m.prstatus_regs * 8, t.fpregs.empty() ? 0 : 1);  // pr_fpvalid
  return d;
}

std::vector<std::byte> Prpsinfo(const ProcessSnapshot& s) {
  std::vector<std::byte> d(kPrpsinfoSize);
  static const char kStates[] = "RSDTZW";
  const char* at = s.state ? std::strchr(kStates, s.state) : nullptr;
  PutValue<char>(d, 0, static_cast<char>(at ? at - kStates : 0));
  PutValue<char>(d, 1, s.state);
  PutValue<uint64_t>(d, 8, s.flags);
  PutValue<uint32_t>(d, 16, s.uid);
  PutValue<uint32_t>(d, 20, s.gid);
  PutValue<int32_t>(d, 24, s.pid);
  PutValue<int32_t>(d, 28, s.ppid);
  PutValue<int32_t>(d, 32, s.pgrp);
  PutValue<int32_t>(d, 36, s.sid);
  Put(d, 40, s.comm.data(), std::min<size_t>(s.comm.size(), 16));
  Put(d, 56, s.args.data(), std::min<size_t>(s.args.size(), 80));
  return d;
}

std::vector<std::byte> FileNote(const ProcessSnapshot& s) {
  std::vector<const ProcessMapping*> files;
  for (const auto& m : s.mappings) {
    if (!m.path.empty() && m.path[0] == '/') files.push_back(&m);
  }
  std::vector<std::byte> d(16 + files.size() * 24);
  PutValue<uint64_t>(d, 0, files.size());
  PutValue<uint64_t>(d, 8, kPage);
  for (size_t i = 0; i < files.size(); ++i) {
    PutValue<uint64_t>(d, 16 + i * 24, files[i]->start);
    PutValue<uint64_t>(d, 24 + i * 24, files[i]->end);
    PutValue<uint64_t>(d, 32 + i * 24, files[i]->offset / kPage);
  }
  for (const auto* f : files) {
    size_t at = d.size();
    d.resize(at + f->path.size() + 1);
    Put(d, at, f->path.c_str(), f->path.size() + 1);
  }
  return d;
}

// The notes in a kernel's order: the first thread's NT_PRSTATUS, the
// process's notes, its NT_PRFPREG, then each other thread's pair.
std::vector<std::byte> Notes(const ProcessSnapshot& s) {
  std::vector<std::byte> out;
  for (size_t i = 0; i < s.threads.size(); ++i) {
    const ThreadSnapshot& t = s.threads[i];
    AddNote(out, "CORE", NT_PRSTATUS, Prstatus(s, t));
    if (i == 0) {
      AddNote(out, "CORE", NT_PRPSINFO, Prpsinfo(s));
      if (!s.auxv.empty()) AddNote(out, "CORE", NT_AUXV, s.auxv);
      AddNote(out, "CORE", NT_FILE, FileNote(s));
    }
    if (!t.fpregs.empty()) AddNote(out, "CORE", NT_PRFPREG, t.fpregs);
  }
  return out;
}

// The mappings a core holds: all but the kernel's vsyscall page, which no
// process can read. Those that cannot be read have no bytes.
std::vector<Load> Loads(const ProcessSnapshot& s) {
  std::vector<Load> out;
  for (const auto& m : s.mappings) {
    if (m.path == "[vsyscall]") continue;
    Load l;
    l.vaddr = m.start;
    l.memsz = m.end - m.start;
    l.flags = (m.read ? PF_R : 0) | (m.write ? PF_W : 0) | (m.exec ? PF_X : 0);
    l.filesz = m.read && m.path != "[vvar]" ? l.memsz : 0;
    out.push_back(l);
  }
  return out;
}

// The ELF header, the program headers (the PT_NOTE first) and the notes,
// with each load's offset set from `first_data` on by `place`.
std::vector<std::byte> Head(Arch arch, const std::vector<std::byte>& notes, std::vector<Load>& loads,
                            const std::function<uint64_t(Load&, uint64_t next)>& place) {
  size_t phnum = loads.size() + 1;
  size_t notes_at = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
  std::vector<std::byte> head((notes_at + notes.size() + kPage - 1) / kPage * kPage);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
  eh.e_type = ET_CORE;
  eh.e_machine = ElfMachine(arch);
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  // More than 65534 program headers take PN_XNUM and a section header
  // holding the count; a process has fewer mappings than the default
  // vm.max_map_count (65530), so this core does not need it.
  eh.e_phnum = static_cast<uint16_t>(std::min<size_t>(phnum, PN_XNUM - 1));
  Put(head, 0, &eh, sizeof eh);
  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = notes_at;
  note.p_filesz = notes.size();
  note.p_align = 4;
  Put(head, sizeof(Elf64_Ehdr), &note, sizeof note);
  Put(head, notes_at, notes.data(), notes.size());
  uint64_t next = head.size();
  for (size_t i = 0; i < loads.size() && i + 1 < eh.e_phnum; ++i) {
    next = place(loads[i], next);
    Elf64_Phdr ph{};
    ph.p_type = PT_LOAD;
    ph.p_flags = loads[i].flags;
    ph.p_offset = loads[i].offset;
    ph.p_vaddr = loads[i].vaddr;
    ph.p_filesz = loads[i].filesz;
    ph.p_memsz = loads[i].memsz;
    ph.p_align = kPage;
    Put(head, sizeof(Elf64_Ehdr) + (i + 1) * sizeof(Elf64_Phdr), &ph, sizeof ph);
  }
  return head;
}

}  // namespace

struct SnapshotSource::State {
  ProcessSnapshot snap;
  std::vector<std::byte> head;
  std::vector<Load> loads;  // sorted by offset (and by address)
  uint64_t size = 0;
  ProcessMemory memory;
  // Pages read from the running process, by address; a page that could not
  // be read is kept short (possibly empty).
  std::map<uint64_t, std::vector<std::byte>> pages;
  uint64_t cached = 0, cache_bytes = 0, bytes_read = 0;

  explicit State(ProcessSnapshot s) : snap(std::move(s)), memory(snap.pid) {}

  // Up to out.size() bytes at `addr` of one readable mapping: the stacks'
  // copies first, then the pages read before, then the process.
  size_t ReadMemory(uint64_t addr, std::span<std::byte> out) {
    size_t done = 0;
    while (done < out.size()) {
      uint64_t a = addr + done;
      auto st = std::upper_bound(snap.stacks.begin(), snap.stacks.end(), a,
                                 [](uint64_t x, const CapturedRange& r) { return x < r.addr; });
      if (st != snap.stacks.begin() && a - std::prev(st)->addr < std::prev(st)->bytes.size()) {
        const CapturedRange& r = *std::prev(st);
        size_t n = std::min<uint64_t>(out.size() - done, r.bytes.size() - (a - r.addr));
        std::memcpy(out.data() + done, r.bytes.data() + (a - r.addr), n);
        done += n;
        continue;
      }
      uint64_t page = a & ~(kPage - 1);
      uint64_t stop = st != snap.stacks.end() ? std::min<uint64_t>(page + kPage, st->addr) : page + kPage;
      size_t want = std::min<uint64_t>(out.size() - done, stop - a);
      const std::vector<std::byte>* bytes = Page(page);
      std::vector<std::byte> uncached;
      if (!bytes) {
        uncached.resize(kPage);
        uncached.resize(memory.ReadUpTo(page, uncached));
        bytes = &uncached;
      }
      size_t have = bytes->size() > a - page ? bytes->size() - (a - page) : 0;
      size_t n = std::min(want, have);
      std::memcpy(out.data() + done, bytes->data() + (a - page), n);
      done += n;
      if (n < want) break;
    }
    return done;
  }

  // A page read once and kept; null past the cache's bound.
  const std::vector<std::byte>* Page(uint64_t page) {
    if (auto it = pages.find(page); it != pages.end()) return &it->second;
    if (cached + kPage > cache_bytes) return nullptr;
    std::vector<std::byte> bytes(kPage);
    bytes.resize(memory.ReadUpTo(page, bytes));
    cached += kPage;
    return &(pages[page] = std::move(bytes));
  }
};

std::unique_ptr<SnapshotSource> MakeSnapshotSource(ProcessSnapshot snapshot, uint64_t cache_bytes) {
  auto s = std::make_unique<SnapshotSource::State>(std::move(snapshot));
  s->cache_bytes = cache_bytes;
  s->loads = Loads(s->snap);
  s->head = Head(s->snap.arch, Notes(s->snap), s->loads, [](Load& l, uint64_t next) {
    l.offset = next;
    return next + l.filesz;
  });
  s->size = s->head.size();
  for (const auto& l : s->loads) s->size = std::max(s->size, l.offset + l.filesz);
  return std::unique_ptr<SnapshotSource>(new SnapshotSource(std::move(s)));
}

SnapshotSource::SnapshotSource(std::unique_ptr<State> state) : s_(std::move(state)) {}
SnapshotSource::~SnapshotSource() = default;

const ProcessSnapshot& SnapshotSource::snapshot() const { return s_->snap; }
std::optional<uint64_t> SnapshotSource::Size() const { return s_->size; }
uint64_t SnapshotSource::BytesRead() const { return s_->bytes_read; }

Expected<size_t> SnapshotSource::ReadUpTo(uint64_t offset, std::span<std::byte> out) {
  size_t done = 0;
  while (done < out.size()) {
    uint64_t at = offset + done;
    if (at < s_->head.size()) {
      size_t n = std::min<uint64_t>(out.size() - done, s_->head.size() - at);
      std::memcpy(out.data() + done, s_->head.data() + at, n);
      done += n;
      continue;
    }
    auto it = std::upper_bound(s_->loads.begin(), s_->loads.end(), at,
                               [](uint64_t x, const Load& l) { return x < l.offset; });
    if (it == s_->loads.begin()) break;
    --it;
    // Loads of no bytes share their offset with the next: the last one
    // found there holds it.
    if (at - it->offset >= it->filesz) break;
    size_t want = std::min<uint64_t>(out.size() - done, it->filesz - (at - it->offset));
    size_t n = s_->ReadMemory(it->vaddr + (at - it->offset), out.subspan(done, want));
    done += n;
    if (n < want) break;
  }
  s_->bytes_read += done;
  return done;
}

Status SnapshotSource::WriteCore(const std::string& path, bool whole_memory) {
  // Which pages the file holds: the stacks' copies and the pages read, as
  // sorted, merged page ranges (a mapping may span terabytes: a
  // sanitizer's shadow; it is walked by ranges, never page by page).
  std::vector<std::pair<uint64_t, uint64_t>> held;
  for (const auto& [page, bytes] : s_->pages) held.emplace_back(page, page + kPage);
  for (const auto& r : s_->snap.stacks) {
    held.emplace_back(r.addr & ~(kPage - 1), (r.addr + r.bytes.size() + kPage - 1) & ~(kPage - 1));
  }
  std::sort(held.begin(), held.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& h : held) {
    if (!merged.empty() && h.first <= merged.back().second) merged.back().second = std::max(merged.back().second, h.second);
    else merged.push_back(h);
  }
  // A mapping becomes one load per run of held (or not held) pages.
  std::vector<Load> runs;
  auto add = [&](const Load& l, uint64_t from, uint64_t to, bool in) {
    if (from >= to) return;
    Load r = l;
    r.vaddr = from;
    r.memsz = to - from;
    r.filesz = in ? r.memsz : 0;
    runs.push_back(r);
  };
  for (const auto& l : s_->loads) {
    if (l.filesz == 0 || whole_memory) {
      runs.push_back(l);
      continue;
    }
    uint64_t end = l.vaddr + l.memsz, at = l.vaddr;
    auto h = std::upper_bound(merged.begin(), merged.end(), std::make_pair(at, UINT64_MAX));
    if (h != merged.begin() && std::prev(h)->second > at) --h;
    for (; h != merged.end() && h->first < end; ++h) {
      uint64_t from = std::max(h->first, l.vaddr), to = std::min(h->second, end);
      add(l, at, from, false);
      add(l, from, to, true);
      at = to;
    }
    add(l, at, end, false);
  }
  if (runs.size() + 1 >= PN_XNUM) return MakeError(ErrorKind::kUnsupported, "too many mappings for one core file");
  std::vector<std::byte> head = Head(s_->snap.arch, Notes(s_->snap), runs, [](Load& l, uint64_t next) {
    l.offset = next;
    return next + l.filesz;
  });
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return MakeError(ErrorKind::kIo, path + ": " + std::strerror(errno));
  auto write_all = [&](const std::byte* p, size_t n) { return WriteAll(fd, p, n); };
  bool ok = write_all(head.data(), head.size());
  std::vector<std::byte> buf(1 << 20);
  for (const auto& r : runs) {
    for (uint64_t done = 0; ok && done < r.filesz;) {
      size_t n = std::min<uint64_t>(buf.size(), r.filesz - done);
      // A page the process no longer lets be read reads as zeros, as a
      // kernel's core gives a page it could not dump.
      std::fill(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n), std::byte{0});
      for (size_t p = 0; p < n; p += kPage) {
        s_->ReadMemory(r.vaddr + done + p, std::span(buf.data() + p, std::min<uint64_t>(kPage, n - p)));
      }
      ok = write_all(buf.data(), n);
      done += n;
    }
  }
  if (::close(fd) != 0) ok = false;
  if (!ok) return MakeError(ErrorKind::kIo, path + ": cannot write: " + std::strerror(errno));
  return Ok{};
}

void ReadForDebuggers(const Core& core) {
  const Memory& mem = core.memory();
  std::vector<std::byte> page(kPage);
  for (const auto& m : core.modules()) {
    mem.ReadUpTo(m.base, page);
    if (m.is_vdso) {
      for (uint64_t a = m.base; a < m.end && a - m.base < (64u << 10); a += kPage) mem.ReadUpTo(a, page);
    }
  }
  const Auxv& a = core.auxv();
  if (!a.phdr || !a.phnum) return;
  const std::optional<uint64_t> dynamic = PlaceProgram(ProgramHeadersAt(mem, *a.phdr, *a.phnum), *a.phdr).dynamic;
  if (!dynamic) return;
  // The whole dynamic section: gdb reads it entry by entry.
  for (uint64_t at = *dynamic; at - *dynamic < (64u << 10); at += sizeof(Elf64_Dyn)) {
    auto d = mem.Read<Elf64_Dyn>(at);
    if (!d || d->d_tag == DT_NULL) break;
  }
  if (auto r_debug = DebugStructureAddress(mem, *dynamic)) (void)ReadLinkMap(mem, *r_debug);
}

}  // namespace coroner
