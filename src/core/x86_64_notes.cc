// x86_64's notes: user_regs_struct in NT_PRSTATUS, user_fpregs_struct in
// NT_PRFPREG, and the XSAVE area (NT_X86_XSTATE).
#include <elf.h>

#include <cstring>

#include "core/machine_notes.h"

namespace coroner {
namespace {

constexpr uint32_t kNtX86Xstate = 0x202;

void ReadFpregs(const ByteView& d, Thread& t) {
  if (d.size() < 416) return;
  FpRegisters fp;
  fp.fcw = d.AtOr<uint16_t>(0, 0);
  fp.fsw = d.AtOr<uint16_t>(2, 0);
  fp.mxcsr = d.AtOr<uint32_t>(24, 0);
  for (size_t i = 0; i < 16; ++i) std::memcpy(fp.xmm[i].data(), d.bytes().data() + 160 + 16 * i, 16);
  t.fpregs = fp;
}

void ReadLinuxNote(uint32_t type, const ByteView& d, Thread& t) {
  if (type != kNtX86Xstate) return;
  t.xstate_size = d.size();
  // The XSAVE header (after the 512-byte legacy area) starts with xstate_bv.
  if (auto bv = d.At<uint64_t>(512)) t.xstate_features = *bv;
}

}  // namespace

const NoteMachine kX86_64Notes{Arch::kX86_64, EM_X86_64,        "x86_64", kX86RegCount, Reg::r15,
                               336,           ReadFpregs,       ReadLinuxNote};

}  // namespace coroner
