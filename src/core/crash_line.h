// Lines the crashlog handler writes ("coroner-crash: v=1 ...", the format
// is docs/crashlog.md), read back. A line is untrusted text: every field is
// checked, every count and length is capped, and a line that is not exactly
// right is rejected with the reason.
//
// A parsed line becomes a core snapshot (AssembleCore): the crashing
// thread's registers and signal, the stack words the line carries, the
// frame-pointer chain laid out where it was, the modules with their
// build-ids. The same analysis as for a kernel core then runs on it, so a
// line gets the same syndrome rules, symbols (by build-id) and signature as
// a core would. The snapshot is the one the core reader makes of the line
// as an ELF core file (SynthesizeCore); a test holds the two equal.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/core.h"
#include "base/expected.h"

namespace coroner {

struct CrashLine {
  struct Module {
    std::string build_id;  // lowercase hex; empty when the object has none
    uint64_t bias = 0;
    std::string path;
  };
  struct Segment {
    size_t module = 0;
    uint64_t start = 0, end = 0, offset = 0;
    bool write = false, exec = false;
  };
  int version = 0;
  int pid = 0, tid = 0;
  int64_t time = 0;  // seconds since the epoch
  uint32_t nanoseconds = 0;
  std::string host, comm;
  int signal = 0, code = 0;
  uint64_t fault_address = 0;
  // The machine (`arch`; a line without one is x86_64's) and the
  // ucontext's general registers in the line's order: for x86_64 the 23
  // rax ... r15, rip, eflags, csgsfs, err, trapno, oldmask, cr2; for
  // aarch64 the 34 x0 ... x30, sp, pc, pstate. The rest are 0.
  Arch arch = Arch::kX86_64;
  std::array<uint64_t, 34> registers{};
  uint64_t stack_start = 0;                   // the first word's address
  std::vector<std::optional<uint64_t>> stack; // nullopt: unreadable
  std::vector<std::string> backtrace;         // "buildid+0xoff" or "0xaddr", frame 0 first
  std::vector<uint64_t> frame_pointers;       // the chain the backtrace walked
  std::optional<std::pair<uint64_t, uint64_t>> stack_mapping;
  std::vector<Module> modules;
  std::vector<Segment> segments;
};

// Finds "coroner-crash: " anywhere in `text` (a log prefix is fine) and
// parses what follows. nullopt-free: an error says what is wrong.
Expected<CrashLine> ParseCrashLine(std::string_view text);

// True when the text holds a crash line at all (to tell rejected lines from
// ordinary log lines).
bool HasCrashLine(std::string_view text);

// The line as a core snapshot: the crashing thread's registers and signal,
// the stack words the line carries and the frame-pointer chain laid out
// where they were, the modules as mapped files with their build-ids. What
// the core reader would make of SynthesizeCore's file, built directly.
std::unique_ptr<Core> AssembleCore(const CrashLine& line);

// The line as an ELF core file: the same snapshot, with each module's
// first mapping holding an ELF header page with its build-id, as the
// kernel dumps it. For tools that want a core file, and to check
// AssembleCore against the core reader.
std::vector<std::byte> SynthesizeCore(const CrashLine& line);

}  // namespace coroner
