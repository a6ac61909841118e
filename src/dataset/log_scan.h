// The crashlog half of `coroner scan --log`: finding the crash lines in
// logs, and analyzing them into records on threads.
//
// Cores go to worker processes, because a core is large hostile input and
// its analysis may crash or hang. A crash line is not: the reader caps
// every field (core/crash_line.h), the stack it gives is 64 words, and
// its analysis is bounded by the same limits a core's is. Lines are many
// and each is cheap, so they are analyzed on threads of the scan's own
// process, with no round trip through a worker: 100,000 lines go in
// seconds, where a worker's message and its JSON cost more than the line's
// analysis.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataset/core_record.h"

namespace coroner {

// One crash line of a log: its input name ("log:FILE:LINE"), where it is,
// and its log's stamp (a rescan skips lines of an unchanged log).
struct LogLine {
  std::string label;
  std::string file;
  uint64_t offset = 0;
  uint32_t length = 0;
  InputStamp stamp;
};

// Every crash line of the logs, in order. A log that cannot be read gives
// one line, "log:FILE", whose stamp holds the error. With a shard, only the
// lines whose label hashes to it.
std::vector<LogLine> FindLogLines(const std::vector<std::string>& logs,
                                  const std::optional<std::pair<int, int>>& shard);

// Analyzes the lines on `threads` threads (each with its own symbol cache)
// and hands the records to `sink` on the calling thread, in the lines'
// order, a batch at a time. A sink that returns false stops the analysis.
// Every line gives one record: one that cannot be read or parsed gives an
// error record with the reason. The records the sink leaves in the vector
// are destroyed by an analyzer thread, not the caller's: freeing a
// record's strings on the writer's thread cost it a tenth of its time.
void AnalyzeLogLines(const std::vector<LogLine>& lines, const RecordOptions& options, int threads,
                     const std::function<bool(std::vector<CoreRecord>&)>& sink);

}  // namespace coroner
