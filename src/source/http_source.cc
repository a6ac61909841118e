// HttpSource: a remote core read with HTTP Range requests (libcurl).
//
// Object stores hand out presigned HTTPS URLs (S3, Azure SAS, GCS signed
// URLs), so one range reader covers them all. Reads are served from a small
// cache of fixed-size blocks; the blocks a read needs that are not cached are
// fetched together in one request, so the many small reads of the note
// parser and the unwinder become a few ranges. A failed request (5xx, 429, a
// connection refused or cut mid-body, a response that does not match the
// range asked for) is retried with exponential backoff; after the last
// attempt the read fails with an Error, never with wrong bytes.
#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <list>
#include <map>
#include <thread>

#include "source/byte_source.h"
#include "source/shared_library.h"

namespace coroner {
namespace {

constexpr uint64_t kBlock = 16 * 1024;
constexpr size_t kMaxCachedBlocks = 256;     // 4 MiB
constexpr uint64_t kMaxFetch = 1024 * 1024;  // one request never asks for more

// libcurl's functions, loaded on the first URL (source/shared_library.h).
struct CurlApi {
  CurlApi() : lib("libcurl.so.4") {
    lib.Get("curl_global_init", global_init);
    lib.Get("curl_easy_init", easy_init);
    lib.Get("curl_easy_cleanup", easy_cleanup);
    lib.Get("curl_easy_reset", easy_reset);
    lib.Get("curl_easy_setopt", easy_setopt);
    lib.Get("curl_easy_perform", easy_perform);
    lib.Get("curl_easy_getinfo", easy_getinfo);
    lib.Get("curl_easy_strerror", easy_strerror);
    if (lib.ok()) global_init(CURL_GLOBAL_DEFAULT);
  }
  SharedLibrary lib;
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  void (*easy_reset)(CURL*) = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
};

// Its functions are null when libcurl cannot be loaded (lib.error() says why).
const CurlApi& Curl() {
  static const CurlApi api;
  return api;
}

// One easy handle per thread, reused so that connections stay open from one
// core to the next on the same server.
CURL* ThreadHandle() {
  const CurlApi& curl = Curl();
  if (!curl.lib.ok()) return nullptr;
  thread_local std::unique_ptr<CURL, void (*)(CURL*)> handle(curl.easy_init(), curl.easy_cleanup);
  return handle.get();
}

struct Response {
  long status = 0;
  std::string body;
  size_t cap = 0;  // stop receiving beyond this many bytes
  std::optional<uint64_t> range_start, range_end, total;
  bool overflow = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  size_t len = size * n;
  size_t room = r->cap - std::min(r->cap, r->body.size());
  if (len > room) {
    r->body.append(data, room);
    r->overflow = true;
    return 0;  // abort the transfer: the server sends more than was asked
  }
  r->body.append(data, len);
  return len;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect): forget the last one's headers
    r->range_start.reset();
    r->range_end.reset();
    r->total.reset();
  }
  // Content-Range: bytes START-END/TOTAL (or bytes */TOTAL on a 416)
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.rfind("content-range:", 0) == 0) {
    unsigned long long a = 0, b = 0, t = 0;
    if (std::sscanf(line.c_str() + 14, " bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
      r->range_start = a;
      r->range_end = b;
      r->total = t;
    } else if (std::sscanf(line.c_str() + 14, " bytes */%llu", &t) == 1) {
      r->total = t;
    }
  } else if (lower.rfind("content-length:", 0) == 0) {  // a 200: the whole file
    unsigned long long t = 0;
    if (std::sscanf(line.c_str() + 15, " %llu", &t) == 1 && !r->range_start) r->total = t;
  }
  return size * n;
}

class HttpSource final : public ByteSource {
 public:
  HttpSource(std::string url, HttpOptions options)
      : url_(std::move(url)),
        options_(options),
        deadline_(std::chrono::steady_clock::now() + std::chrono::seconds(options.total_seconds)) {}

