// CompressedSource: a zstd, lz4 (frame format) or xz core, as systemd-coredump
// writes them, decoded as a stream.
//
// Decoded bytes are kept in a bounded cache of fixed-size blocks. Reads that go
// forward decode on; a read of a block that has left the cache restarts the
// decoder from the beginning (the formats give no random access), within a
// budget of decoding per source. Input that ends inside a frame (a prefix, a
// cut download) is the end of the data, like a truncated core, and is
// recorded as a problem of the source; corrupt input is an Error.
#include <lz4frame.h>
#include <lzma.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "source/byte_source.h"

namespace coroner {
namespace {

// Decoded blocks are written whole by the decoder: growing one must not
// zero it first (that was a memset of every decoded byte).
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Bytes = std::vector<std::byte, UninitializedAllocator<std::byte>>;

constexpr size_t kBlockSize = 64 * 1024;
constexpr size_t kMaxCachedBlocks = 256;  // 16 MiB of decoded data
// Blocks kept because Retain() said they will be read (stacks, module
// headers): 64 MiB of decoded data at most, beside the window above. Blocks
// of zeros cost a bit each, so the plan may name many more blocks than are
// kept: a 200-thread process's plan names some 1,400 blocks, most of them
// zeros, and a cap on the plan itself left the last threads' stacks to a
// second decoding of the whole stream.
constexpr size_t kMaxRetainedBlocks = 1024;
constexpr size_t kMaxWantedBlocks = 1 << 18;  // 16 GiB of plan; the set stays near 10 MiB
// Blocks kept because RetainIfRoom() named them (an interpreter's heap and
// arenas), beside the above: 96 MiB at most (a PyTorch process's brk heap
// alone is some 65 MiB).
constexpr size_t kMaxOptionalBlocks = 1536;
constexpr size_t kInputChunk = 64 * 1024;
// Reads behind the cached window restart decoding from the start. All the
// decoding for one core together stops at three passes over the furthest
// point read plus 4 GiB (a small core's analysis restarts often, each restart
// cheap): a hostile order of reads (far-apart segments read back to front)
// would otherwise decode a small file's huge stream once per read. Reads past
// the budget get no bytes, and the source says so in its problems.
constexpr uint64_t kDecodePasses = 3;
constexpr uint64_t kDecodeSlack = 4ull << 30;

// One step of a streaming decoder. Step() consumes from `in` and produces into
// `out`; it reports the end of the stream by setting `ended`, and whether the
// decoder stands between frames (all it was given decoded and flushed) by
// `boundary`: input that runs out anywhere else was cut.
class StreamDecoder {
 public:
  virtual ~StreamDecoder() = default;
  virtual Status Reset() = 0;
  virtual Status Step(std::span<const std::byte> in, size_t& consumed,
                              std::span<std::byte> out, size_t& produced, bool& ended, bool& boundary) = 0;
};

class ZstdDecoder final : public StreamDecoder {
 public:
  ZstdDecoder() : ctx_(ZSTD_createDCtx()) {}
  ~ZstdDecoder() override { ZSTD_freeDCtx(ctx_); }
  Status Reset() override {
    if (!ctx_) return MakeError(ErrorKind::kIo, "zstd: out of memory");
    ZSTD_DCtx_reset(ctx_, ZSTD_reset_session_and_parameters);
    // Bound the window a hostile frame may ask for (128 MiB, zstd's default cap).
    ZSTD_DCtx_setParameter(ctx_, ZSTD_d_windowLogMax, 27);
    return Ok{};
  }
  Status Step(std::span<const std::byte> in, size_t& consumed, std::span<std::byte> out,
                      size_t& produced, bool& ended, bool& boundary) override {
    ZSTD_inBuffer ib{in.data(), in.size(), 0};
    ZSTD_outBuffer ob{out.data(), out.size(), 0};
    size_t r = ZSTD_decompressStream(ctx_, &ob, &ib);
    if (ZSTD_isError(r)) return MakeError(ErrorKind::kIo, std::string("zstd: ") + ZSTD_getErrorName(r));
    consumed = ib.pos;
    produced = ob.pos;
    boundary = r == 0;  // a frame decoded and flushed whole
    // A frame may be followed by another (concatenated frames): the stream
    // ends only with the input.
    ended = false;
    return Ok{};
  }

