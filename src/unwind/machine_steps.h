// What the unwinder knows of one machine, behind one table (as elfutils'
// backends and drgn's platforms keep theirs): its DWARF registers, the
// registers a callee keeps, what a return address looks like and how to
// clean one, and the steps the machine needs where CFI says nothing (a
// signal return without CFI, a prologue or leaf at the crash, a call to a
// bad address). The Unwind loop (unwinder.cc) names no machine; a third
// one is a file like x86_64_steps.cc and a row in UnwindMachineOf
// (docs/architecture.md, "Adding a machine").
#pragma once

#include <cstdint>
#include <optional>

#include "unwind/unwinder.h"

namespace coroner {

struct UnwindMachine {
  DwarfAbi abi;
  // Whether a function must give DWARF register `r` back as it found it
  // (where the CFI has no rule for it, the caller's value is the callee's).
  bool (*callee_saved)(int r);
  // The core's registers in DWARF numbering.
  DwarfRegisters (*to_dwarf)(const Registers& r);
  // A return address as the code will use it (pointer authentication off).
  uint64_t (*clean_return_address)(uint64_t address, std::optional<uint64_t> pac_mask);
  // Whether the instruction before `addr` (executable) is a call.
  bool (*follows_call)(const ModuleMap& modules, uint64_t addr);
  // Without CFI, through a signal return trampoline at cur.pc: the
  // interrupted frame. Null where CFI always describes the trampoline.
  std::optional<RawFrame> (*step_sigreturn)(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem);
  // Without CFI, at an exact pc: the caller from the function's prologue
  // (its return address not yet saved, or a leaf that never saves it).
  std::optional<RawFrame> (*step_prologue)(const RawFrame& cur, const ModuleMap& modules, StackMemory& mem,
                                           std::optional<uint64_t> pac_mask);
  // At the top frame whose pc is not code (a call through NULL or into
  // data): the caller, when the machine's link register names it. Null
  // where a call leaves the return address on the stack (the scan finds it).
  std::optional<RawFrame> (*step_bad_call)(const RawFrame& cur, const ModuleMap& modules,
                                           std::optional<uint64_t> pac_mask);
  // A leaf at an exact pc returns with the stack pointer unmoved (a link
  // register machine): the walk's stack check allows it there.
  bool leaf_keeps_sp;
};

extern const UnwindMachine kX86_64Unwind;
extern const UnwindMachine kAarch64Unwind;
const UnwindMachine& UnwindMachineOf(Arch arch);

}  // namespace coroner
