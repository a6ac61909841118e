// A generated fleet of real zoo cores for the scan tests: every zoo core
// several times over (hard links, else symlinks), each with a sidecar whose
// values are chosen here and so known to the test, plus bad inputs whose
// error the test knows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zoo/zoo.h"

namespace coroner::testing {

struct FleetCore {
  std::string path;  // absolute
  ZooCore zoo;
  std::string host, region;
  int64_t time = 0, boot_time = 0;  // seconds since the epoch, as in the sidecar
};

struct BadInput {
  std::string path;
  std::string error_kind;  // the prefix of cores.error, e.g. "not-elf"
};

struct Fleet {
  std::string dir;
  std::vector<FleetCore> cores;
  std::vector<BadInput> bad;
  std::vector<std::string> halves;  // first halves of cores: a partial result, status ok, truncated
  size_t size() const { return cores.size() + bad.size() + halves.size(); }
};

// `copies` of every manifest core (big_heap's 1 GiB cores are linked, never
// copied), and the bad inputs: empty, random bytes, the first half of a
// core, a 32-bit ELF core header, a text file.
Fleet MakeFleet(const std::string& dir, size_t copies, uint32_t seed);

// Removes a directory tree (as rm -rf), returning its path.
std::string RemoveAll(const std::string& dir);

}  // namespace coroner::testing
