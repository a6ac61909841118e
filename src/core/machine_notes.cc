#include "core/machine_notes.h"

namespace coroner {

const NoteMachine* NoteMachineFor(uint16_t e_machine) {
  for (const NoteMachine* m : {&kX86_64Notes, &kAarch64Notes})
    if (m->e_machine == e_machine) return m;
  return nullptr;
}

}  // namespace coroner
