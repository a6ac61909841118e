// Errors as values for every layer of coroner.
//
// A parse of untrusted input either yields a value or an Error that says what
// kind of failure it was and where (LLVM's Expected<T>, rust-minidump's error
// enums). Exceptions are kept for programming errors and the CLI edge.
// std::expected is C++23; this is the small subset coroner needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace coroner {

enum class ErrorKind {
  kIo,           // the storage could not be read (open, pread, decompression)
  kNotElf,       // the bytes are not an ELF file at all
  kUnsupported,  // a valid ELF file coroner does not read (32-bit, another machine, not a core)
  kMalformed,    // structure that contradicts itself or the format
  kTruncated,    // the structure needed is beyond the bytes that are present
  kDenied,       // the input may not be read by this user (a live process: ptrace's rules)
};

// The kind as the dataset's `error` column and the JSON spell it: "io", "not-elf", ...
const char* ErrorKindName(ErrorKind kind);
std::optional<ErrorKind> ErrorKindFromName(std::string_view name);

struct Error {
  ErrorKind kind;
  std::string message;  // one line, says what was expected and where
};

// Callers must look at what they got: an error dropped on the floor is a
// lost row or a silently partial answer.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// "Nothing, or an error": what a step with no value returns.
struct Ok {};
using Status = Expected<Ok>;

inline Error MakeError(ErrorKind kind, std::string message) {
  return Error{kind, std::move(message)};
}

}  // namespace coroner
