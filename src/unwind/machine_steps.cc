#include "unwind/machine_steps.h"

namespace coroner {

const UnwindMachine& UnwindMachineOf(Arch arch) {
  switch (arch) {
    case Arch::kX86_64: return kX86_64Unwind;
    case Arch::kAarch64: return kAarch64Unwind;
  }
  return kX86_64Unwind;
}

}  // namespace coroner
