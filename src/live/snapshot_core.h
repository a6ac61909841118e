// A live snapshot as an ELF core: the notes a kernel writes (a thread's
// NT_PRSTATUS and NT_PRFPREG, NT_PRPSINFO, NT_AUXV, NT_FILE) and one PT_LOAD
// per mapping. Two uses:
//
// - SnapshotSource: the core as a ByteSource, for Core::Open, so the whole
//   analysis reads a process as it reads a core. Its headers and notes are
//   in memory; a segment's bytes are the stacks copied during the stop, or
//   else read from the running process as the analysis asks for them (and
//   kept, page by page, so the same bytes read twice are the same bytes).
// - WriteSnapshotCore: the same core as a file (`--write-core`), for gdb or
//   coroner on another machine: the notes, the copied stacks and every page
//   the analysis read; with `whole_memory`, every readable page.
#pragma once

#include <memory>
#include <string>

#include "base/expected.h"
#include "core/core.h"
#include "live/snapshot.h"
#include "source/byte_source.h"

namespace coroner {

class SnapshotSource;

// The snapshot as a core, read through `memory_pid`'s live memory where the
// snapshot holds no copy. Pages read live are kept up to `cache_bytes`.
std::unique_ptr<SnapshotSource> MakeSnapshotSource(ProcessSnapshot snapshot, uint64_t cache_bytes = 256ull << 20);

class SnapshotSource : public ByteSource {
 public:
  ~SnapshotSource() override;
  Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) override;
  std::optional<uint64_t> Size() const override;
  uint64_t BytesRead() const override;
  const ProcessSnapshot& snapshot() const;

  // Writes the core to `path`: the notes, the copied stacks and the pages
  // read so far; with `whole_memory`, every page the process lets be read.
  // ReadForDebuggers first adds the pages a debugger reads to find the
  // libraries (see there).
  Status WriteCore(const std::string& path, bool whole_memory);

  struct State;

 private:
  friend std::unique_ptr<SnapshotSource> MakeSnapshotSource(ProcessSnapshot, uint64_t);
  explicit SnapshotSource(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

// Reads, through `core` (which reads this snapshot's source), the pages a
// debugger needs that the analysis may not have read: each module's ELF
// header page, the vDSO, and the dynamic linker's list of libraries (the
// program's dynamic section, r_debug, each link_map and its name), which
// gdb, unlike coroner, finds the libraries by. They are then kept, so a
// core written afterwards holds them.
void ReadForDebuggers(const Core& core);

}  // namespace coroner
