// Fuzzes what a scan reads besides cores: inventories (CSV), ISO-8601
// times, systemd-coredump file names, the records workers send back, and
// crashlog lines.
// The first byte picks the parser.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/core.h"
#include "dataset/core_record.h"
#include "dataset/crash_line.h"
#include "source/byte_source.h"
#include "dataset/metadata.h"
#include "dataset/timestamps.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto inv = coroner::Inventory::Parse(text);
      if (inv.ok()) {
        coroner::Metadata md;
        md.Add("host", text.substr(0, text.find(',')));
        md.time = 1700000000;
        inv->Join(md);
      }
      break;
    }
    case 1:
      if (auto t = coroner::ParseIso8601(text)) coroner::FormatIso8601(*t);
      break;
    case 2: {
      coroner::Metadata md;
      coroner::ParseCoredumpFileName(text, md);
      break;
    }
    case 3: {
      auto j = nlohmann::json::parse(text, nullptr, false);
      if (!j.is_discarded()) (void)coroner::RecordFromJson(j);
      break;
    }
    case 4: {  // a crashlog line, made into a core and opened as one
      auto line = coroner::ParseCrashLine(text);
      if (line.ok()) {
        auto core = coroner::Core::Open(coroner::MakeMemorySource(coroner::SynthesizeCore(*line)),
                                        coroner::CoreOptions{false, ""});
        (void)core;
      }
      break;
    }
  }
  return 0;
}
