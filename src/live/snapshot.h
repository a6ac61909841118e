// A live process's snapshot: what `analyze --pid` and `scan --pid` read of
// a running process, for the same analysis a core gets.
//
// TakeSnapshot stops every thread for as short a time as it can and reads,
// while they are stopped, only what changes as a thread runs: its registers
// and the used part of its stack. Everything else (the mappings, the
// auxiliary vector, the command line, the heap the analysis reads later)
// is read while the process runs on, through ProcessMemory. The threads are
// held with PTRACE_SEIZE + PTRACE_INTERRUPT, which neither sends the process
// a signal nor lets it see one: a signal that arrives while a thread is held
// is given back to it as it is let go.
//
// The stop is done by a thread of its own, which ends when the snapshot is
// taken: the kernel lets a tracer's tracees go when the tracing thread
// exits, so no path, not even coroner killed mid-way, leaves the process
// stopped or traced.
//
// The snapshot becomes an ELF core (snapshot_core.h), so every layer above
// reads it as it reads a core.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"
#include "core/core.h"
#include "core/registers.h"

namespace coroner {

// The machine coroner runs on: the only machine whose processes it can
// snapshot (a process under qemu-user is the host's, not its guest's).
Arch HostArch();

struct ProcessMapping {  // one line of /proc/PID/maps
  uint64_t start = 0, end = 0, offset = 0;
  bool read = false, write = false, exec = false, shared = false;
  std::string path;  // empty for anonymous memory; "[stack]", "[heap]", "[vdso]" as the kernel names them
};

struct ThreadSnapshot {
  int tid = 0;
  // /proc/PID/task/TID/stat before the stop: the state ('R', 'S', 'D',
  // ...), the thread's name (comm) and its CPU time, in clock ticks.
  char state = 0;
  std::string name;
  uint64_t utime_ticks = 0, stime_ticks = 0;
  // NT_PRSTATUS's pr_reg and NT_PRFPREG as PTRACE_GETREGSET gave them.
  std::vector<std::byte> regs, fpregs;
  // A signal that arrived while the thread was held, given back on release.
  int pending_signal = 0;
};

// Bytes copied while the threads were stopped: a thread's stack from just
// below its stack pointer up.
struct CapturedRange {
  uint64_t addr = 0;
  std::vector<std::byte> bytes;
};

struct ProcessSnapshot {
  int pid = 0;
  Arch arch = Arch::kX86_64;
  // /proc/PID/stat and status.
  int ppid = 0, pgrp = 0, sid = 0;
  char state = 0;
  uint64_t flags = 0;
  uint32_t uid = 0, gid = 0;
  std::string comm;
  std::string args;  // the command line, NULs shown as spaces, at most 80 bytes as in NT_PRPSINFO
  std::vector<std::byte> auxv;  // /proc/PID/auxv
  std::vector<ProcessMapping> mappings;
  // The threads that were stopped and read, the main thread first.
  std::vector<ThreadSnapshot> threads;
  std::vector<CapturedRange> stacks;  // sorted by address, not overlapping
  // From the first thread stopped to the last one let go, in milliseconds.
  double stopped_ms = 0;
  // Threads that did not stop in time (in an uninterruptible wait: a dead
  // mount, a device), with their names and states but no registers, and
  // those that exited while the snapshot was taken: not in `threads`.
  std::vector<ThreadSnapshot> not_stopped;
  std::vector<int> exited;
};

struct SnapshotOptions {
  // Bytes of one thread's stack copied during the stop, from its stack
  // pointer up (deeper frames are read later, while the thread runs), and
  // of all the threads' together.
  uint64_t stack_bytes = 1u << 20;
  uint64_t all_stacks_bytes = 256ull << 20;
  // How long to wait with no thread stopping before the threads still
  // running are left out: only a thread in an uninterruptible wait takes
  // that long.
  int stop_wait_ms = 1000;
};

// Why a snapshot was not taken: refused (another user's process, Yama's
// ptrace_scope, a process some debugger already traces, a zombie, coroner
// itself) or no process at all. One line each.
Expected<ProcessSnapshot> TakeSnapshot(int pid, const SnapshotOptions& options = {});

// The facts of the snapshot its core keeps (Core::SetLive).
LiveCapture CaptureFacts(const ProcessSnapshot& snapshot);

}  // namespace coroner
