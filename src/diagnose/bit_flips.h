// Possible bit flips: a bad pointer that one flipped bit would turn into a
// good one. Hardware that corrupts registers or memory (a mercurial core, a
// bad DIMM) shows up as crashes whose bad pointers are one bit away from
// valid ones; a software bug's wild pointer rarely is. One core's flip is a
// hint; the same host's cores flipping again is a verdict for epi.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/memory.h"
#include "core/registers.h"

namespace coroner {

struct BitFlip {
  std::string source;       // "fault address", or the register that held the pointer ("rax")
  uint64_t value = 0;       // the bad pointer
  uint64_t original = 0;    // value with one bit flipped: NULL or an address the core maps
  int bit = 0;              // which bit
  bool high_confidence = false;  // a high bit (32 and up): far beyond an overrun's reach
};

// For each bad pointer in `values` (named by where it was seen): none when
// the core maps it (it was not bad). Of the bits 16 to 63, those whose flip
// gives a canonical address in a segment the core dumped, or NULL (bits 32
// and up only: 0x10000000 is as likely a program's constant); a value with
// more than two such bits is left out (a wild value, not a flip). Flips of
// bits below 16 are not considered: a pointer a little past a mapping's end
// is an overrun far more often than a flip.
//
// On aarch64 the hardware ignores a data address' top byte (TBI), so a
// flip there never made a pointer fault: the tag is dropped and bits 56 and
// up are not considered. Nor are the bits pointer authentication writes its
// code into (`pac_mask`, the core's NT_ARM_PAC_MASK; bits 48 to 54 when the
// core does not say): a signed pointer used without its check has a few of
// them set by the hash, which is no flip (rust-minidump turned its ARM64
// hints off for those false positives).
std::vector<BitFlip> PossibleBitFlips(const std::vector<std::pair<std::string, uint64_t>>& values,
                                      const Memory& memory, Arch arch = Arch::kX86_64,
                                      std::optional<uint64_t> pac_mask = std::nullopt);

}  // namespace coroner
