#include "core/byte_view.h"

#include <utility>


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

namespace {
thread_local const HiddenWordsScope* current_scope = nullptr;
}  // namespace

HiddenWordsScope::HiddenWordsScope(std::function<bool(uint64_t)> hides)
    : hides_(std::move(hides)), outer_(current_scope) {
  current_scope = this;
}

HiddenWordsScope::~HiddenWordsScope() { current_scope = outer_; }

bool WordHidden(uint64_t v) {
  for (const HiddenWordsScope* s = current_scope; s; s = s->outer_)
    if (s->hides_ && s->hides_(v)) return true;
  return false;
}

std::string ShownWord(uint64_t v, int digits) {
  if (WordHidden(v)) return std::string(kHiddenEnvironment);
  std::string hex = Hex(v);
  if (static_cast<int>(hex.size()) - 2 < digits) hex.insert(2, static_cast<size_t>(digits) - (hex.size() - 2), '0');
  return hex;
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
