#include "base/expected.h"

namespace coroner {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kIo: return "io";
    case ErrorKind::kNotElf: return "not-elf";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kMalformed: return "malformed";
    case ErrorKind::kTruncated: return "truncated";
  }
  return "unknown";
}

}  // namespace coroner
