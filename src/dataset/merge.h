// Merging shard datasets (`coroner scan --shard I/N` writes one each) into
// one. Idempotent: a core already in the output with the same size, mtime
// and scan time is left alone, so merging a shard twice changes nothing; a
// core scanned again later (a newer scanned_at, or another size or mtime)
// replaces the older row with all its threads, frames, modules and
// attributes. Each shard is merged in one transaction.
#pragma once

#include <string>
#include <vector>

#include "base/expected.h"

namespace coroner {

struct MergeSummary {
  size_t shards = 0;
  size_t added = 0, replaced = 0, unchanged = 0;
};

// Fails, before changing anything, when a shard is not a dataset of this
// schema version.
Expected<MergeSummary> MergeDatasets(const std::string& out, const std::vector<std::string>& shards);

}  // namespace coroner
