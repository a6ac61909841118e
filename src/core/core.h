// Core: one Linux x86_64 or aarch64 ELF core dump, read through a ByteSource.
//
// This is the snapshot the analysis layers see (crashpad's ProcessSnapshot):
// threads with their registers, the process, the signal, the auxiliary
// vector, the file mappings, the modules and the memory. Nothing here exposes
// ELF notes to the layers above.
//
// Every number taken from the core is checked before use. A core that is cut
// short (a truncated file, `--max-bytes`) still opens: what could be read is
// there, and `missing` says in words what could not. Open() fails only when
// the input is not an x86_64 or aarch64 ELF core at all or its headers
// cannot be read.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory.h"
#include "core/module_files.h"
#include "core/package_note.h"
#include "core/registers.h"
#include "source/byte_source.h"

namespace coroner {

struct SignalInfo {
  int signo = 0;
  int code = 0;
  int err = 0;  // si_errno
  std::optional<uint64_t> fault_address;  // si_addr, when the kernel filled it
  std::optional<int> sender_pid;          // si_pid, for kill / tkill / sigqueue
  std::optional<uint32_t> sender_uid;
  // Where it was read: NT_SIGINFO; only NT_PRSTATUS's short pr_info; a
  // signal frame's siginfo; or derived from a signal frame's sigcontext
  // (trap number, error code, cr2) when the handler took no siginfo.
  enum class Source { kSiginfoNote, kPrstatus, kSignalFrame, kSigcontext } source = Source::kPrstatus;
};

struct FpRegisters {  // from NT_FPREGSET (user_fpregs_struct)
  uint32_t mxcsr = 0;
  uint16_t fcw = 0, fsw = 0;
  std::array<std::array<uint8_t, 16>, 16> xmm{};
};

// aarch64's floating-point and SIMD registers (NT_PRFPREG: user_fpsimd_state).
struct A64FpRegisters {
  std::array<std::array<uint8_t, 16>, 32> v{};
  uint32_t fpsr = 0, fpcr = 0;
};

// What an aarch64 kernel adds about a thread (the LINUX notes).
struct A64ThreadState {
  std::optional<uint64_t> tls;  // NT_ARM_TLS: tpidr_el0
  // NT_ARM_PAC_MASK: the bits pointer authentication puts its code in, for
  // data and instruction pointers. Absent: the process does not use PAC, or
  // the core's writer (qemu) did not say.
  std::optional<uint64_t> pac_data_mask, pac_insn_mask;
  // NT_ARM_TAGGED_ADDR_CTRL: PR_TAGGED_ADDR_ENABLE and the MTE mode bits.
  std::optional<uint64_t> tagged_addr_ctrl;
  std::optional<uint64_t> sve_size;  // NT_ARM_SVE present, its size
};

struct Thread {
  int tid = 0;
  int cursig = 0;  // pr_cursig
  uint64_t sigpend = 0, sighold = 0;
  int ppid = 0, pgrp = 0, sid = 0;
  uint64_t utime_us = 0, stime_us = 0;  // CPU time of this thread
  Registers registers;
  std::optional<FpRegisters> fpregs;
  std::optional<A64FpRegisters> a64_fpregs;
  A64ThreadState a64;
  std::optional<uint64_t> xstate_size;     // NT_X86_XSTATE present, its size
  std::optional<uint64_t> xstate_features;  // XSAVE header's xstate_bv
  std::optional<SignalInfo> siginfo;        // per-thread NT_SIGINFO (gdb writes one per thread)
  // A live snapshot's thread (Core::SetLive): its name (comm) and its
  // state as it ran ('R', 'S', 'D', ...). A core file holds neither.
  std::string name;
  char run_state = 0;
};

// What a live snapshot (analyze --pid) adds to its core: how long the
// process was held, the threads that could not be, and each thread's name
// and state as the process ran. Absent for a core file.
struct LiveCapture {
  struct ThreadFacts {
    int tid = 0;
    char state = 0;
    std::string name;
  };
  int pid = 0;
  double stopped_ms = 0;
  std::vector<ThreadFacts> threads;  // those held and read
  // Threads that never stopped (an uninterruptible wait in the kernel),
  // whose registers the snapshot lacks, and those that exited meanwhile.
  std::vector<ThreadFacts> not_stopped;
  std::vector<int> exited;
};

struct ProcessInfo {  // NT_PRPSINFO
  int pid = 0, ppid = 0, pgrp = 0, sid = 0;
  uint32_t uid = 0, gid = 0;
  char state = 0;  // pr_sname: 'R', 'S', 'D', ...
  uint64_t flags = 0;
  std::string comm;  // pr_fname, at most 16 bytes
  std::string args;  // pr_psargs, at most 80 bytes, NUL separators shown as spaces
};

struct AuxEntry {
  uint64_t type, value;
};

struct Auxv {
  std::vector<AuxEntry> entries;
  std::optional<uint64_t> entry, phdr, phnum, pagesz, base, hwcap, hwcap2, sysinfo_ehdr, execfn_addr,
      platform_addr, secure, uid, euid;
  std::optional<std::string> execfn, platform;  // strings read from the core's memory
};

struct FileMapping {  // one NT_FILE entry
  uint64_t start, end;
  uint64_t offset;  // in bytes (NT_FILE stores pages)
  std::string path;
};

enum class ModuleFileStatus { kUnchecked, kOk, kMissing, kMismatched, kUnreadable };
const char* ModuleFileStatusName(ModuleFileStatus s);

struct Module {
  std::string path;    // as the process mapped it
  uint64_t base = 0;   // lowest mapped address
  uint64_t end = 0;    // highest mapped address + 1
  uint64_t load_bias = 0;  // address - p_vaddr for this object's segments
  std::string build_id;  // lowercase hex; empty when unknown
  enum class BuildIdSource { kNone, kCore, kFile } build_id_source = BuildIdSource::kNone;
  ModuleFileStatus file_status = ModuleFileStatus::kUnchecked;
  std::string file_build_id;  // the build-id of the file found on disk, when read
  bool is_vdso = false;
  Arch arch = Arch::kX86_64;  // the core's machine: whose sysroot has its file
  // The package its package metadata note names: from the core's header
  // pages, else from its file when the file's build-id is the core's.
  std::optional<PackageNote> package;
};

struct CoreOptions {
  // Look modules up on disk: fills file_status, and the build-id when the core
  // lacks it. Costs a stat (and, once per file per process, a read) per module.
  bool check_module_files = true;
  Sysroot sysroot;  // where module paths are on disk
  // The program's files as the user gave them (--exe): for a core that
  // names no file mappings (qemu-user's), the executable is the one whose
  // name is AT_EXECFN's (or, with sole_file_is_the_program, the only one
  // given) when the sysroot has none.
  std::vector<std::string> executable_files;
  // One core's analysis takes a single file given as its program whatever
  // its name, as gdb does; a scan of many programs' cores matches by name
  // alone (another program's crash is never signed with its functions).
  bool sole_file_is_the_program = true;
  // Read the notes and nothing after them (--registers-only): modules come
  // from NT_FILE alone, without the build-ids their header pages hold, so a
  // compressed core is decoded only as far as its notes.
  bool notes_only = false;
  // An interpreter whose state the analysis reads from the process's heap
  // (the Python stacks): when a mapped file's path says it is one, its
  // writable mappings and the process's small anonymous ones (its heap and
  // arenas, up to interpreter_plan_bytes) join the read plan, so that a
  // stream-compressed core still gives the interpreter's state in one pass.
  std::function<bool(std::string_view path)> is_interpreter;
  uint64_t interpreter_plan_bytes = 96ull << 20;
};

// A process's ELF images, from its file mappings. An image begins at a
// mapping of a file's offset 0 (where the kernel dumps the ELF header) and
// takes in the later mappings of the same path up to `image_end(header
// address)`, the end its program headers give; when that is unknown, up to
// the path's next offset-0 mapping. Another mapping of a loaded file (python's
// mmap of libc, a crash reporter reading its own binary) is not the image: a
// mapping of offset 0 makes an image of its own, dropped when another image
// of the path maps code, and one of a later offset beyond an image is left
// out. A path with no offset-0 mapping at all is one image of all its
// mappings. `is_code` says whether code is mapped at a mapping's start.
struct MappedObject {
  Module module;  // path, base and end
  bool has_code = false;
  std::optional<uint64_t> header_at;
};
std::vector<MappedObject> GroupMappings(
    const std::vector<FileMapping>& files, const std::function<bool(uint64_t)>& is_code,
    const std::function<std::optional<uint64_t>(uint64_t header)>& image_end = nullptr);

// A snapshot's parts, for one that is not read from an ELF core (a
// crashlog line): the memory's present bytes are `source`'s, at each
// segment's offset.
struct CoreParts {
  std::unique_ptr<ByteSource> source;
  Arch arch = Arch::kX86_64;
  std::vector<Segment> segments;  // sorted by vaddr, not overlapping
  std::vector<Thread> threads;    // the crashing one first
  std::optional<ProcessInfo> process;
  std::optional<SignalInfo> signal;
  Auxv auxv;
  std::vector<FileMapping> files;
  std::vector<Module> modules;  // sorted by base
  std::vector<std::string> missing;
};

class Core {
 public:
  static Expected<std::unique_ptr<Core>> Open(std::unique_ptr<ByteSource> source,
                                              const CoreOptions& options = {});
  // A core from parts already checked by their reader.
  static std::unique_ptr<Core> Assemble(CoreParts parts);

