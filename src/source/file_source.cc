// FileSource: a local file read with pread, one request at a time.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "source/byte_source.h"

namespace coroner {
namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(int fd, uint64_t size) : fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) override {
    if (offset >= size_) return size_t{0};
    size_t want = out.size();
    if (want > size_ - offset) want = static_cast<size_t>(size_ - offset);
    size_t done = 0;
    while (done < want) {
      ssize_t n = ::pread(fd_, out.data() + done, want - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        std::string what = std::string("read failed: ") + std::strerror(errno);
        problems_.Add(SourceProblem::Kind::kFailed, what + " at offset " + std::to_string(offset + done));
        return MakeError(ErrorKind::kIo, what);
      }
      if (n == 0) {  // the file shrank under us: report what is there
        problems_.Add(SourceProblem::Kind::kCut, "the file shrank while it was read (ends before offset " +
                                                     std::to_string(offset + done) + ")");
        break;
      }
      done += static_cast<size_t>(n);
    }
    bytes_read_ += done;
    return done;
  }
  std::optional<uint64_t> Size() const override { return size_; }
  uint64_t BytesRead() const override { return bytes_read_; }
  std::vector<SourceProblem> Problems() const override { return problems_.problems(); }

 private:
  ProblemLog problems_;
  int fd_;
  uint64_t size_;
  uint64_t bytes_read_ = 0;
};

}  // namespace

Expected<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path) {
  // O_NONBLOCK: a FIFO given as a core (or a sidecar) must not block the
  // open; it is refused below as not a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return MakeError(ErrorKind::kIo, "cannot open: " + std::string(std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return MakeError(ErrorKind::kIo, "cannot stat: " + std::string(std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return MakeError(ErrorKind::kIo, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
  }
  return std::unique_ptr<ByteSource>(new FileSource(fd, static_cast<uint64_t>(st.st_size)));
}

}  // namespace coroner
