// Fuzzes CPython's location table reader (python/location_table): the first
// 4 bytes are the code object's first line, the next 4 the code unit looked
// up, the rest the table. Every lookup ends (a line, none, or "ran out"),
// with no read past the table and no signed overflow however the deltas
// add up.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "python/location_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  int32_t first = 0;
  uint32_t unit = 0;
  std::memcpy(&first, data, 4);
  std::memcpy(&unit, data + 4, 4);
  std::span<const uint8_t> table(data + 8, size - 8);
  bool ran_out = false;
  auto line = coroner::LineOfInstruction(table, first, unit % 4096, &ran_out);
  if (line && (*line <= 0 || ran_out)) __builtin_trap();  // a line is positive, and only from a whole entry
  for (size_t cut = 0; cut <= table.size(); cut += 1 + table.size() / 8)
    (void)coroner::LineOfInstruction(table.first(cut), first, unit % 4096, &ran_out);
  return 0;
}
