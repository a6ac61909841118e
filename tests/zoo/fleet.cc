#include "zoo/fleet.h"

#include <elf.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "dataset/timestamps.h"

namespace coroner::testing {
namespace {

namespace fs = std::filesystem;

void Link(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::create_hard_link(from, to, ec);
  if (ec) fs::create_symlink(from, to);
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

std::string RemoveAll(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  return dir;
}

Fleet MakeFleet(const std::string& dir, size_t copies, uint32_t seed) {
  Fleet fleet;
  fleet.dir = dir;
  RemoveAll(dir);
  fs::create_directories(dir + "/a");
  fs::create_directories(dir + "/b/c");
  std::mt19937 rng(seed);
  const char* regions[] = {"westeurope", "eastus", "japaneast"};
  const int64_t start = *ParseIso8601("2026-10-01T00:00:00Z");
  size_t n = 0;
  for (size_t copy = 0; copy < copies; ++copy) {
    for (const auto& z : LoadZoo()) {
      FleetCore c;
      c.zoo = z;
      std::string sub = n % 3 == 0 ? "/a/" : n % 3 == 1 ? "/b/" : "/b/c/";
      c.path = dir + sub + "c" + std::to_string(copy) + "-" + fs::path(z.core).filename().string();
      Link(z.core, c.path);
      int host = static_cast<int>(rng() % 12);
      c.host = "node-" + std::to_string(host);
      c.region = regions[host % 3];
      c.time = start + static_cast<int64_t>(n) * 3600 + static_cast<int64_t>(rng() % 600);
      c.boot_time = c.time - 60 * static_cast<int64_t>(1 + rng() % 5000);
      Write(c.path + ".json", "{\"host\": \"" + c.host + "\", \"region\": \"" + c.region + "\", \"copy\": " +
                                  std::to_string(copy) + ", \"time\": \"" + FormatIso8601(c.time) +
                                  "\", \"boot_time\": \"" + FormatIso8601(c.boot_time) + "\"}");
      fleet.cores.push_back(std::move(c));
      ++n;
    }
  }
  // Bad inputs.
  Write(dir + "/a/empty.core", "");
  fleet.bad.push_back({dir + "/a/empty.core", "not-elf"});
  std::string junk(100000, '\0');
  for (auto& ch : junk) ch = static_cast<char>(rng());
  Write(dir + "/a/random.core", junk);
  fleet.bad.push_back({dir + "/a/random.core", "not-elf"});
  Write(dir + "/b/notes.txt", "not a core, a note someone left here\n");
  fleet.bad.push_back({dir + "/b/notes.txt", "not-elf"});
  Elf32_Ehdr h32{};
  std::memcpy(h32.e_ident, ELFMAG, SELFMAG);
  h32.e_ident[EI_CLASS] = ELFCLASS32;
  h32.e_ident[EI_DATA] = ELFDATA2LSB;
  h32.e_ident[EI_VERSION] = EV_CURRENT;
  h32.e_type = ET_CORE;
  h32.e_machine = EM_386;
  h32.e_version = EV_CURRENT;
  h32.e_ehsize = sizeof h32;
  Write(dir + "/b/c/i386.core", std::string(reinterpret_cast<const char*>(&h32), sizeof h32));
  fleet.bad.push_back({dir + "/b/c/i386.core", "unsupported"});
  for (const auto& z : LoadZoo()) {
    if (z.variant != "null_deref-O0" && z.variant != "dlopen_crash-O0") continue;
    std::ifstream in(z.core, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string half = dir + "/a/half-" + z.variant + ".core";
    Write(half, bytes.substr(0, bytes.size() / 2));
    fleet.halves.push_back(half);
  }
  return fleet;
}

}  // namespace coroner::testing
