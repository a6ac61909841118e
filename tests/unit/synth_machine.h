// SynthMachine: one crashed thread's state set by hand (registers, code bytes,
// stack words, the signal) and laid out as a core (SynthCore), for tests of
// the rules that read such a state: the diagnosis and the unwinder. A code
// page at kCode (int3 wherever no instruction is placed, anonymous and
// executable, as JIT code is) and a stack page at kStack (0x11 bytes wherever
// no word is placed: neither code nor zero).
#pragma once

#include <csignal>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/core.h"

namespace coroner::testing {

constexpr uint64_t kCode = 0x400000, kStack = 0x7ffff000;
constexpr uint64_t kSp = kStack + 0x800;  // 16-byte aligned, as at a call's target minus 8 below

struct Machine {
  // An aarch64 machine's pc and sp are `rip` and `rsp`, and its code page
  // is `brk #0` wherever no instruction is placed.
  Arch arch = Arch::kX86_64;
  uint64_t rip = 0, rsp = kSp;
  std::map<Reg, uint64_t> regs;  // the other registers, of the machine's own
  int signo = SIGSEGV, code = 1 /* SEGV_MAPERR */;
  uint64_t fault_address = 0;
  std::map<uint64_t, std::vector<uint8_t>> code_bytes;  // address -> instruction bytes
  std::map<uint64_t, uint64_t> stack_words;             // address -> value
};

// The machine as an opened core; nullptr (with a test failure) when it does
// not open.
std::unique_ptr<Core> OpenMachine(const Machine& m);

}  // namespace coroner::testing
