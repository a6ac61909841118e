// What the core reader knows of one machine's notes, behind one table (as
// elfutils' backends and drgn's platforms keep theirs): the ELF machine,
// NT_PRSTATUS's register set, NT_PRFPREG's layout, and the LINUX notes the
// kernel writes after each thread's NT_PRSTATUS. The reader names no
// machine; a third one is a file like x86_64_notes.cc and a row in
// NoteMachineFor (docs/architecture.md, "Adding a machine").
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/byte_view.h"
#include "core/core.h"

namespace coroner {

struct NoteMachine {
  Arch arch;
  uint16_t e_machine;      // the ELF header's
  const char* name;        // for messages: "x86_64"
  // pr_reg: this many 8-byte registers, stored in Registers from `first_reg`
  // on, in the kernel's order.
  size_t prstatus_regs;
  Reg first_reg;
  size_t prstatus_size;    // struct elf_prstatus's size, for the message when a note is short
  void (*read_fpregs)(const ByteView& d, Thread& t);                     // NT_PRFPREG
  void (*read_linux_note)(uint32_t type, const ByteView& d, Thread& t);  // a LINUX note after the thread's NT_PRSTATUS
};

extern const NoteMachine kX86_64Notes;
extern const NoteMachine kAarch64Notes;

// The machine of an ELF header's e_machine; null when coroner reads none.
const NoteMachine* NoteMachineFor(uint16_t e_machine);
// The table of a machine coroner reads.
const NoteMachine& NoteMachineOf(Arch arch);

// Offsets inside struct elf_prstatus: the same fields on every machine,
// then each machine's pr_reg.
constexpr size_t kPrstatusRegs = 112;

}  // namespace coroner