 private:
  ZSTD_DCtx* ctx_;
};

class Lz4Decoder final : public StreamDecoder {
 public:
  Lz4Decoder() { LZ4F_createDecompressionContext(&ctx_, LZ4F_VERSION); }
  ~Lz4Decoder() override { LZ4F_freeDecompressionContext(ctx_); }
  Status Reset() override {
    if (!ctx_) return MakeError(ErrorKind::kIo, "lz4: out of memory");
    LZ4F_resetDecompressionContext(ctx_);
    return Ok{};
  }
  Status Step(std::span<const std::byte> in, size_t& consumed, std::span<std::byte> out,
                      size_t& produced, bool& ended, bool& boundary) override {
    size_t src = in.size(), dst = out.size();
    size_t r = LZ4F_decompress(ctx_, out.data(), &dst, in.data(), &src, nullptr);
    if (LZ4F_isError(r)) return MakeError(ErrorKind::kIo, std::string("lz4: ") + LZ4F_getErrorName(r));
    consumed = src;
    produced = dst;
    boundary = r == 0;  // the frame is complete
    ended = false;  // as for zstd, frames may be concatenated
    return Ok{};
  }

 private:
  LZ4F_dctx* ctx_ = nullptr;
};

class XzDecoder final : public StreamDecoder {
 public:
  ~XzDecoder() override { lzma_end(&strm_); }
  Status Reset() override {
    lzma_end(&strm_);
    strm_ = LZMA_STREAM_INIT;
    // 512 MiB bounds the dictionary a hostile header may ask for.
    if (lzma_stream_decoder(&strm_, 512ull << 20, LZMA_CONCATENATED) != LZMA_OK) {
      return MakeError(ErrorKind::kIo, "xz: cannot start decoder");
    }
    return Ok{};
  }
  Status Step(std::span<const std::byte> in, size_t& consumed, std::span<std::byte> out,
                      size_t& produced, bool& ended, bool& boundary) override {
    strm_.next_in = reinterpret_cast<const uint8_t*>(in.data());
    strm_.avail_in = in.size();
    strm_.next_out = reinterpret_cast<uint8_t*>(out.data());
    strm_.avail_out = out.size();
    // LZMA_CONCATENATED needs LZMA_FINISH to know the input is over.
    lzma_ret r = lzma_code(&strm_, in.empty() ? LZMA_FINISH : LZMA_RUN);
    consumed = in.size() - strm_.avail_in;
    produced = out.size() - strm_.avail_out;
    ended = (r == LZMA_STREAM_END);
    boundary = ended;
    if (r != LZMA_OK && r != LZMA_STREAM_END && r != LZMA_BUF_ERROR) {
      return MakeError(ErrorKind::kIo, "xz: corrupt data (lzma error " + std::to_string(r) + ")");
    }
    return Ok{};
  }

 private:
  lzma_stream strm_ = LZMA_STREAM_INIT;
};

class CompressedSource final : public ByteSource {
 public:
  CompressedSource(std::unique_ptr<ByteSource> inner, std::unique_ptr<StreamDecoder> decoder,
                   Compression c)
      : inner_(std::move(inner)), decoder_(std::move(decoder)), compression_(c) {}

  Status Start() {
    auto r = decoder_->Reset();
    if (!r.ok()) return r.error();
    in_offset_ = in_pos_ = in_len_ = 0;
    input_eof_ = false;
    decoded_ = 0;
    ended_ = false;
    boundary_ = false;
    current_.clear();
    return Ok{};
  }

  Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) override {
    size_t done = 0;
    while (done < out.size()) {
      uint64_t pos = offset + done;
      uint64_t block = pos / kBlockSize;
      auto got = Block(block);
      if (!got.ok()) return got.error();
      const Bytes* data = *got;
      size_t in_block = static_cast<size_t>(pos % kBlockSize);
      if (!data || in_block >= data->size()) break;  // past the end of the stream
      size_t n = std::min(out.size() - done, data->size() - in_block);
      std::memcpy(out.data() + done, data->data() + in_block, n);
      done += n;
      if (data->size() < kBlockSize) break;  // the last, short block
    }
    return done;
  }
  std::optional<uint64_t> Size() const override {
    if (ended_) return decoded_;
    return std::nullopt;
  }
  uint64_t BytesRead() const override { return inner_->BytesRead(); }
  uint64_t BytesDecoded() const override { return total_decoded_; }
  bool Rereads(uint64_t offset, uint64_t size) const override {
    for (uint64_t b = offset / kBlockSize; size > 0 && b <= (offset + size - 1) / kBlockSize; ++b) {
      if (b >= decoded_ / kBlockSize) return false;  // ahead: decoding goes on forward
      bool kept = retained_.count(b) || (b < zero_blocks_.size() && zero_blocks_[b]) || cache_.count(b);
      if (!kept) return true;
    }
    return false;
  }

  void Retain(std::span<const std::pair<uint64_t, uint64_t>> ranges) override {
    Want(ranges, wanted_);
    KeepCachedWanted();
  }
  void RetainIfRoom(std::span<const std::pair<uint64_t, uint64_t>> ranges) override {
    Want(ranges, optional_);
    KeepCachedWanted();
  }
  std::vector<SourceProblem> Problems() const override { return problems_.After(inner_->Problems()); }

