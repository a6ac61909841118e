#include "source/byte_source.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace coroner {
namespace {

// Keeps the first bytes of a source, read once, so that sniffing the format
// (compression magic, then the ELF header) does not read them twice.
class HeadCachedSource final : public ByteSource {
 public:
  HeadCachedSource(std::unique_ptr<ByteSource> inner, std::vector<std::byte> head)
      : inner_(std::move(inner)), head_(std::move(head)) {}

  Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) override {
    size_t done = 0;
    if (out.empty()) return done;  // an empty span's data() may be null: no memcpy from it
    if (offset < head_.size()) {
      done = std::min(out.size(), head_.size() - static_cast<size_t>(offset));
      std::memcpy(out.data(), head_.data() + offset, done);
      if (done == out.size() || head_.size() < kHeadSize) return done;  // head is all there is
    }
    auto n = inner_->ReadUpTo(offset + done, out.subspan(done));
    if (!n.ok()) return n.error();
    return done + *n;
  }
  std::optional<uint64_t> Size() const override { return inner_->Size(); }
  uint64_t BytesRead() const override { return inner_->BytesRead(); }
  uint64_t BytesDecoded() const override { return inner_->BytesDecoded(); }
  bool Rereads(uint64_t offset, uint64_t size) const override { return inner_->Rereads(offset, size); }
  void Retain(std::span<const std::pair<uint64_t, uint64_t>> ranges) override { inner_->Retain(ranges); }
  void RetainIfRoom(std::span<const std::pair<uint64_t, uint64_t>> ranges) override { inner_->RetainIfRoom(ranges); }
  std::vector<SourceProblem> Problems() const override { return inner_->Problems(); }

  static constexpr size_t kHeadSize = 64;  // an Elf64_Ehdr

 private:
  std::unique_ptr<ByteSource> inner_;
  std::vector<std::byte> head_;
};

}  // namespace

void ProblemLog::Add(SourceProblem::Kind kind, std::string what) {
  if (problems_.size() >= 16) return;
  for (const auto& p : problems_)
    if (p.kind == kind && p.what == what) return;
  problems_.push_back({kind, std::move(what)});
}

std::vector<SourceProblem> ProblemLog::After(const std::vector<SourceProblem>& inner) const {
  std::vector<SourceProblem> all = inner;
  all.insert(all.end(), problems_.begin(), problems_.end());
  return all;
}

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kZstd: return "zstd";
    case Compression::kLz4: return "lz4";
    case Compression::kXz: return "xz";
  }
  return "unknown";
}

Compression DetectCompression(std::span<const std::byte> head) {
  std::array<unsigned char, 6> m{};
  size_t got = std::min(head.size(), m.size());
  std::memcpy(m.data(), head.data(), got);
  if (got < 4) return Compression::kNone;
  if (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) return Compression::kZstd;
  if (m[0] == 0x04 && m[1] == 0x22 && m[2] == 0x4d && m[3] == 0x18) return Compression::kLz4;
  if (got == 6 && m[0] == 0xfd && m[1] == '7' && m[2] == 'z' && m[3] == 'X' && m[4] == 'Z' &&
      m[5] == 0) {
    return Compression::kXz;
  }
  return Compression::kNone;
}

HttpOptions DefaultHttpOptions() {
  HttpOptions o;
  if (const char* s = std::getenv("CORONER_HTTP_SECONDS")) {
    int seconds = std::atoi(s);
    if (seconds > 0) o.total_seconds = seconds;
  }
  return o;
}

Expected<std::unique_ptr<ByteSource>> OpenCoreSource(const std::string& path,
                                                     std::optional<uint64_t> max_bytes,
                                                     RemoteFileInfo* remote) {
  auto file = IsUrl(path) ? OpenHttpSource(path, DefaultHttpOptions(), remote) : OpenFileSource(path);
  if (!file.ok()) return file.error();
  std::unique_ptr<ByteSource> source = std::move(*file);
  if (max_bytes) source = MakePrefixSource(std::move(source), *max_bytes);
  std::vector<std::byte> head(HeadCachedSource::kHeadSize);
  auto n = source->ReadUpTo(0, head);
  if (!n.ok()) return n.error();
  head.resize(*n);
  Compression c = DetectCompression(head);
  source = std::make_unique<HeadCachedSource>(std::move(source), std::move(head));
  if (c == Compression::kNone) return source;
  return MakeCompressedSource(std::move(source), c);
}

}  // namespace coroner
