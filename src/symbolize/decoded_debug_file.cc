#include "symbolize/decoded_debug_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "symbolize/module_image.h"

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2  // glibc's elf.h names it from 2.37 on
#endif

namespace coroner {
namespace {

// A decoded file beyond this is left to libdw (and to its own limits).
constexpr uint64_t kMaxImage = 4ull << 30;
// A compressed section may decode to 256 times its size (real DWARF stays
// under 100: libc6-dbg's worst is 84, on a 160 KB section), or to 1 MiB
// whatever its size; more is a decompression bomb, refused before decoding.
constexpr uint64_t kMaxRatio = 256;
constexpr uint64_t kRatioFloor = 1ull << 20;
// A copy larger than this is not cached (it would evict most others).
constexpr uint64_t kMaxCachedCopy = 1ull << 30;
// The cache holds this much; the copies used least recently go first.
constexpr uint64_t kCacheLimit = 2ull << 30;
// A copy is written only where this much would stay free after it.
constexpr uint64_t kKeepFree = 1ull << 30;

// Where one section of the decoded image goes.
struct Placed {
  uint64_t offset = 0, size = 0, align = 1;
  bool compressed = false;
  bool bits = false;  // not SHT_NOBITS: the file holds its bytes
};

struct Layout {
  uint64_t phoff = 0, shoff = 0, size = 0;
  size_t phnum = 0, shnum = 0;
  std::vector<Placed> sections;  // by section index; [0] is the null section
};

bool AddChecked(uint64_t a, uint64_t b, uint64_t& out) { return !__builtin_add_overflow(a, b, &out) && out <= kMaxImage; }

Expected<uint64_t> AlignUp(uint64_t offset, uint64_t align) {
  uint64_t end;
  if (!AddChecked(offset, align - 1, end)) return MakeError(ErrorKind::kMalformed, "debug file: sections beyond 4 GiB decoded");
  return end & ~(align - 1);
}

// The compression header of a SHF_COMPRESSED section's raw bytes.
Expected<Elf64_Chdr> CompressionHeader(Elf_Scn* scn) {
  Elf_Data* raw = elf_rawdata(scn, nullptr);
  if (!raw || !raw->d_buf || raw->d_size < sizeof(Elf64_Chdr)) {
    return MakeError(ErrorKind::kMalformed, "debug file: a compressed section without its header");
  }
  Elf64_Chdr ch;
  std::memcpy(&ch, raw->d_buf, sizeof ch);
  return ch;
}

Expected<Layout> Plan(Elf* elf) {
  GElf_Ehdr eh;
  if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return MakeError(ErrorKind::kUnsupported, "debug file: not a 64-bit little-endian ELF file");
  }
  Layout layout;
  if (elf_getphdrnum(elf, &layout.phnum) != 0 || elf_getshdrnum(elf, &layout.shnum) != 0 || layout.shnum == 0) {
    return MakeError(ErrorKind::kMalformed, "debug file: unreadable header tables");
  }
  uint64_t offset = sizeof(Elf64_Ehdr);
  if (layout.phnum > 0) {
    layout.phoff = offset;
    if (!AddChecked(offset, uint64_t{layout.phnum} * sizeof(Elf64_Phdr), offset)) {
      return MakeError(ErrorKind::kMalformed, "debug file: too many program headers");
    }
  }
  layout.sections.resize(layout.shnum);
  for (size_t i = 1; i < layout.shnum; ++i) {
    Elf_Scn* scn = elf_getscn(elf, i);
    GElf_Shdr sh;
    if (!scn || !gelf_getshdr(scn, &sh)) return MakeError(ErrorKind::kMalformed, "debug file: unreadable section header");
    Placed& p = layout.sections[i];
    p.bits = sh.sh_type != SHT_NOBITS;
    p.size = sh.sh_size;
    p.align = sh.sh_addralign;
    if (p.bits && (sh.sh_flags & SHF_COMPRESSED)) {
      auto ch = CompressionHeader(scn);
      if (!ch.ok()) return ch.error();
      if (ch->ch_type != ELFCOMPRESS_ZLIB && ch->ch_type != ELFCOMPRESS_ZSTD) {
        return MakeError(ErrorKind::kUnsupported, "debug file: unknown section compression " + std::to_string(ch->ch_type));
      }
      uint64_t packed = elf_rawdata(scn, nullptr)->d_size - sizeof(Elf64_Chdr);
      if (ch->ch_size > kRatioFloor && ch->ch_size / kMaxRatio > packed) {
        return MakeError(ErrorKind::kMalformed, "debug file: a section of " + std::to_string(packed) +
                                                    " compressed bytes claims " + std::to_string(ch->ch_size) +
                                                    " decoded, past the ratio of " + std::to_string(kMaxRatio) +
                                                    " (a decompression bomb)");
      }
      p.compressed = true;
      p.size = ch->ch_size;
      p.align = ch->ch_addralign;
    }
    if (p.align == 0) p.align = 1;
    if ((p.align & (p.align - 1)) != 0 || p.align > 4096) {
      return MakeError(ErrorKind::kMalformed, "debug file: section alignment " + std::to_string(p.align));
    }
    auto at = AlignUp(offset, p.align);
    if (!at.ok()) return at.error();
    p.offset = *at;
    offset = *at;
    if (p.bits && !AddChecked(offset, p.size, offset)) {
      return MakeError(ErrorKind::kMalformed, "debug file: sections beyond 4 GiB decoded");
    }
  }
  auto shoff = AlignUp(offset, 8);
  if (!shoff.ok()) return shoff.error();
  layout.shoff = *shoff;
  if (!AddChecked(layout.shoff, uint64_t{layout.shnum} * sizeof(Elf64_Shdr), layout.size)) {
    return MakeError(ErrorKind::kMalformed, "debug file: too many sections");
  }
  return layout;
}

// One compressed section's payload and where it decodes to. Made with
// libelf on one thread; decoded on any (the bytes are libelf's, which stay
// put while the Elf is open).
struct DecodeJob {
  const std::byte* in = nullptr;
  size_t in_size = 0;
  uint32_t type = 0;  // ELFCOMPRESS_*
  std::span<std::byte> out;
};

Expected<DecodeJob> MakeDecodeJob(Elf_Scn* scn, std::span<std::byte> out) {
  Elf_Data* raw = elf_rawdata(scn, nullptr);
  auto ch = CompressionHeader(scn);
  if (!ch.ok()) return ch.error();
  return DecodeJob{static_cast<const std::byte*>(raw->d_buf) + sizeof(Elf64_Chdr), raw->d_size - sizeof(Elf64_Chdr),
                   ch->ch_type, out};
}

// Decodes a section's payload into its `out`, which must come out exactly
// full.
Status Decode(const DecodeJob& job) {
  const std::byte* in = job.in;
  size_t in_size = job.in_size;
  std::span<std::byte> out = job.out;
  size_t produced = 0;
  if (job.type == ELFCOMPRESS_ZLIB) {
    // libdeflate decodes a whole buffer at once, about twice as fast as zlib.
    static thread_local std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> decompressor(
        libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
    if (!decompressor) return MakeError(ErrorKind::kIo, "debug file: out of memory");
    if (libdeflate_zlib_decompress(decompressor.get(), in, in_size, out.data(), out.size(), &produced) !=
        LIBDEFLATE_SUCCESS) {
      return MakeError(ErrorKind::kMalformed, "debug file: a zlib section does not decode");
    }
  } else {
    size_t r = ZSTD_decompress(out.data(), out.size(), in, in_size);
    if (ZSTD_isError(r)) return MakeError(ErrorKind::kMalformed, std::string("debug file: zstd section: ") + ZSTD_getErrorName(r));
    produced = r;
  }
  if (produced != out.size()) return MakeError(ErrorKind::kMalformed, "debug file: a section decodes to another size than its header says");
  return Ok{};
}

// Decodes the sections on two threads where the machine has two CPUs: the
// first run of a module decodes libc6-dbg's 10 MB, and each thread also
// takes the page faults of the copy it writes into. Sections are dealt
// largest first to the thread with less work.
Status DecodeAll(std::vector<DecodeJob>& jobs) {
  constexpr size_t kWorthASecondThread = 1 << 20;  // decoded bytes
  size_t total = 0;
  for (const auto& j : jobs) total += j.out.size();
  bool two = std::thread::hardware_concurrency() >= 2 && total >= kWorthASecondThread && jobs.size() >= 2;
  std::sort(jobs.begin(), jobs.end(), [](const DecodeJob& a, const DecodeJob& b) { return a.out.size() > b.out.size(); });
  std::vector<const DecodeJob*> share[2];
  size_t load[2] = {0, 0};
  for (const auto& j : jobs) {
    int to = two && load[1] < load[0] ? 1 : 0;
    share[to].push_back(&j);
    load[to] += j.out.size();
  }
  auto run = [](const std::vector<const DecodeJob*>& mine) -> Status {
    for (const DecodeJob* j : mine)
      if (auto r = Decode(*j); !r.ok()) return r;
    return Ok{};
  };
  if (share[1].empty()) return run(share[0]);
  Status second = Ok{};
  std::thread helper([&] { second = run(share[1]); });
  Status first = run(share[0]);
  helper.join();
  return first.ok() ? second : first;
}

Status Write(Elf* elf, const Layout& layout, std::span<std::byte> out) {
  std::vector<DecodeJob> jobs;
  if (out.size() != layout.size) return MakeError(ErrorKind::kIo, "debug file: image buffer of the wrong size");
  GElf_Ehdr geh;
  if (!gelf_getehdr(elf, &geh)) return MakeError(ErrorKind::kMalformed, "debug file: unreadable ELF header");
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, geh.e_ident, EI_NIDENT);
  eh.e_type = geh.e_type;
  eh.e_machine = geh.e_machine;
  eh.e_version = geh.e_version;
  eh.e_entry = geh.e_entry;
  eh.e_flags = geh.e_flags;
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phoff = layout.phoff;
  eh.e_phentsize = layout.phnum ? sizeof(Elf64_Phdr) : 0;
  eh.e_phnum = geh.e_phnum;  // as in the file: PN_XNUM stays PN_XNUM, with section 0 holding the count
  eh.e_shoff = layout.shoff;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = geh.e_shnum;  // likewise for SHN_UNDEF with the count in section 0
  eh.e_shstrndx = geh.e_shstrndx;
  std::memcpy(out.data(), &eh, sizeof eh);
  for (size_t i = 0; i < layout.phnum; ++i) {
    GElf_Phdr gph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &gph)) return MakeError(ErrorKind::kMalformed, "debug file: unreadable program header");
    Elf64_Phdr ph{gph.p_type, gph.p_flags, gph.p_offset, gph.p_vaddr, gph.p_paddr, gph.p_filesz, gph.p_memsz, gph.p_align};
    std::memcpy(out.data() + layout.phoff + i * sizeof ph, &ph, sizeof ph);
  }
  for (size_t i = 0; i < layout.shnum; ++i) {
    Elf_Scn* scn = elf_getscn(elf, i);
    GElf_Shdr gsh;
    if (!scn || !gelf_getshdr(scn, &gsh)) return MakeError(ErrorKind::kMalformed, "debug file: unreadable section header");
    const Placed& p = layout.sections[i];
    Elf64_Shdr sh{gsh.sh_name, gsh.sh_type, gsh.sh_flags, gsh.sh_addr, gsh.sh_offset, gsh.sh_size,
                  gsh.sh_link, gsh.sh_info, gsh.sh_addralign, gsh.sh_entsize};
    if (i > 0) {  // section 0 stays as it is: it may hold the extended counts
      sh.sh_offset = p.offset;
      sh.sh_size = p.size;
      sh.sh_addralign = p.align;
      sh.sh_flags &= ~uint64_t{SHF_COMPRESSED};
      std::span<std::byte> dest = out.subspan(p.offset, p.bits ? p.size : 0);
      if (p.compressed) {
        auto job = MakeDecodeJob(scn, dest);
        if (!job.ok()) return job.error();
        jobs.push_back(*job);
      } else if (p.bits && p.size > 0) {
        Elf_Data* raw = elf_rawdata(scn, nullptr);
        if (!raw || !raw->d_buf || raw->d_size != p.size) return MakeError(ErrorKind::kMalformed, "debug file: a section's bytes lie beyond the file");
        std::memcpy(dest.data(), raw->d_buf, p.size);
      }
    }
    std::memcpy(out.data() + layout.shoff + i * sizeof sh, &sh, sizeof sh);
  }
  return DecodeAll(jobs);
}

