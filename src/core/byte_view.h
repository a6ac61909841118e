// ByteView: bounds-checked reads of fixed-size fields from a buffer of
// untrusted bytes (a note's descriptor, a header). Every accessor checks the
// offset and size against the buffer, including overflow, and says nullopt
// instead of reading past it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace coroner {

class ByteView {
 public:
  ByteView() = default;
  explicit ByteView(std::span<const std::byte> data) : data_(data) {}

  size_t size() const { return data_.size(); }
  std::span<const std::byte> bytes() const { return data_; }

  bool Has(size_t offset, size_t len) const {
    return offset <= data_.size() && len <= data_.size() - offset;
  }

  template <typename T>
  std::optional<T> At(size_t offset) const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!Has(offset, sizeof(T))) return std::nullopt;
    T value;
    std::memcpy(&value, data_.data() + offset, sizeof(T));
    return value;
  }

  // Like At() for a field the caller has already shown to be in range.
  template <typename T>
  T AtOr(size_t offset, T fallback) const {
    return At<T>(offset).value_or(fallback);
  }

  std::optional<ByteView> Sub(size_t offset, size_t len) const {
    if (!Has(offset, len)) return std::nullopt;
    return ByteView(data_.subspan(offset, len));
  }

  // A fixed-size char field: up to the first NUL or the field's end.
  std::string FixedString(size_t offset, size_t len) const {
    if (!Has(offset, len)) return {};
    const char* p = reinterpret_cast<const char*>(data_.data() + offset);
    size_t n = strnlen(p, len);
    return std::string(p, n);
  }

 private:
  std::span<const std::byte> data_;
};

// a + b, or nullopt when it overflows.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline uint64_t AlignUp4(uint64_t v) { return (v + 3) & ~uint64_t{3}; }

std::string Hex(uint64_t v);  // "0x1a2b"
std::string HexBytes(std::span<const std::byte> bytes);  // "1a2b..."

// What stands for a text or a word of the program's that holds a hidden
// environment variable (processor/process_identity.h).
inline constexpr std::string_view kHiddenEnvironment = "<hidden: environment>";

// While one core's outputs are written (its reports, its dataset row), the
// words whose bytes are a hidden variable's: a return address a string
// overflow wrote, a register in the middle of a copy. Installed for a scope
// on the writing thread; scopes nest. None by default.
class HiddenWordsScope {
 public:
  explicit HiddenWordsScope(std::function<bool(uint64_t)> hides);
  ~HiddenWordsScope();
  HiddenWordsScope(const HiddenWordsScope&) = delete;
  HiddenWordsScope& operator=(const HiddenWordsScope&) = delete;

 private:
  std::function<bool(uint64_t)> hides_;
  const HiddenWordsScope* outer_;
  friend bool WordHidden(uint64_t v);
};
bool WordHidden(uint64_t v);
// A register, an address or a stack word as an output shows it: Hex (with
// `digits` hex digits at least, "0x" aside), or kHiddenEnvironment.
std::string ShownWord(uint64_t v, int digits = 0);

}  // namespace coroner