  // The machine the process ran on (e_machine); every thread's registers are its.
  Arch arch() const { return arch_; }
  const std::vector<Thread>& threads() const { return threads_; }
  // The thread that took the signal: the first NT_PRSTATUS, as kernel and gdb write it.
  size_t crashing_thread() const { return 0; }
  const std::optional<ProcessInfo>& process() const { return process_; }
  // The signal that killed the process: NT_SIGINFO, else the first thread's pr_info.
  const std::optional<SignalInfo>& signal() const { return signal_; }
  const Auxv& auxv() const { return auxv_; }
  const std::vector<FileMapping>& files() const { return files_; }
  // The core names its mapped files (an NT_FILE note, as every kernel's
  // core since Linux 3.7 has; qemu-user writes none).
  bool has_file_note() const { return file_note_; }
  // The file mapping holding addr; nullptr for anonymous memory.
  const FileMapping* FileAt(uint64_t addr) const;
  const std::vector<Module>& modules() const { return modules_; }
  // The process's main program: the module AT_PHDR points into; nullptr
  // when the auxiliary vector or the module is missing.
  const Module* executable() const;
  // As the process named it (AT_EXECFN), else the executable's module path;
  // empty when neither is known.
  std::string exe_path() const;
  Memory& memory() { return *memory_; }
  const Memory& memory() const { return *memory_; }

