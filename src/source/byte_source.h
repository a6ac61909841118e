// ByteSource: the one way coroner reads bytes of a core.
//
// Every layer above reads a core through ReadUpTo(offset, buffer), so nothing
// assumes the whole core is present or local: a file, a prefix of one (as if
// only the first N bytes had been downloaded), a compressed stream or a remote
// range reader all look the same. Each source counts the bytes it took from
// its underlying storage, which is what `bytes_read` in the output reports.
//
// Implementations: FileSource (pread), PrefixSource (a bound on another
// source), CompressedSource (zstd / lz4 / xz decoded as a stream),
// HttpSource (HTTP Range requests).
// A source is used from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace coroner {

// Something a read met below the interface that its caller may have taken
// for "no bytes there": a storage read that failed (a remote server that
// stopped serving ranges, an I/O error), a compressed stream that ends inside
// a frame (a cut file), reads refused because the decode budget was spent.
// Analysis reports these as missing data, so a partial answer never passes
// for a complete one.
struct SourceProblem {
  enum class Kind {
    kFailed,  // the storage failed: the same read may succeed another time
    kCut,     // the data ends before its own structure says it does
    kBudget,  // a bound on the work for one core was reached
    kCorrupt, // the data is corrupt (a decoder's error): nothing past it can be read
  };
  Kind kind;
  std::string what;  // one line
};

// The problems one source met, each kept once (a failing read is often
// asked again), at most 16.
class ProblemLog {
 public:
  void Add(SourceProblem::Kind kind, std::string what);
  const std::vector<SourceProblem>& problems() const { return problems_; }
  // These problems after `inner`'s, for a source that reads through another.
  std::vector<SourceProblem> After(const std::vector<SourceProblem>& inner) const;

 private:
  std::vector<SourceProblem> problems_;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;

  // Reads up to out.size() bytes at offset. Returns how many were read; fewer
  // than asked (possibly 0) means the data ends there. An Error means the
  // storage failed, not that the offset is out of range.
  virtual Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) = 0;

  // The total size when known without reading everything (a compressed stream
  // knows it only once decoded to the end).
  virtual std::optional<uint64_t> Size() const = 0;

  // Bytes taken from the underlying storage so far (compressed bytes for a
  // compressed source).
  virtual uint64_t BytesRead() const = 0;

  // The problems met so far, this source's and those of the sources it reads
  // through; each is recorded once.
  virtual std::vector<SourceProblem> Problems() const { return {}; }

  // A hint: these byte ranges ([begin, end)) will be read later, in any
  // order. A stream that decodes keeps them as it decodes past them (within
  // a bound), so that reading them later does not decode the stream again.
  virtual void Retain(std::span<const std::pair<uint64_t, uint64_t>> ranges) { (void)ranges; }
  // The same for bytes that are worth keeping but not needed (an
  // interpreter's heap, for its stacks): kept within a bound of their own,
  // so that they never take the room of what Retain() named.
  virtual void RetainIfRoom(std::span<const std::pair<uint64_t, uint64_t>> ranges) { (void)ranges; }
  // Bytes a decoding source has produced, restarts included; 0 for a source
  // that does not decode. What reading a compressed core cost.
  virtual uint64_t BytesDecoded() const { return 0; }
  // True when reading [offset, offset + size) would decode the stream again
  // from its start (the bytes lie behind what it holds): a reader whose
  // bytes are optional (the Python stacks) leaves them rather than pay a
  // whole decode. False for a source that does not decode.
  virtual bool Rereads(uint64_t offset, uint64_t size) const {
    (void)offset, (void)size;
    return false;
  }

  // Reads a trivially copyable value; nullopt when the bytes are not there
  // (or the storage failed: callers that must tell the two apart use ReadUpTo).
  template <typename T>
  std::optional<T> Read(uint64_t offset) {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    auto n = ReadUpTo(offset, std::as_writable_bytes(std::span<T, 1>(&value, 1)));
    if (!n.ok() || *n != sizeof(T)) return std::nullopt;
    return value;
  }
};

// Opens a local file for pread. Never maps or reads the whole file.
Expected<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path);

// Bytes already in memory (a synthesized core in a test, a fuzzer's input).
std::unique_ptr<ByteSource> MakeMemorySource(std::vector<std::byte> bytes);

// Behaves as if only the first `limit` bytes of `inner` existed.
std::unique_ptr<ByteSource> MakePrefixSource(std::unique_ptr<ByteSource> inner, uint64_t limit);

enum class Compression { kNone, kZstd, kLz4, kXz };
const char* CompressionName(Compression c);

// Recognizes a compressed stream by the magic bytes at its head (not by file name).
Compression DetectCompression(std::span<const std::byte> head);

// Decodes `inner` as a stream. Forward reads decode on; a read behind the
// cached window restarts decoding from the beginning. Memory is bounded by
// the cache and the decoder's window, never by the core's size.
Expected<std::unique_ptr<ByteSource>> MakeCompressedSource(std::unique_ptr<ByteSource> inner,
                                                           Compression compression);

// What a remote server says about the file behind a URL.
struct RemoteFileInfo {
  std::optional<uint64_t> size;
  std::optional<int64_t> mtime_ns;  // Last-Modified, when sent
  long http_status = 0;  // the server's last answer (404: no such file), also when opening failed
};

struct HttpOptions {
  int attempts = 5;           // per request, with exponential backoff between them
  int backoff_ms = 100;       // before the second attempt; doubles after each
  int connect_timeout_ms = 10000;
  int stall_seconds = 20;     // a transfer under 1 byte/s for this long fails the attempt
  uint64_t first_fetch = 64 * 1024;  // bytes fetched on open (at least 1)
  // All requests for one core together, retries and backoff included: a
  // server that trickles bytes (never stalling outright) cannot keep one
  // core's analysis busy for longer.
  int total_seconds = 120;
};

// The options every remote read uses: the defaults, with total_seconds from
// CORONER_HTTP_SECONDS when it is set to a positive number.
HttpOptions DefaultHttpOptions();

// True for http:// and https:// inputs.
bool IsUrl(const std::string& input);

// Reads a remote file with HTTP Range requests. Fetches the first
// options.first_fetch bytes at once (the size comes with them); fails when
// the server cannot serve ranges. `info` is filled when opening fails too.
Expected<std::unique_ptr<ByteSource>> OpenHttpSource(const std::string& url, const HttpOptions& options,
                                                     RemoteFileInfo* info = nullptr);

// Opens a core the way the CLI does: the file (or URL), bounded to max_bytes
// when given (applied to the stored bytes, i.e. before decompression), and
// decompressed when its magic says so.
Expected<std::unique_ptr<ByteSource>> OpenCoreSource(const std::string& path,
                                                     std::optional<uint64_t> max_bytes,
                                                     RemoteFileInfo* remote = nullptr);

}  // namespace coroner
