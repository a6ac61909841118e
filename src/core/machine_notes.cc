#include "core/machine_notes.h"

namespace coroner {

const NoteMachine* NoteMachineFor(uint16_t e_machine) {
  for (const NoteMachine* m : {&kX86_64Notes, &kAarch64Notes})
    if (m->e_machine == e_machine) return m;
  return nullptr;
}

const NoteMachine& NoteMachineOf(Arch arch) {
  switch (arch) {
    case Arch::kX86_64: return kX86_64Notes;
    case Arch::kAarch64: return kAarch64Notes;
  }
  return kX86_64Notes;
}

}  // namespace coroner
