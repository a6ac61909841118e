// Value: a frame variable's value as read from the core and typed by its
// DWARF, before anyone prints it. The reader (frame_variables.cc) builds it;
// report/value_printer.h prints it as gdb does (`print elements`, repeats
// folded). Keeping the two apart lets a caller test what was read without
// parsing gdb's text, and lets the printer's limits change without reading
// the core again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coroner {

// Bytes of a string read behind a char pointer: as many characters as gdb's
// `print elements` shows, so what is read is what can be printed.
constexpr size_t kStringBytesRead = 200;

struct Value {
  enum class Kind : uint8_t {
    kOptimizedOut,  // no location at the frame's pc (gdb's <optimized out>)
    kSigned,        // bits: the two's complement of the sign-extended number
    kUnsigned,
    kBool,          // bits: 0 or 1 (another number is kUnsigned)
    kChar,          // a one-byte character type; bits: its number, sign-extended when signed
    kFloat,         // bits: the IEEE single's 32 bits
    kDouble,        // bits: the IEEE double's 64 bits
    kPointer,       // bits: the address; text: the symbol there, offset: the address's offset in it;
                    // children: the string it points at (kChars) or kUnreadable, for a char pointer
    kReference,     // bits: the address referred to
    kEnumerator,    // text: the enumerator's name (an unnamed number is kSigned)
    kStruct,        // children: members, each with its name ("<Base>" for a base class)
    kArray,         // children: the elements
    kChars,         // text: the characters (a char array without its one terminating NUL, or a
                    // string read behind a pointer); truncated: there were more than were read
    kUnreadable,    // bits: the address whose memory the core does not hold
    kTooDeep,       // nested deeper than gdb's `print max-depth` (gdb's {...})
    kHidden,        // a string that lies in, or holds, a hidden environment variable
                    // (processor/process_identity.h: HideEnvironmentSecrets)
  };
  Kind kind = Kind::kOptimizedOut;
  bool truncated = false;
  uint64_t bits = 0;
  uint64_t offset = 0;
  std::string name;  // a struct member's name; empty elsewhere
  std::string text;
  std::vector<Value> children;
};

}  // namespace coroner
