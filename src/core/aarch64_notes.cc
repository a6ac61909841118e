// aarch64's notes: user_pt_regs in NT_PRSTATUS, user_fpsimd_state in
// NT_PRFPREG, and the LINUX notes of a thread (TLS, SVE, the pointer
// authentication masks, the tagged-address control).
#include <elf.h>

#include <cstring>

#include "core/machine_notes.h"

namespace coroner {
namespace {

constexpr uint32_t kNtArmTls = 0x401, kNtArmSve = 0x405, kNtArmPacMask = 0x406, kNtArmTaggedAddrCtrl = 0x409;
// struct user_fpsimd_state: v0-v31, fpsr, fpcr.
constexpr size_t kFpsimdSize = 32 * 16 + 8;

void ReadFpregs(const ByteView& d, Thread& t) {
  if (d.size() < kFpsimdSize) return;
  A64FpRegisters fp;
  for (size_t i = 0; i < 32; ++i) std::memcpy(fp.v[i].data(), d.bytes().data() + 16 * i, 16);
  fp.fpsr = d.AtOr<uint32_t>(512, 0);
  fp.fpcr = d.AtOr<uint32_t>(516, 0);
  t.a64_fpregs = fp;
}

void ReadLinuxNote(uint32_t type, const ByteView& d, Thread& t) {
  A64ThreadState& a = t.a64;
  switch (type) {
    case kNtArmTls: if (auto v = d.At<uint64_t>(0)) a.tls = *v; return;
    case kNtArmSve: a.sve_size = d.size(); return;
    case kNtArmPacMask: {
      auto data = d.At<uint64_t>(0), insn = d.At<uint64_t>(8);
      if (data && insn) a.pac_data_mask = *data, a.pac_insn_mask = *insn;
      return;
    }
    case kNtArmTaggedAddrCtrl: if (auto v = d.At<uint64_t>(0)) a.tagged_addr_ctrl = *v; return;
    default: return;
  }
}

}  // namespace

const NoteMachine kAarch64Notes{Arch::kAarch64, EM_AARCH64,  "aarch64", kA64RegCount, kA64First,
                                392,            ReadFpregs, ReadLinuxNote};

}  // namespace coroner
