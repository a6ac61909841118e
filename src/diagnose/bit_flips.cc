#include "diagnose/bit_flips.h"

namespace coroner {
namespace {

bool Dumped(const Memory& memory, uint64_t a) {
  const Segment* s = memory.Find(a);
  return s && s->read && a - s->vaddr < s->filesz;
}

}  // namespace

std::vector<BitFlip> PossibleBitFlips(const std::vector<std::pair<std::string, uint64_t>>& values,
                                      const Memory& memory, Arch arch, std::optional<uint64_t> pac_mask) {
  constexpr int kLowestBit = 16, kHighConfidenceBit = 32;
  constexpr size_t kMaxCandidates = 2;
  const bool a64 = arch == Arch::kAarch64;
  // Bits 48-54: where PAC puts its code below the tag with 48-bit addresses.
  const uint64_t pac_bits = a64 ? pac_mask.value_or(0x007f000000000000ull) & ~kA64TagBits : 0;
  auto canonical = [&](uint64_t a) { return IsCanonicalAddress(arch, a); };
  const int top_bit = a64 ? 56 : 64;
  std::vector<BitFlip> out;
  std::vector<uint64_t> seen;
  for (const auto& [source, tagged] : values) {
    const uint64_t value = UntaggedAddress(arch, tagged);
    if (value == 0 || (canonical(value) && memory.Find(value))) continue;
    bool repeated = false;
    for (uint64_t v : seen) repeated |= v == value;
    if (repeated) continue;
    seen.push_back(value);
    std::vector<BitFlip> found;
    for (int bit = kLowestBit; bit < top_bit; ++bit) {
      if (pac_bits & (uint64_t{1} << bit)) continue;
      uint64_t original = value ^ (uint64_t{1} << bit);
      // NULL with a bit set below 32 is also a round constant a program
      // may use (0x10000000); from bit 32 up it is no plausible pointer.
      if (original == 0 ? bit < kHighConfidenceBit : !(canonical(original) && Dumped(memory, original))) {
        continue;
      }
      found.push_back({source, value, original, bit, bit >= kHighConfidenceBit});
    }
    if (found.size() <= kMaxCandidates) out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace coroner