// Anonymous memory for an image; nullptr when none.
void* MapMemory(uint64_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

bool MakeDirs(const std::string& path) {
  for (size_t slash = 1; slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string part = path.substr(0, slash);
    if (!part.empty() && ::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return ::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST;
}

// The cache's debug/ directory, opened without following a link, or -1.
// Every later step works relative to this descriptor, so a name swapped in
// the parent changes nothing. Refused (once said on stderr): a directory
// another user owns or may write, where copies could be planted or links
// laid for our writes.
int OpenCacheDir(const std::string& dir) {
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open(dir.c_str(), kFlags);
  if (fd < 0 && errno == ENOENT) {  // made once, by the first run that needs it
    if (!MakeDirs(dir)) return -1;
    fd = ::open(dir.c_str(), kFlags);
  }
  std::string why;
  struct stat st;
  if (fd < 0) {
    why = errno == ELOOP || errno == ENOTDIR ? "it is a symbolic link or not a directory" : std::strerror(errno);
  } else if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) {
    why = "another user owns it";
  } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    why = "others may write to it";
  }
  if (why.empty()) return fd;
  if (fd >= 0) ::close(fd);
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr, "coroner: not using the debug cache %s: %s (decoded copies stay in memory)\n", dir.c_str(),
                 why.c_str());
  return -1;
}

