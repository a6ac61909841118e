// CPython 3.11+'s location table (a code object's co_linetable): which source
// line an instruction came from. The format is CPython's own and stable from
// 3.11 on: a run of entries, each covering 1-8 code units, its first byte
// holding a kind and the unit count, followed by varints. Lines are kept as
// deltas from the previous entry's line, starting at co_firstlineno.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace coroner {

// The line of the instruction at `unit` (an index in 2-byte code units), or
// nullopt when the table says it has none or ends before it (a damaged table
// never reads past its span). `ran_out`, when given, says whether the span
// ended before the entry for `unit` did: a caller reading the table from
// the core a piece at a time then reads more.
std::optional<int> LineOfInstruction(std::span<const uint8_t> table, int first_line, uint64_t unit,
                                     bool* ran_out = nullptr);

}  // namespace coroner
