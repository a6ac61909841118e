#include "base/expected.h"

namespace coroner {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kIo: return "io";
    case ErrorKind::kNotElf: return "not-elf";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kMalformed: return "malformed";
    case ErrorKind::kTruncated: return "truncated";
    case ErrorKind::kDenied: return "denied";
  }
  return "unknown";
}

std::optional<ErrorKind> ErrorKindFromName(std::string_view name) {
  for (ErrorKind k : {ErrorKind::kIo, ErrorKind::kNotElf, ErrorKind::kUnsupported, ErrorKind::kMalformed,
                      ErrorKind::kTruncated, ErrorKind::kDenied})
    if (name == ErrorKindName(k)) return k;
  return std::nullopt;
}

}  // namespace coroner