// The name of the copy of the debug file open as `source_fd`: its build-id
// and its identity on this machine (device, inode, size, modification and
// change times). Another file with the same build-id (a program linked with
// someone else's) gets a copy of its own and never reads this one, and a
// file changed in place gets a new copy.
std::string CopyName(const std::string& id, int source_fd) {
  struct stat st;
  if (fstat(source_fd, &st) != 0 || !S_ISREG(st.st_mode)) return {};
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the identity's words
  for (uint64_t v : {uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size), uint64_t(st.st_mtim.tv_sec),
                     uint64_t(st.st_mtim.tv_nsec), uint64_t(st.st_ctim.tv_sec), uint64_t(st.st_ctim.tv_nsec)})
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h));
  return id + "-" + key + ".debug";
}

// A new file in `dir_fd` that no one else can have laid down: O_EXCL and
// O_NOFOLLOW, a name with random bits, mode 0600. Returns its fd and name.
int CreateTemp(int dir_fd, const std::string& stem, std::string& name) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, 0) != sizeof r) r = static_cast<uint64_t>(getpid()) * 2654435761u + attempt;
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".%016llx.tmp", static_cast<unsigned long long>(r));
    name = "." + stem + suffix;
    int fd = ::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

// Keeps the cache under its limit: the copies whose last use (their mtime,
// renewed on every use) is oldest go first, never `keep`. Writers that died
// leave temporary files; those older than an hour go too. Only regular
// files in the directory itself are looked at or removed.
void Evict(int dir_fd, const std::string& keep) {
  int fd = ::dup(dir_fd);
  DIR* d = fd >= 0 ? fdopendir(fd) : nullptr;
  if (!d) {
    if (fd >= 0) ::close(fd);
    return;
  }
  rewinddir(d);
  struct Entry {
    std::string name;
    time_t used;
    uint64_t size;
  };
  std::vector<Entry> copies;
  uint64_t total = 0;
  time_t now = time(nullptr);
  for (size_t seen = 0; seen < 100000; ++seen) {  // bounded: a directory someone filled
    dirent* e = readdir(d);
    if (!e) break;
    std::string name = e->d_name;
    struct stat st;
    if (name == "." || name == ".." || fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      if (now - st.st_mtime > 3600) ::unlinkat(dir_fd, name.c_str(), 0);
      continue;
    }
    if (name.size() < 6 || name.compare(name.size() - 6, 6, ".debug") != 0) continue;
    copies.push_back({name, st.st_mtime, static_cast<uint64_t>(st.st_size)});
    total += static_cast<uint64_t>(st.st_size);
  }
  closedir(d);
  std::sort(copies.begin(), copies.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const auto& c : copies) {
    if (total <= kCacheLimit) break;
    if (c.name == keep) continue;
    if (::unlinkat(dir_fd, c.name.c_str(), 0) == 0) total -= c.size;
  }
}

}  // namespace

