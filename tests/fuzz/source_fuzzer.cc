// libFuzzer target: the zstd / lz4 / xz stream sources on arbitrary bytes.
// The first byte picks the format; the rest is the compressed stream. Reads
// go forward, backward and past the end, as the core reader's do.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "source/byte_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const coroner::Compression kFormats[] = {coroner::Compression::kZstd, coroner::Compression::kLz4,
                                                  coroner::Compression::kXz};
  auto format = kFormats[data[0] % 3];
  std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data) + 1,
                               reinterpret_cast<const std::byte*>(data) + size);
  auto source = coroner::MakeCompressedSource(coroner::MakeMemorySource(std::move(bytes)), format);
  if (!source.ok()) return 0;
  // A read plan as the core reader gives one, with ranges that end before
  // they begin or lie at the top of the address space, and an optional one.
  const std::pair<uint64_t, uint64_t> plan[] = {
      {0, 8192}, {uint64_t{1} << 20, (uint64_t{1} << 20) + 65536}, {UINT64_MAX - 10, 5}};
  const std::pair<uint64_t, uint64_t> optional[] = {{64, 200000}, {UINT64_MAX - 70000, UINT64_MAX}};
  (*source)->Retain(plan);
  (*source)->RetainIfRoom(optional);
  std::vector<std::byte> buf(4096);
  for (uint64_t offset : {uint64_t{0}, uint64_t{100000}, uint64_t{64}, uint64_t{1} << 20, uint64_t{4096}}) {
    auto n = (*source)->ReadUpTo(offset, buf);
    if (!n.ok()) break;
  }
  return 0;
}