 private:
  static void Want(std::span<const std::pair<uint64_t, uint64_t>> ranges, std::set<uint64_t>& wanted) {
    for (const auto& [begin, end] : ranges) {
      for (uint64_t b = begin / kBlockSize; begin < end && b <= (end - 1) / kBlockSize; ++b) {
        if (wanted.size() >= kMaxWantedBlocks) return;
        wanted.insert(b);
      }
    }
  }

  // The decoded block `index`, or nullptr when the stream ends before it.
  Expected<const Bytes*> Block(uint64_t index) {
    if (const auto* kept = Kept(index)) return kept;
    if (index < decoded_ / kBlockSize) {  // evicted: decode again from the start
      if (total_decoded_ > kDecodePasses * high_water_ + kDecodeSlack) {
        problems_.Add(SourceProblem::Kind::kBudget,
                      std::string(CompressionName(compression_)) + " stream: reads behind the decoded window were not served (decoding " +
                          std::to_string(total_decoded_) + " bytes for reads up to " + std::to_string(high_water_) +
                          " spent the budget of " + std::to_string(kDecodePasses) + " passes)");
        return static_cast<const Bytes*>(nullptr);
      }
      auto r = Start();
      if (!r.ok()) return r.error();
    }
    while (!ended_ && decoded_ / kBlockSize <= index) {
      auto r = DecodeMore();
      if (!r.ok()) return r.error();
    }
    return Kept(index);
  }

  // The decoded block `index` if it is still held (retained, a block of
  // zeros, or in the window, which it then heads); nullptr otherwise.
  const Bytes* Kept(uint64_t index) {
    if (auto it = retained_.find(index); it != retained_.end()) return &it->second;
    if (index < zero_blocks_.size() && zero_blocks_[index]) return &ZeroBlock();
    if (auto it = cache_.find(index); it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return &it->second.data;
    }
    return nullptr;
  }

  // Decodes until the current block is full or the stream ends.
  Status DecodeMore() {
    if (current_.empty()) current_.reserve(kBlockSize);
    if (in_pos_ == in_len_ && !input_eof_) {
      in_buf_.resize(kInputChunk);
      auto n = inner_->ReadUpTo(in_offset_, in_buf_);
      if (!n.ok()) return n.error();
      in_offset_ += *n;
      in_pos_ = 0;
      in_len_ = *n;
      input_eof_ = (*n == 0);
    }
    size_t room = kBlockSize - current_.size();
    size_t old = current_.size();
    current_.resize(kBlockSize);
    size_t consumed = 0, produced = 0;
    bool ended = false, boundary = false;
    auto r = decoder_->Step(std::span(in_buf_).subspan(in_pos_, in_len_ - in_pos_), consumed,
                            std::span(current_).subspan(old, room), produced, ended, boundary);
    current_.resize(old + (r.ok() ? produced : 0));
    if (!r.ok()) {
      // Reads that meet it get no bytes: the core must say why, not pass
      // for one whose memory is merely absent.
      problems_.Add(SourceProblem::Kind::kCorrupt, r.error().message + " (after " + std::to_string(decoded_) +
                                                       " bytes decoded)");
      return r.error();
    }
    in_pos_ += consumed;
    decoded_ += produced;
    total_decoded_ += produced;
    high_water_ = std::max(high_water_, decoded_);
    // A step that did nothing tells nothing of where the decoder stands.
    if (consumed != 0 || produced != 0 || ended) boundary_ = boundary;
    // Input exhausted and the decoder makes no progress: the data ends here,
    // and it was cut unless the decoder stands between frames.
    if (input_eof_ && in_pos_ == in_len_ && produced == 0 && !ended) {
      ended = true;
      if (!boundary_) {
        problems_.Add(SourceProblem::Kind::kCut,
                      std::string(CompressionName(compression_)) + " stream cut: the compressed data ends inside a frame after " +
                          std::to_string(in_offset_) + " bytes (" + std::to_string(decoded_) + " bytes decoded)");
      }
    }
    if (consumed == 0 && produced == 0 && in_pos_ < in_len_ && ++stalls_ > 4) {
      std::string what = std::string(CompressionName(compression_)) + ": decoder makes no progress at compressed offset " +
                         std::to_string(in_offset_ - in_len_ + in_pos_);
      problems_.Add(SourceProblem::Kind::kCorrupt, what);
      return MakeError(ErrorKind::kIo, what);
    }
    if (consumed != 0 || produced != 0) stalls_ = 0;
    if (ended) ended_ = true;
    if (current_.size() == kBlockSize || ended_) {
      uint64_t index = (decoded_ - current_.size()) / kBlockSize;
      Insert(index, std::move(current_));
      current_ = {};
    }
    return Ok{};
  }