std::string DefaultCacheDir() {
  if (const char* dir = std::getenv("CORONER_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::string(xdg) + "/coroner";
  if (const char* home = std::getenv("HOME"); home && *home == '/') return std::string(home) + "/.cache/coroner";
  return {};
}

bool HasCompressedSections(Elf* elf) {
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) && sh.sh_type != SHT_NOBITS) return true;
  }
  return false;
}

Expected<uint64_t> DecodedImageSize(Elf* elf) {
  auto layout = Plan(elf);
  if (!layout.ok()) return layout.error();
  return layout->size;
}

Status WriteDecodedImage(Elf* elf, std::span<std::byte> out) {
  auto layout = Plan(elf);
  if (!layout.ok()) return layout.error();
  return Write(elf, *layout, out);
}

DecodedDebugFile::~DecodedDebugFile() {
  if (elf_) elf_end(elf_);
  if (fd_ >= 0) ::close(fd_);
  if (memory_) munmap(memory_, memory_size_);
}

std::unique_ptr<DecodedDebugFile> DecodedDebugFile::Open(Elf* elf, int source_fd, const std::string& cache_dir) {
  if (!elf || !HasCompressedSections(elf)) return nullptr;
  std::unique_ptr<DecodedDebugFile> file(new DecodedDebugFile);
  std::string id = ElfBuildId(elf);
  size_t shnum = 0;
  elf_getshdrnum(elf, &shnum);
  std::string name = cache_dir.empty() || id.empty() || source_fd < 0 ? std::string() : CopyName(id, source_fd);
  std::string dir = cache_dir + "/debug";
  int dir_fd = name.empty() ? -1 : OpenCacheDir(dir);
  struct DirCloser {
    int fd;
    ~DirCloser() {
      if (fd >= 0) ::close(fd);
    }
  } dir_closer{dir_fd};

  // A copy made by an earlier run from this very file: a regular file of
  // ours (no link followed), with the build-id and the sections.
  auto open_copy = [&]() -> bool {
    int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return false;
    Elf* copy = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()
                    ? elf_begin(fd, ELF_C_READ_MMAP, nullptr)
                    : nullptr;
    size_t n = 0;
    if (!copy || elf_kind(copy) != ELF_K_ELF || elf_getshdrnum(copy, &n) != 0 || n != shnum ||
        ElfBuildId(copy) != id || HasCompressedSections(copy)) {
      CloseElf(fd, copy);
      return false;
    }
    futimens(fd, nullptr);  // its last use, for eviction (fails harmlessly on a read-only cache)
    file->fd_ = fd;
    file->elf_ = copy;
    file->cache_path_ = dir + "/" + name;
    return true;
  };
  if (dir_fd >= 0 && open_copy()) return file;

  auto layout = Plan(elf);
  if (!layout.ok()) return nullptr;

  // Decoded straight into the new copy, a section at a time, through a
  // shared mapping of the file (page cache, not this process's memory); the
  // space is allocated first, so a full disk is an error here and never a
  // SIGBUS later. Written beside its final name and renamed, so that a
  // reader never sees half a copy, and two writers leave one whole copy.
  struct statvfs fs;
  if (dir_fd >= 0 && layout->size <= kMaxCachedCopy && fstatvfs(dir_fd, &fs) == 0 &&
      uint64_t{fs.f_bavail} * fs.f_frsize >= layout->size + kKeepFree) {
    std::string tmp;
    int fd = CreateTemp(dir_fd, id, tmp);
    bool written = false;
    if (fd >= 0 && posix_fallocate(fd, 0, static_cast<off_t>(layout->size)) == 0) {
      void* map = mmap(nullptr, layout->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map != MAP_FAILED) {
        written = Write(elf, *layout, std::span<std::byte>(static_cast<std::byte*>(map), layout->size)).ok();
        munmap(map, layout->size);
      }
    }
    if (fd >= 0) written = (::close(fd) == 0) && written;
    if (written && ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) == 0) {
      Evict(dir_fd, name);
      if (open_copy()) return file;
    } else if (fd >= 0) {
      ::unlinkat(dir_fd, tmp.c_str(), 0);
    }
  }

  void* memory = MapMemory(layout->size);
  if (!memory) return nullptr;
  std::span<std::byte> image(static_cast<std::byte*>(memory), layout->size);
  if (!Write(elf, *layout, image).ok()) {
    munmap(memory, layout->size);
    return nullptr;
  }

  // No cache: the image lives in memory for this run.
  Elf* in_memory = elf_memory(static_cast<char*>(memory), layout->size);
  if (!in_memory || elf_kind(in_memory) != ELF_K_ELF) {
    if (in_memory) elf_end(in_memory);
    munmap(memory, layout->size);
    return nullptr;
  }
  file->elf_ = in_memory;
  file->memory_ = memory;
  file->memory_size_ = layout->size;
  return file;
}

}  // namespace coroner
