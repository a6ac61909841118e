#include "source/byte_source.h"

#include <array>

namespace coroner {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kIo: return "io";
    case ErrorKind::kNotElf: return "not-elf";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kMalformed: return "malformed";
    case ErrorKind::kTruncated: return "truncated";
  }
  return "unknown";
}

Expected<bool> ByteSource::ReadExact(uint64_t offset, std::span<std::byte> out) {
  auto n = ReadUpTo(offset, out);
  if (!n.ok()) return n.error();
  if (*n != out.size()) {
    return MakeError(ErrorKind::kTruncated, "wanted " + std::to_string(out.size()) +
                                                " bytes at offset " + std::to_string(offset) +
                                                ", only " + std::to_string(*n) + " present");
  }
  return true;
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

Compression DetectCompression(ByteSource& source) {
  std::array<unsigned char, 6> m{};
  auto n = source.ReadUpTo(0, std::as_writable_bytes(std::span(m)));
  if (!n.ok() || *n < 4) return Compression::kNone;
  if (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) return Compression::kZstd;
  if (m[0] == 0x04 && m[1] == 0x22 && m[2] == 0x4d && m[3] == 0x18) return Compression::kLz4;
  if (*n == 6 && m[0] == 0xfd && m[1] == '7' && m[2] == 'z' && m[3] == 'X' && m[4] == 'Z' &&
      m[5] == 0) {
    return Compression::kXz;
  }
  return Compression::kNone;
}

Expected<std::unique_ptr<ByteSource>> OpenCoreSource(const std::string& path,
                                                     std::optional<uint64_t> max_bytes) {
  auto file = OpenFileSource(path);
  if (!file.ok()) return file.error();
  std::unique_ptr<ByteSource> source = std::move(*file);
  if (max_bytes) source = MakePrefixSource(std::move(source), *max_bytes);
  Compression c = DetectCompression(*source);
  if (c == Compression::kNone) return source;
  return MakeCompressedSource(std::move(source), c);
}

}  // namespace coroner
