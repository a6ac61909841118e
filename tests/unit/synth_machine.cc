#include "unit/synth_machine.h"

#include <gtest/gtest.h>

#include "core/byte_view.h"
#include "source/byte_source.h"
#include "unit/synth_core.h"

namespace coroner::testing {

std::unique_ptr<Core> OpenMachine(const Machine& m) {
  SynthCore core;
  const bool a64 = m.arch == Arch::kAarch64;
  auto prstatus = SynthCore::Prstatus(1234, m.signo, m.rip, m.rsp);
  if (a64) {
    // elf_prstatus with user_pt_regs (x0-x30, sp, pc, pstate): 392 bytes.
    core.machine = 183;  // EM_AARCH64
    prstatus.assign(392, std::byte{0});
    Put32(prstatus, 0, static_cast<uint32_t>(m.signo));
    Put16(prstatus, 12, static_cast<uint16_t>(m.signo));
    Put32(prstatus, 32, 1234);
    Put64(prstatus, 112 + 31 * 8, m.rsp);
    Put64(prstatus, 112 + 32 * 8, m.rip);
  }
  for (const auto& [reg, value] : m.regs) Put64(prstatus, 112 + 8 * PrRegSlot(reg), value);
  core.AddNote("CORE", 1 /* NT_PRSTATUS */, prstatus);
  core.AddNote("CORE", 0x53494749 /* NT_SIGINFO */, SynthCore::Siginfo(m.signo, m.code, m.fault_address));
  // A kernel's core names its mapped files; these name none (their code
  // page is no file's: JIT code).
  std::vector<std::byte> no_files(16, std::byte{0});
  Put64(no_files, 8, 4096);
  core.AddNote("CORE", 0x46494c45 /* NT_FILE */, no_files);
  std::vector<std::byte> code(4096, std::byte{0xcc});  // int3 everywhere else
  if (a64)
    for (size_t i = 0; i < code.size(); i += 4) Put32(code, i, 0xd4200000);  // brk #0
  for (const auto& [addr, bytes] : m.code_bytes)
    for (size_t i = 0; i < bytes.size(); ++i) code.at(addr - kCode + i) = static_cast<std::byte>(bytes[i]);
  std::vector<std::byte> stack(8192, std::byte{0x11});  // no word of it is code or zero
  for (const auto& [addr, value] : m.stack_words) Put64(stack, addr - kStack, value);
  core.AddLoad(kCode, code.size(), code, 5 /* PF_R | PF_X */);
  core.AddLoad(kStack, stack.size(), stack, 6 /* PF_R | PF_W */);
  auto opened = Core::Open(MakeMemorySource(core.Build()));
  EXPECT_TRUE(opened.ok()) << opened.error().message;
  if (!opened.ok()) return nullptr;
  return std::move(*opened);
}

}  // namespace coroner::testing
