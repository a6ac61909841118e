// Fuzzes what a scan reads besides cores: inventories (CSV), ISO-8601
// times and --since/--until arguments, systemd-coredump file names and
// journal fields (cgroup paths, timestamps), the records workers send back, and
// crashlog lines, package captures and source map rules.
// The first byte picks the parser.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/core.h"
#include "dataset/core_record.h"
#include "core/crash_line.h"
#include "source/byte_source.h"
#include "dataset/journal_metadata.h"
#include "dataset/metadata.h"
#include "dataset/timestamps.h"
#include "provenance/inventory.h"
#include "provenance/source_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 5: {
      // Captures of a container's packages, and the module paths matched on them.
      coroner::PackageInventory inv;
      inv.AddCapture("fuzz", text);
      for (const char* m : {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/opt/venv/lib/python3/site-packages/jaxlib/x.so",
                            "/lib64/ld-linux-x86-64.so.2", "libfoo-1.so.2"}) {
        (void)inv.For(m);
      }
      (void)inv.For(text);
      break;
    }
    case 6: {
      // Source map rules, and DWARF paths looked up through them (no roots:
      // nothing is searched but the rule's own target).
      coroner::SourceMap map;
      (void)map.AddRule(text.substr(0, text.find('\n')));
      (void)map.Resolve(text.substr(text.find('\n') + 1));
      break;
    }
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
      (void)coroner::ParseTimeArgument(text, 1791947520);
      break;
    case 2: {
      coroner::Metadata md;
      coroner::ParseCoredumpFileName(text, md);
      // The same bytes as a journal entry's cgroup and timestamp.
      coroner::CoredumpEntry e;
      e.fields = {{"COREDUMP_CGROUP", text}, {"COREDUMP_TIMESTAMP", text}};
      (void)coroner::JournalMetadata(e);
      break;
    }
    case 3: {
      auto j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_discarded()) break;
      // A record that decodes encodes to the same record (the pipe's two
      // directions come from one field list).
      auto r = coroner::RecordFromJson(j);
      if (!r.ok()) break;
      auto again = coroner::RecordFromJson(coroner::RecordToJson(*r));
      if (!again.ok() || coroner::RecordToJson(*again) != coroner::RecordToJson(*r)) __builtin_trap();
      break;
    }
    case 4: {  // a crashlog line, made into a core file and opened as one, and assembled directly
      auto line = coroner::ParseCrashLine(text);
      if (line.ok()) {
        auto core = coroner::Core::Open(coroner::MakeMemorySource(coroner::SynthesizeCore(*line)),
                                        coroner::CoreOptions{false, {}});
        (void)core;
        auto assembled = coroner::AssembleCore(*line);
        (void)assembled->executable();
        for (const auto& t : assembled->threads()) (void)assembled->memory().Read<uint64_t>(t.registers.sp());
      }
      break;
    }
  }
  return 0;
}
