// What the two whole-analysis fuzzers share: a file read whole, byte patches
// taken from the fuzzer's input, and everything `coroner analyze` does to one
// core (unwind every thread, symbolize with DWARF, read the crashing
// thread's variables, disassemble, diagnose, and the JSON, text and Markdown
// reports).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/core.h"
#include "provenance/source_report.h"
#include "report/core_report.h"
#include "report/markdown_report.h"
#include "symbolize/symbol_provider.h"
#include "text/text.h"

namespace coroner::fuzz {

// The file an environment variable names, whole; exits when it cannot be read
// (the fuzzer would test nothing).
inline std::vector<std::byte> ReadNamedFile(const char* variable) {
  const char* path = std::getenv(variable);
  std::ifstream in(path ? path : "", std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (c.empty()) {
    std::fprintf(stderr, "fuzz: set %s to a readable file\n", variable);
    std::exit(2);
  }
  std::vector<std::byte> out(c.size());
  std::memcpy(out.data(), c.data(), c.size());
  return out;
}

struct Region {
  uint64_t offset = 0, size = 0;  // in the file
};

// The fuzzer's input as patches: records of [region (1 byte), offset in the
// region (4 bytes), length (1 byte), bytes], each written over `bytes` inside
// the region it names (regions chosen modulo their count, offsets modulo the
// region's size). At most 64 records.
inline void ApplyPatches(const uint8_t* data, size_t size, const std::vector<Region>& regions,
                         std::vector<std::byte>& bytes) {
  if (regions.empty()) return;
  size_t at = 0;
  for (int n = 0; n < 64 && at + 6 <= size; ++n) {
    const Region& r = regions[data[at] % regions.size()];
    uint32_t offset = data[at + 1] | data[at + 2] << 8 | data[at + 3] << 16 | uint32_t{data[at + 4]} << 24;
    size_t len = data[at + 5];
    at += 6;
    len = std::min(len, size - at);
    if (r.size == 0) continue;
    uint64_t start = r.offset + offset % r.size;
    for (size_t k = 0; k < len && start + k < r.offset + r.size && start + k < bytes.size(); ++k) {
      bytes[start + k] = static_cast<std::byte>(data[at + k]);
    }
    at += len;
  }
}

inline SymbolOptions FuzzSymbolOptions(const std::string& sysroot) {
  SymbolOptions o;
  o.sysroot = sysroot;
  o.use_debuginfod = false;
  return o;
}

// Everything `coroner analyze` does to one core, in each output format.
inline void AnalyzeEverything(std::unique_ptr<ByteSource> source, const std::string& sysroot,
                              SymbolProvider& provider) {
  CoreOptions core_options;
  core_options.sysroot = sysroot;
  auto core = Core::Open(std::move(source), core_options);
  if (!core.ok()) return;
  CrashAnalysis analysis = ProcessCore(**core, provider, ProcessOptions{});
  analysis.path = "fuzz.core";
  static const auto sources = MakeSourceOptions(SourceFlags{});
  std::optional<SourceReport> source_report;
  if (analysis.crashing_backtrace() && sources.ok()) {
    source_report = BuildSourceReport(**core, *analysis.crashing_backtrace(), *sources);
  }
  volatile size_t sink = 0;
  sink = sink + CoreToJson(analysis).size();
  sink = sink + CoreToText(analysis).size();
  if (sources.ok()) {
    sink = sink + CoreToMarkdown(analysis, sources->components, source_report ? &*source_report : nullptr).size();
  }
}

}  // namespace coroner::fuzz
