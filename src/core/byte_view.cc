#include "core/byte_view.h"


namespace coroner {

namespace {
constexpr char kDigits[] = "0123456789abcdef";
}  // namespace

// By hand rather than snprintf: a scan formats several per frame.
std::string Hex(uint64_t v) {
  char buf[18];
  char* p = buf + sizeof buf;
  do {
    *--p = kDigits[v & 15];
    v >>= 4;
  } while (v);
  *--p = 'x';
  *--p = '0';
  return std::string(p, buf + sizeof buf);
}

std::string HexBytes(std::span<const std::byte> bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    auto v = static_cast<unsigned>(b);
    s.push_back(kDigits[v >> 4]);
    s.push_back(kDigits[v & 15]);
  }
  return s;
}

}  // namespace coroner
