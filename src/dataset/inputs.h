// The inputs of a scan: core files, directories (recursive), globs,
// @listfiles (one input a line) and http(s):// URLs, expanded into a sorted,
// de-duplicated list of paths and URLs.
#pragma once

#include <string>
#include <vector>

namespace coroner {

struct InputList {
  std::vector<std::string> inputs;
  std::vector<std::string> warnings;  // a glob that matched nothing, an unreadable list file
};

// Local paths are made absolute (not resolved through symlinks), so a
// re-scan from another directory recognizes them. In directories every
// regular file is an input except sidecars (*.json) and the files in
// `exclude` (the dataset itself).
InputList ExpandInputs(const std::vector<std::string>& args, const std::vector<std::string>& exclude = {});

// Shard `index` of `count` of the inputs: the inputs sorted by size (largest
// first, then by path) and dealt each to the shard with the fewest bytes so
// far, so shards are balanced by size and the split depends only on the set
// of inputs, not on their order. A URL weighs 1 MiB (its size is not asked).
std::vector<std::string> SelectShard(const std::vector<std::string>& inputs, int index, int count);

}  // namespace coroner
