// PrefixSource: `--max-bytes N`, as if only the first N bytes had arrived.
#include <algorithm>

#include "source/byte_source.h"

namespace coroner {
namespace {

class PrefixSource final : public ByteSource {
 public:
  PrefixSource(std::unique_ptr<ByteSource> inner, uint64_t limit)
      : inner_(std::move(inner)), limit_(limit) {}

  Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) override {
    if (offset >= limit_) return size_t{0};
    uint64_t room = limit_ - offset;
    if (out.size() > room) out = out.first(static_cast<size_t>(room));
    return inner_->ReadUpTo(offset, out);
  }
  std::optional<uint64_t> Size() const override {
    auto s = inner_->Size();
    if (!s) return std::nullopt;
    return std::min(*s, limit_);
  }
  uint64_t BytesRead() const override { return inner_->BytesRead(); }
  uint64_t BytesDecoded() const override { return inner_->BytesDecoded(); }
  bool Rereads(uint64_t offset, uint64_t size) const override { return inner_->Rereads(offset, size); }
  void Retain(std::span<const std::pair<uint64_t, uint64_t>> ranges) override { inner_->Retain(ranges); }
  void RetainIfRoom(std::span<const std::pair<uint64_t, uint64_t>> ranges) override { inner_->RetainIfRoom(ranges); }
  std::vector<SourceProblem> Problems() const override { return inner_->Problems(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  uint64_t limit_;
};

}  // namespace

std::unique_ptr<ByteSource> MakePrefixSource(std::unique_ptr<ByteSource> inner, uint64_t limit) {
  return std::make_unique<PrefixSource>(std::move(inner), limit);
}

}  // namespace coroner