  // True when the core declares more bytes than are present, or a read of
  // it met a problem below (a cut compressed stream, a failed remote read):
  // asked after the analysis, it covers every read the analysis made.
  bool truncated() const { return truncated_ || !source_->Problems().empty(); }
  // What could not be read, in words ("notes cut at offset 0x1000: ..."),
  // the source's problems last.
  std::vector<std::string> missing() const;
  // True when a read failed (a remote server's error, which may not fail
  // another time) or met corrupt data (a decoder's error): the analysis is
  // not the core's final answer, and its row says io.
  bool read_failed() const;
  // Oddities in structure that did not stop the read.
  const std::vector<std::string>& soft_errors() const { return soft_errors_; }
  // Bytes of GPU state ROCm wrote into the core (AMDGPU notes of type
  // NT_AMDGPU_CORE_STATE, 33): the GPU's waves and queues at the crash,
  // which ROCgdb reads. 0 when there are none.
  uint64_t amdgpu_state_bytes() const { return amdgpu_state_bytes_; }

  // A live snapshot's own facts; nullopt for a core file.
  const std::optional<LiveCapture>& live() const { return live_; }
  // Marks this core as a live snapshot's, naming its threads.
  void SetLive(LiveCapture capture);

  ByteSource& source() { return *source_; }
  uint64_t bytes_read() const { return source_->BytesRead(); }
  std::optional<uint64_t> size() const { return source_->Size(); }

 private:
  friend class CoreReader;
  Core() = default;

  std::unique_ptr<ByteSource> source_;
  std::unique_ptr<Memory> memory_;
  Arch arch_ = Arch::kX86_64;
  std::vector<Thread> threads_;
  std::optional<ProcessInfo> process_;
  std::optional<SignalInfo> signal_;
  Auxv auxv_;
  std::vector<FileMapping> files_;
  std::vector<Module> modules_;
  bool truncated_ = false;
  bool file_note_ = false;
  uint64_t amdgpu_state_bytes_ = 0;
  std::optional<LiveCapture> live_;
  std::vector<std::string> missing_;
  std::vector<std::string> soft_errors_;
};

}  // namespace coroner
