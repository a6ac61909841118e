#include "python/location_table.h"

namespace coroner {
namespace {

// Reads the table byte by byte; every read past the end fails the lookup.
class TableReader {
 public:
  explicit TableReader(std::span<const uint8_t> t) : t_(t) {}
  bool done() const { return at_ >= t_.size(); }
  std::optional<uint8_t> Byte() {
    if (at_ >= t_.size()) return std::nullopt;
    return t_[at_++];
  }
  // An unsigned varint: 6 bits per byte, low first, bit 6 set on all but the last.
  std::optional<uint64_t> Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 6) {
      auto b = Byte();
      if (!b) return std::nullopt;
      v |= static_cast<uint64_t>(*b & 0x3f) << shift;
      if (!(*b & 0x40)) return v;
    }
    return std::nullopt;  // longer than any real value
  }
  // A signed varint: the sign in the lowest bit.
  std::optional<int64_t> SignedVarint() {
    auto v = Varint();
    if (!v) return std::nullopt;
    int64_t magnitude = static_cast<int64_t>(*v >> 1);
    return (*v & 1) ? -magnitude : magnitude;
  }
  // Skips the bytes up to the next entry's first byte (bit 7 set).
  void SkipToEntry() {
    while (at_ < t_.size() && !(t_[at_] & 0x80)) ++at_;
  }

 private:
  std::span<const uint8_t> t_;
  size_t at_ = 0;
};

}  // namespace

std::optional<int> LineOfInstruction(std::span<const uint8_t> table, int first_line, uint64_t unit,
                                     bool* ran_out) {
  if (ran_out) *ran_out = false;
  auto out_of_table = [&] {
    if (ran_out) *ran_out = true;
    return std::nullopt;
  };
  TableReader r(table);
  int64_t line = first_line;
  // Deltas from a hostile table can run the line past any real one (and
  // past int64): once it leaves +-2^40 it is lost for good, and the lookup
  // finds no line.
  bool lost = false;
  auto add = [&](int64_t delta) {
    constexpr int64_t kFar = int64_t{1} << 40;
    if (lost || delta > kFar || delta < -kFar) {
      lost = true;
      return;
    }
    line += delta;
    if (line > kFar || line < -kFar) lost = true;
  };
  uint64_t start = 0;
  while (!r.done()) {
    auto head = r.Byte();
    if (!head || !(*head & 0x80)) return std::nullopt;  // not at an entry: damaged
    int code = (*head >> 3) & 0x0f;
    uint64_t end = start + (*head & 0x07) + 1;
    bool has_line = true;
    if (code == 15) {
      has_line = false;  // no location
    } else if (code == 14) {
      auto delta = r.SignedVarint();  // long form: line delta, end line, columns
      if (!delta) return out_of_table();
      add(*delta);
    } else if (code == 13) {
      auto delta = r.SignedVarint();  // no column
      if (!delta) return out_of_table();
      add(*delta);
    } else if (code >= 10) {
      add(code - 10);  // one-line forms: the delta in the code, two column bytes
    }
    // Short forms (0-9) keep the line; their column bytes, like the rest
    // of the long and one-line forms, are skipped.
    r.SkipToEntry();
    // The entry's last bytes may lie past a span that is a prefix.
    if (r.done() && unit >= end) return out_of_table();
    if (unit >= start && unit < end) {
      if (!has_line || lost || line <= 0 || line > INT32_MAX) return std::nullopt;
      return static_cast<int>(line);
    }
    start = end;
  }
  return out_of_table();
}

}  // namespace coroner
