// MemorySource: bytes already in memory.
#include <algorithm>
#include <cstring>

#include "source/byte_source.h"

namespace coroner {
namespace {

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) override {
    if (offset >= bytes_.size() || out.empty()) return size_t{0};
    size_t n = std::min(out.size(), bytes_.size() - static_cast<size_t>(offset));
    std::memcpy(out.data(), bytes_.data() + offset, n);
    read_ += n;
    return n;
  }
  std::optional<uint64_t> Size() const override { return bytes_.size(); }
  uint64_t BytesRead() const override { return read_; }

 private:
  std::vector<std::byte> bytes_;
  uint64_t read_ = 0;
};

}  // namespace

std::unique_ptr<ByteSource> MakeMemorySource(std::vector<std::byte> bytes) {
  return std::make_unique<MemorySource>(std::move(bytes));
}

}  // namespace coroner
