// The unwinder: one thread's call stack from its registers and the core's
// memory, in the fixed order context -> CFI -> frame pointer -> stack scan
// (rust-minidump, Breakpad), each frame marked with how it was found.
//
// CFI comes from the module files' .eh_frame / .debug_frame through libdw;
// the rules are evaluated here against registers and memory read from the
// core, so a prefix or compressed core unwinds the same way (missing pages
// simply end the walk). Signal frames are stepped through by their CFI
// (glibc's __restore_rt describes the saved ucontext). Bounded by a frame
// count and by requiring the stack pointer to move up.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/core.h"
#include "core/registers.h"
#include "symbolize/module_map.h"
#include "unwind/stack_memory.h"

namespace coroner {

// How a frame was found. kTailCall frames are not unwound: DWARF call
// sites prove a function ran there and jumped on (AddTailCallFrames).
// kPython: not a native frame but a Python function that the native
// _PyEval_EvalFrameDefault frame it sits in runs (python/python_stacks.h).
enum class FrameTrust { kContext, kCfi, kFp, kScan, kSignal, kTailCall, kPython };
const char* FrameTrustName(FrameTrust t);
// The trust a stored name spells (a dataset's frames.trust); nullopt for none.
std::optional<FrameTrust> FrameTrustFromName(std::string_view name);

// Registers in DWARF numbering: x86_64's rax rdx rcx rbx rsi rdi rbp rsp
// r8..r15 rip (0-16), aarch64's x0-x30 sp (0-31).
using DwarfRegisters = std::array<std::optional<uint64_t>, 32>;
DwarfRegisters ToDwarfRegisters(const Registers& r);

// What the unwinder needs to know of a machine's DWARF registers.
struct DwarfAbi {
  int ra;     // the return address column: rip (16), x30 (30)
  int sp;     // rsp (7), sp (31)
  int fp;     // rbp (6), x29 (29)
  int count;  // registers tracked: 17, 32
};
const DwarfAbi& DwarfAbiOf(Arch arch);

// A return address as the code will use it: aarch64's pointer
// authentication code (the bits `pac_mask` names; above the 48-bit address
// space when the core does not say) taken off. Unchanged on x86_64.
uint64_t StripPointerAuthentication(Arch arch, uint64_t address, std::optional<uint64_t> pac_mask);

struct RawFrame {
  uint64_t pc = 0;
  uint64_t sp = 0;
  FrameTrust trust = FrameTrust::kContext;
  // pc is the exact instruction (frame 0, or the context a signal
  // interrupted), not a return address: symbolize pc, not pc - 1.
  bool exact_pc = true;
  bool signal_trampoline = false;  // this frame is the kernel's signal return (__restore_rt)
  DwarfRegisters regs;             // what is known of the registers in this frame
  // The frame's canonical frame address (the caller's stack pointer before
  // its call), when CFI gave it. Both ABIs keep it 16-byte aligned.
  std::optional<uint64_t> cfa;
};

struct UnwindOptions {
  size_t max_frames = 1024;
  size_t scan_words = 1024;  // how far a stack scan looks, in 8-byte words
};

// Why a walk ended (its words: StopReasonText in report/).
struct StopReason {
  enum class Kind {
    kNone,                   // not stopped: a walk not made, or not cut
    kEndOfCfi,               // the CFI says there is no return address: the stack's end
    kEntryPoint,             // the program's entry point (_start, AT_ENTRY): nothing called it
    kNothingFound,           // no CFI, frame pointer or return address
    kPcNotCode,              // pc outside executable memory, and no return address found
    kReturnAddressZero,      // the stack's end by convention
    kStackDidNotMoveUp,      // a corrupt or looping stack
    kFrameLimit,             // the walk's own limit (`limit`)
    kCoreBudget,             // the frames of all the core's threads together (`limit`)
  };
  Kind kind = Kind::kNone;
  size_t limit = 0;
  bool operator==(const StopReason&) const = default;
};

struct UnwindResult {
  std::vector<RawFrame> frames;
  StopReason stop_reason;
};

UnwindResult Unwind(const Thread& thread, const ModuleMap& modules, StackMemory& memory,
                    const UnwindOptions& options = {});

// Whether `addr` looks like a return address: in executable memory, just
// after a call instruction (x86_64's call, aarch64's bl and blr).
bool LooksLikeReturnAddress(const ModuleMap& modules, uint64_t addr);

// What an aarch64 instruction is as the one before a return address: bl
// (kDirect), blr or the authenticating blraa/blrab(z) (kIndirect), or no
// call.
enum class A64Call { kNone, kDirect, kIndirect };
A64Call A64CallKind(uint32_t insn);

}  // namespace coroner