  // A core is mostly zeros (untouched pages of big mappings): a full block
  // of zeros is remembered by one bit and served again without decoding.
  // Words ORed a page at a time, which the compiler vectorizes: a byte loop
  // with an early exit ran at a byte a cycle and cost more than the decoding
  // itself on a core of mostly untouched memory (59% of the CPU on a
  // 100 GiB core's .zst).
  static bool AllZero(const Bytes& data) {
    if (data.size() != kBlockSize) return false;
    constexpr size_t kPage = 4096;
    for (size_t page = 0; page < kBlockSize; page += kPage) {
      uint64_t any = 0;
      for (size_t i = 0; i < kPage; i += sizeof(uint64_t)) {
        uint64_t word;
        std::memcpy(&word, data.data() + page + i, sizeof word);
        any |= word;
      }
      if (any != 0) return false;
    }
    return true;
  }
  static const Bytes& ZeroBlock() {
    static const Bytes zeros(kBlockSize, std::byte{0});
    return zeros;
  }

  // Blocks decoded before the plan named them (a core without NT_FILE is
  // read through its dynamic linker's list, in memory, before the plan can
  // be made) move from the window to the kept blocks, as Insert would have
  // put them, rather than leave with the window.
  void KeepCachedWanted() {
    for (auto it = cache_.begin(); it != cache_.end();) {
      uint64_t index = it->first;
      bool wanted = wanted_.count(index) && retained_.size() - optional_retained_ < kMaxRetainedBlocks;
      bool optional = !wanted && optional_.count(index) && optional_retained_ < kMaxOptionalBlocks && !retained_.count(index);
      if (!wanted && !optional) {
        ++it;
        continue;
      }
      retained_.insert_or_assign(index, std::move(it->second.data));
      optional_retained_ += optional;
      lru_.erase(it->second.lru);
      it = cache_.erase(it);
    }
  }

  void Insert(uint64_t index, Bytes data) {
    if (AllZero(data)) {
      if (zero_blocks_.size() <= index) zero_blocks_.resize(index + 1);
      zero_blocks_[index] = true;
      return;
    }
    if (wanted_.count(index) && retained_.size() - optional_retained_ < kMaxRetainedBlocks) {
      retained_.insert_or_assign(index, std::move(data));
      return;
    }
    if (optional_.count(index) && optional_retained_ < kMaxOptionalBlocks && !retained_.count(index)) {
      retained_.emplace(index, std::move(data));
      ++optional_retained_;
      return;
    }
    if (cache_.size() >= kMaxCachedBlocks) {
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(index);
    cache_.emplace(index, Entry{std::move(data), lru_.begin()});
  }

  struct Entry {
    Bytes data;
    std::list<uint64_t>::iterator lru;
  };

  std::unique_ptr<ByteSource> inner_;
  std::unique_ptr<StreamDecoder> decoder_;
  Compression compression_;
  std::vector<std::byte> in_buf_;
  uint64_t in_offset_ = 0;
  size_t in_pos_ = 0, in_len_ = 0;
  bool input_eof_ = false;
  uint64_t decoded_ = 0;  // bytes of output produced since the last Start()
  uint64_t total_decoded_ = 0;  // since the source was made, restarts included
  uint64_t high_water_ = 0;     // the furthest decoded_ reached
  bool ended_ = false;
  bool boundary_ = false;  // the last step that did something ended between frames
  ProblemLog problems_;
  int stalls_ = 0;
  Bytes current_;  // the block being filled
  std::unordered_map<uint64_t, Entry> cache_;
  std::list<uint64_t> lru_;
  std::set<uint64_t> wanted_;                                  // blocks Retain() asked for
  std::set<uint64_t> optional_;                                // blocks RetainIfRoom() asked for
  size_t optional_retained_ = 0;                               // of retained_, those kept for optional_
  std::unordered_map<uint64_t, Bytes> retained_;  // those decoded so far
  std::vector<bool> zero_blocks_;  // by block index: decoded, and all zeros
};

}  // namespace

Expected<std::unique_ptr<ByteSource>> MakeCompressedSource(std::unique_ptr<ByteSource> inner,
                                                           Compression compression) {
  std::unique_ptr<StreamDecoder> decoder;
  switch (compression) {
    case Compression::kZstd: decoder = std::make_unique<ZstdDecoder>(); break;
    case Compression::kLz4: decoder = std::make_unique<Lz4Decoder>(); break;
    case Compression::kXz: decoder = std::make_unique<XzDecoder>(); break;
    case Compression::kNone: return inner;
  }
  auto source = std::make_unique<CompressedSource>(std::move(inner), std::move(decoder), compression);
  auto r = source->Start();
  if (!r.ok()) return r.error();
  return std::unique_ptr<ByteSource>(std::move(source));
}

}  // namespace coroner
