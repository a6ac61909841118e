// Fuzzes what `coroner epi` reads besides the dataset: kernel logs and
// TOML rules files. The first byte picks the parser.
#include <cstddef>
#include <cstdint>
#include <string>

#include "epi/kernel_log.h"
#include "epi/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    coroner::KernelLog log = coroner::ParseKernelLog(text, "host", 2026);
    if (log.events.size() > log.lines) __builtin_trap();  // at most one event a line
  } else {
    (void)coroner::ParseRules(text);
  }
  return 0;
}
