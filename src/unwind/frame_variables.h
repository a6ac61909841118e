// Frame variables: the values of a frame's parameters and locals (gdb's
// `bt full`, `info args`, `info locals`), from the DWARF of the frame's
// module, evaluated against the frame's recovered registers and the core's
// memory.
//
// Each value is kept as read (unwind/value.h: integers, characters,
// pointers with their symbol and string, enumerators, members, elements);
// report/value_printer.h prints it as gdb does, so a report reads like the
// workflow's gdb session and can be checked against it. A variable without
// a location at the pc is optimized out (gdb's `<optimized out>`); one whose
// location cannot be evaluated here (a register the unwinder did not
// recover, an entry value, memory the core does not hold) has no value and
// says why: nothing is guessed.
#pragma once

#include "unwind/backtrace.h"

namespace coroner {

// Fills args and locals of every frame of `bt` that has DWARF. Reads only
// what the locations name: a few stack words, the strings pointed at.
void ReadFrameVariables(Backtrace& bt, const ModuleMap& modules, StackMemory& memory);

}  // namespace coroner
