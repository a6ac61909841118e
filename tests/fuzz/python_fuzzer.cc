// libFuzzer target: the whole analysis of a real python3 core whose
// interpreter memory the fuzzer rewrites: the runtime's first bytes, every
// thread state, frame and code object the Python reader found in the intact
// core (CORONER_FUZZ_CORE names the core, made by make_python_cores.sh).
// Any crash, hang, leak or sanitizer report is a bug.
#include "full_analysis.h"

namespace {

struct Base {
  std::vector<std::byte> bytes;
  std::vector<coroner::fuzz::Region> regions;
};

Base Load(coroner::SymbolProvider& provider) {
  Base b;
  b.bytes = coroner::fuzz::ReadNamedFile("CORONER_FUZZ_CORE");
  auto core = coroner::Core::Open(coroner::MakeMemorySource(b.bytes), coroner::CoreOptions{});
  if (!core.ok()) std::exit(2);
  coroner::CrashAnalysis a = coroner::ProcessCore(**core, provider, coroner::ProcessOptions{});
  if (!a.python) std::exit(3);  // not a CPython core: nothing to fuzz here
  std::vector<uint64_t> objects{a.python->runtime};
  for (const auto& t : a.python->threads) {
    objects.push_back(t.thread_state);
    for (const auto& f : t.frames) {
      objects.push_back(f.address);
      objects.push_back(f.code);
    }
  }
  // 512 bytes of each, where the core holds them.
  for (uint64_t addr : objects) {
    const coroner::Segment* s = (*core)->memory().Find(addr);
    if (!s || addr - s->vaddr >= s->present) continue;
    uint64_t in = addr - s->vaddr;
    b.regions.push_back({s->offset + in, std::min<uint64_t>(512, s->present - in)});
  }
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static coroner::FileSymbolProvider provider(coroner::fuzz::FuzzSymbolOptions(""));
  static const Base base = Load(provider);
  std::vector<std::byte> bytes = base.bytes;
  coroner::fuzz::ApplyPatches(data, size, base.regions, bytes);
  coroner::fuzz::AnalyzeEverything(coroner::MakeMemorySource(std::move(bytes)), "", provider);
  return 0;
}
