// gdb's text for a frame variable's value (unwind/value.h): decimal
// integers, `66 'B'`, `0x... "text"`, `0x... <symbol+8>`, `{x = 3, y = -4}`,
// enumerator names, with gdb's default print settings: `print elements`
// 200 (characters of a string, elements of an array), runs longer than
// `print repeats` 10 folded into `<repeats N times>`.
#pragma once

#include <string>

#include "unwind/value.h"

namespace coroner {

std::string PrintValue(const Value& value);

}  // namespace coroner