  // Fetches the head, which also tells the size and the modification time.
  Status Start() {
    auto r = Fetch(0, std::max<uint64_t>(1, options_.first_fetch));
    if (!r.ok()) return r.error();
    return Ok{};
  }

  Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) override {
    if (offset >= size_ || out.empty()) return size_t{0};
    uint64_t want = std::min<uint64_t>(out.size(), size_ - offset);
    uint64_t last = (offset + want - 1) / kBlock;
    size_t done = 0;
    while (done < want) {
      uint64_t pos = offset + done, b = pos / kBlock;
      auto it = blocks_.find(b);
      if (it == blocks_.end()) {
        // Fetch the whole run of missing blocks this read needs in one request.
        // The run is smaller than the cache, so it stays cached until copied.
        uint64_t e = b;
        while (e + 1 <= last && !blocks_.count(e + 1) && (e + 2 - b) * kBlock <= kMaxFetch) ++e;
        if (auto r = Fetch(b * kBlock, (e - b + 1) * kBlock); !r.ok()) {
          // The caller may take an error for absent bytes: it is recorded
          // so that the analysis says what it could not read.
          problems_.Add(SourceProblem::Kind::kFailed, "HTTP read failed: " + r.error().message);
          return r.error();
        }
        it = blocks_.find(b);
        if (it == blocks_.end()) break;  // the server says the file ends before
      }
      const std::string& data = it->second.data;
      uint64_t at = pos - b * kBlock;
      if (at >= data.size()) break;
      size_t n = static_cast<size_t>(std::min<uint64_t>(data.size() - at, want - done));
      std::memcpy(out.data() + done, data.data() + at, n);
      done += n;
      Touch(it->second);
    }
    return done;
  }

  std::optional<uint64_t> Size() const override { return size_; }
  uint64_t BytesRead() const override { return bytes_read_; }
  std::vector<SourceProblem> Problems() const override { return problems_.problems(); }
  RemoteFileInfo Info() const { return info_; }

 private:
  struct Block {
    std::string data;
    std::list<uint64_t>::iterator lru;
  };

  void Touch(Block& b) { lru_.splice(lru_.begin(), lru_, b.lru); }

  // Fetches [start, start+len) (clipped to the size once known) into blocks.
  Status Fetch(uint64_t start, uint64_t len) {
    if (size_known_) len = std::min(len, size_ - start);
    std::string last_error;
    for (int attempt = 0; attempt < options_.attempts; ++attempt) {
      if (attempt > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(options_.backoff_ms << (attempt - 1)));
      }
      if (std::chrono::steady_clock::now() >= deadline_) {
        return MakeError(ErrorKind::kIo, "the time for this core's HTTP reads (" +
                                             std::to_string(options_.total_seconds) + " s) is spent" +
                                             (last_error.empty() ? "" : " (last: " + last_error + ")") + " at " +
                                             RangeText(start, len));
      }
      Response r;
      r.cap = static_cast<size_t>(len);
      CURLcode rc = Perform(start, len, r);
      bytes_read_ += r.body.size();
      if (r.status) info_.http_status = r.status;
      bool whole_file = r.status == 200 && start == 0;  // a server that ignores Range: keep the head only
      if (r.status == 200 && start != 0) {
        // Whole files where a range was asked for: no retry will help, and
        // reading on would download the core.
        return MakeError(ErrorKind::kIo, "the server ignored the Range request (HTTP 200) for " + RangeText(start, len));
      }
      if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && r.overflow && whole_file)) {
        if (r.status == 416) {  // beyond the end
          if (r.total) SetSize(*r.total);
          return Ok{};
        }
        if (r.status == 206 || whole_file) {
          uint64_t got_start = whole_file ? 0 : r.range_start.value_or(UINT64_MAX);
          if (whole_file && !r.overflow) r.total = r.body.size();
          if (got_start != start || !r.total || (r.range_end && *r.range_end - start + 1 != r.body.size())) {
            last_error = "the response does not match the range asked for";
            continue;
          }
          if (size_known_ && *r.total != size_) {
            return MakeError(ErrorKind::kIo, "the remote file changed size during the read");
          }
          SetSize(*r.total);
          if (r.body.size() < std::min(len, size_ - start)) {
            last_error = "short body";
            continue;
          }
          Store(start, r.body);
          return Ok{};
        }
        last_error = "HTTP " + std::to_string(r.status);
        if (r.status == 408 || r.status == 429 || r.status >= 500) continue;
        return MakeError(ErrorKind::kIo, last_error + " for " + RangeText(start, len));
      }
      if (!Curl().lib.ok()) return MakeError(ErrorKind::kUnsupported, "reading a URL needs libcurl: " + Curl().lib.error());
      last_error = Curl().easy_strerror(rc);
      if (rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_URL_MALFORMAT || rc == CURLE_COULDNT_RESOLVE_HOST) break;
    }
    return MakeError(ErrorKind::kIo, last_error + " for " + RangeText(start, len) + " after " +
                                         std::to_string(options_.attempts) + " attempts");
  }

  CURLcode Perform(uint64_t start, uint64_t len, Response& r) {
    CURL* h = ThreadHandle();
    if (!h) return CURLE_FAILED_INIT;
    Curl().easy_reset(h);
    std::string range = std::to_string(start) + "-" + std::to_string(start + len - 1);
    Curl().easy_setopt(h, CURLOPT_URL, url_.c_str());
    Curl().easy_setopt(h, CURLOPT_RANGE, range.c_str());
    Curl().easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    Curl().easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    Curl().easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    Curl().easy_setopt(h, CURLOPT_MAXREDIRS, 3L);
    Curl().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    Curl().easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_ms));
    // A stalled connection (under 1 byte/s for this long) is a failed attempt.
    Curl().easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    Curl().easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.stall_seconds));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    Curl().easy_setopt(h, CURLOPT_TIMEOUT_MS, std::max<long>(1, static_cast<long>(left.count())));
    Curl().easy_setopt(h, CURLOPT_FILETIME, 1L);
    Curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
    Curl().easy_setopt(h, CURLOPT_WRITEDATA, &r);
    Curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
    Curl().easy_setopt(h, CURLOPT_HEADERDATA, &r);
    Curl().easy_setopt(h, CURLOPT_USERAGENT, "coroner/0.1");
    CURLcode rc = Curl().easy_perform(h);
    Curl().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    curl_off_t filetime = -1;
    if (Curl().easy_getinfo(h, CURLINFO_FILETIME_T, &filetime) == CURLE_OK && filetime >= 0) {
      info_.mtime_ns = static_cast<int64_t>(filetime) * 1000000000;
    }
    return rc;
  }

  void SetSize(uint64_t total) {
    size_ = total;
    size_known_ = true;
    info_.size = total;
  }

  void Store(uint64_t start, const std::string& body) {
    for (uint64_t at = 0; at < body.size(); at += kBlock) {
      uint64_t b = (start + at) / kBlock;
      if (blocks_.count(b)) continue;
      lru_.push_front(b);
      blocks_[b] = Block{body.substr(static_cast<size_t>(at), static_cast<size_t>(kBlock)), lru_.begin()};
    }
    while (blocks_.size() > kMaxCachedBlocks) {
      blocks_.erase(lru_.back());
      lru_.pop_back();
    }
  }

  static std::string RangeText(uint64_t start, uint64_t len) {
    return "bytes " + std::to_string(start) + "-" + std::to_string(start + len - 1);
  }

  std::string url_;
  HttpOptions options_;
  std::chrono::steady_clock::time_point deadline_;
  ProblemLog problems_;
  uint64_t size_ = UINT64_MAX;  // until the first response says
  bool size_known_ = false;
  uint64_t bytes_read_ = 0;
  std::map<uint64_t, Block> blocks_;
  std::list<uint64_t> lru_;
  RemoteFileInfo info_;
};

}  // namespace

bool IsUrl(const std::string& input) {
  return input.rfind("http://", 0) == 0 || input.rfind("https://", 0) == 0;
}

Expected<std::unique_ptr<ByteSource>> OpenHttpSource(const std::string& url, const HttpOptions& options,
                                                     RemoteFileInfo* info) {
  auto source = std::make_unique<HttpSource>(url, options);
  auto started = source->Start();
  if (info) *info = source->Info();
  if (!started.ok()) return started.error();
  return std::unique_ptr<ByteSource>(std::move(source));
}

}  // namespace coroner
