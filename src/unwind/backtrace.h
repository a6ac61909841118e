// Backtrace: a thread's unwound frames, symbolized, with inlined functions
// shown as frames of their own (as gdb shows them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "symbolize/disassembler.h"
#include "unwind/unwinder.h"
#include "unwind/value.h"

namespace coroner {

// A parameter or local variable of a frame.
struct Variable {
  std::string name;
  std::string type;                  // C-like: "struct order *", "int [4]"
  std::optional<Value> value;        // nullopt when it could not be read (see `unavailable`)
  std::string unavailable;           // why there is no value
};

// What a frame's pc is. rust-minidump's frames keep the two apart too: a
// return address points after the call, so the call itself (pc - 1) is where
// lines, variables and the function are looked up, and the instruction shown
// as current is the one before it.
enum class PcKind {
  kInstruction,    // the instruction that was running: frame 0, a context a signal interrupted
  kReturnAddress,  // where a call returns to: every caller, a tail call's frame
};

struct Frame {
  size_t index = 0;
  uint64_t pc = 0;
  PcKind pc_kind = PcKind::kInstruction;
  const MappedModule* module = nullptr;  // nullptr when no module holds pc
  std::optional<uint64_t> offset;        // link-time address within the module: pc - load bias
  // The link-time address the frame is looked up at: the call itself for a
  // return address (offset - 1), where gdb too looks up lines and
  // variables; offset for a frame whose pc is exact.
  std::optional<uint64_t> lookup;
  std::string function;                  // demangled, no parameters; empty when unknown
  std::string file;
  int line = 0;
  bool inlined = false;  // an inlined call inside the next frame's function
  FrameTrust trust = FrameTrust::kContext;
  bool signal_trampoline = false;  // gdb's "<signal handler called>"
  bool jit = false;                // pc in JIT code (ModuleMap::IsJitCode)
  // The unwound (physical) frame it belongs to, counted from 0: its inlined
  // calls (innermost first) and the function its pc is in share it, and so
  // do a tail call's frames and a Python frame, placed beside the physical
  // frame they were found in. The frames stay one list in gdb's order
  // (gdb numbers inline frames as frames; the JSON and the dataset's frames
  // are that list), and the physical frame is this link.
  size_t physical = 0;
  uint64_t sp = 0;
  std::optional<uint64_t> cfa;
  DwarfRegisters regs;  // the physical frame's recovered registers
  // Filled by ReadFrameVariables (frame_variables.h); empty otherwise.
  std::vector<Variable> args, locals;
  bool variables_read = false;  // the frame had DWARF for its pc
  // The instructions around pc, on the first frame of a physical frame of
  // the crashing thread (the processor's kFull; the first
  // kDisassembledFrames of them); nullopt elsewhere.
  std::optional<std::vector<Instruction>> disassembly;
};

// One thread's frames: the thread owns them.
struct Backtrace {
  const Thread* thread = nullptr;  // whose frames these are
  std::vector<Frame> frames;
  size_t physical_frames = 0;
  StopReason stop_reason;
};

Backtrace BuildBacktrace(const Thread& thread, const ModuleMap& modules, StackMemory& memory,
                         const UnwindOptions& options = {});

// Frames for the tail calls between each caller and its callee, as gdb
// shows them: where the caller's call site (DWARF) called another function
// than the one running above it, the one chain of tail-call sites leading
// from that function to the callee gives a frame per site (pc = where the
// tail call would have returned, trust kTailCall, `physical` the callee's).
// A call into another module is followed by the name of the function it
// calls, which that module must export. No frames where no chain or more
// than one leads there.
void AddTailCallFrames(Backtrace& bt, const ModuleMap& modules);

}  // namespace coroner
