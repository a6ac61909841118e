#include "demo/demo_fleet.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>

#include "core/core.h"
#include "dataset/timestamps.h"
#include "source/byte_source.h"

namespace coroner {
namespace {

constexpr int64_t kDay = kSecondsPerDay;

// splitmix64: the same numbers from the same seed on every platform, which
// <random>'s distributions do not promise.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return n ? Next() % n : 0; }
  double Unit() { return static_cast<double>(Next() >> 11) / 9007199254740992.0; }
};

struct Placement {
  int64_t from, to;  // [from, to): the VM runs on `machine`, booted at `from`
  std::string machine;
};

struct Change {
  int64_t time;
  std::string attribute, value;
};

struct Host {
  std::string name, region;
  std::map<std::string, std::string> base;  // attributes at the start
  std::vector<Change> changes;              // in time order
  std::vector<Placement> placements;
  std::vector<int64_t> gpu_errors;          // times
};

// Short region names for host and machine names: "westeurope" -> "we".
std::string Abbrev(const std::string& region) {
  static const std::map<std::string, std::string> kShort = {
      {"westeurope", "we"}, {"northeurope", "ne"}, {"eastus", "eus"},   {"westus", "wus"},
      {"southeastasia", "sea"}, {"japaneast", "jpe"}, {"centralus", "cus"}};
  auto it = kShort.find(region);
  return it != kShort.end() ? it->second : region.substr(0, 3);
}

std::string Attribute(const Host& h, const std::string& key, int64_t t) {
  std::string v;
  if (auto it = h.base.find(key); it != h.base.end()) v = it->second;
  for (const auto& c : h.changes)
    if (c.time <= t && c.attribute == key) v = c.value;
  return v;
}

const Placement* PlacementAt(const Host& h, int64_t t) {
  for (const auto& p : h.placements)
    if (p.from <= t && t < p.to) return &p;
  return nullptr;
}

bool Matches(const Host& h, const PlantedPopulation& pop, int64_t t) {
  const Placement* place = PlacementAt(h, t);
  if (!place) return false;
  if (pop.max_uptime_seconds && t - place->from >= pop.max_uptime_seconds) return false;
  for (const auto& [key, want] : pop.only) {
    if (key == "machine") {
      if (place->machine != want) return false;
    } else if (key == "hw_errors") {
      bool hit = std::any_of(h.gpu_errors.begin(), h.gpu_errors.end(),
                             [&](int64_t e) { return e <= t && t - e < 7 * kDay; });
      if (hit != (want == "yes")) return false;
    } else if (key == "host") {
      if (h.name != want) return false;
    } else if (key == "region") {
      if (h.region != want) return false;
    } else if (Attribute(h, key, t) != want) {
      return false;
    }
  }
  return true;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) return MakeError(ErrorKind::kIo, "cannot write " + path);
  return Ok{};
}

}  // namespace

Scenario DemoScenario() {
  Scenario s;
  s.name = "demo";
  s.seed = 20261014;
  s.hosts = 60;
  s.regions = {"westeurope", "eastus", "southeastasia"};
  s.skus = {"Standard_E64s_v5", "Standard_D32s_v5", "Standard_L16s_v3"};
  s.services = {"ingest", "query", "index"};
  s.initial = {{"kernel", "6.1.0-25-cloud-amd64"}, {"release", "2026.10.1"}};
  // The release goes to a fifth of the hosts first, to the rest a week later.
  s.rollouts = {{"release", "2026.10.3", 14, 0.2},
                {"release", "2026.10.3", 21, 1.0},
                {"kernel", "6.8.0-1021-azure", 5, 0.35}};
  s.populations = {
      {"bad machine: register corruption on one physical host, fresh VMs only", "misaligned_stack-O0", 40, 9, -1,
       {{"machine", "phys-we-03"}}, 36 * 3600, "machine", "phys-we-03"},
      {"a null dereference that arrives with release 2026.10.3", "null_deref-O0", 60, 14, -1,
       {{"release", "2026.10.3"}}, 0, "release", "2026.10.3"},
      {"a crash only on kernel 6.8.0-1021-azure", "inlined-O0", 50, 5, -1, {{"kernel", "6.8.0-1021-azure"}}, 0,
       "kernel", "6.8.0-1021-azure"},
      {"background: a return-to-null race all over the fleet", "return_to_null-O0", 80, 0, -1, {}, 0, "", ""},
      {"background: assertion failures", "abort_assert-O0", 30, 0, -1, {}, 0, "", ""},
      {"background: division by zero", "divide_by_zero-O0", 20, 0, -1, {}, 0, "", ""},
      {"background: bad pointers", "bad_pointer-O0", 20, 0, -1, {}, 0, "", ""},
  };
  return s;
}

Scenario GpuScenario() {
  Scenario s;
  s.name = "gpu";
  s.seed = 7;
  s.hosts = 48;
  s.days = 21;
  s.regions = {"eastus", "westus"};
  s.skus = {"Standard_ND96isr_H100_v5", "Standard_ND96asr_A100_v4", "Standard_NC24ads_A100_v4", "Standard_D16s_v5"};
  s.services = {"training", "serving"};
  s.initial = {{"kernel", "5.15.0-1064-azure"}, {"release", "jax-0.4.30"}};
  s.gpu_error_hosts = 3;
  s.populations = {
      {"illegal instructions on hosts whose GPUs report Xid errors", "illegal_instruction-O0", 45, 0, -1,
       {{"hw_errors", "yes"}}, 0, "hw_errors_7d", "yes"},
      {"bus errors only on one SKU", "bus_error-O0", 50, 3, -1, {{"sku", "Standard_NC24ads_A100_v4"}}, 0, "sku",
       "Standard_NC24ads_A100_v4"},
      {"background: null dereferences", "null_deref-O0", 70, 0, -1, {}, 0, "", ""},
      {"background: uncaught exceptions", "uncaught_exception-O0", 40, 0, -1, {}, 0, "", ""},
  };
  return s;
}

Scenario HardwareScenario() {
  Scenario s;
  s.name = "hardware";
  s.seed = 1717;
  s.hosts = 40;
  s.days = 21;
  s.regions = {"westeurope", "eastus"};
  s.skus = {"Standard_ND96isr_H100_v5", "Standard_ND96asr_A100_v4"};
  s.services = {"training", "serving"};
  s.initial = {{"kernel", "6.1.0-25-cloud-amd64"}, {"release", "jax-0.4.30"}};
  s.cpus_per_host = 96;
  s.bad_cpu_host = "we-node-03";
  s.bad_cpu = 17;
  s.machine_checks = 2;
  s.noise_mce_hosts = 1;
  s.populations = {
      {"bad host: misaligned stacks", "misaligned_stack-O0", 9, 0, -1, {{"host", "we-node-03"}}, 0, "host", "we-node-03"},
      {"bad host: wild jumps", "wild_jump-O0", 8, 0, -1, {{"host", "we-node-03"}}, 0, "host", "we-node-03"},
      {"bad host: flipped pointers", "bit_flip-O2", 6, 0, -1, {{"host", "we-node-03"}}, 0, "host", "we-node-03"},
      {"bad host: illegal instructions", "illegal_instruction-O2", 5, 0, -1, {{"host", "we-node-03"}}, 0, "host",
       "we-node-03"},
      // The GPU stays in its machine; the VMs placed there come and go.
      {"bad GPU: Xid 79/48 before the runtime aborts", "gpu_runtime_abort-O2", 12, 2, -1, {{"machine", "phys-eus-03"}},
       0, "machine", "phys-eus-03", "xid-hardware"},
      {"application GPU bug on every GPU", "gpu_runtime_abort-O2", 40, 0, -1, {}, 0, "", "", "xid-app"},
      {"background: null dereferences", "null_deref-O2", 70, 0, -1, {}, 0, "", ""},
      {"background: failed assertions", "abort_assert-O0", 30, 0, -1, {}, 0, "", ""},
  };
  return s;
}

Scenario AmdScenario() {
  Scenario s;
  s.name = "amd";
  s.seed = 300;
  s.hosts = 36;
  s.days = 21;
  s.regions = {"eastus", "westeurope"};
  s.skus = {"Standard_ND96isr_MI300X_v5"};
  s.services = {"inference", "training"};
  s.initial = {{"kernel", "6.8.0-1017-azure"}, {"release", "rocm-6.1.3"}};
  s.rollouts = {{"release", "rocm-6.2.4", 9, 1.0, 6}};
  s.cpus_per_host = 96;
  s.populations = {
      {"an inference server's own bad kernels fault on many GPUs", "gpu_runtime_abort-O2", 40, 0, -1, {}, 0, "", "",
       "amd-app"},
      {"bad AMD GPU: uncorrectable ECC before the runtime aborts", "gpu_runtime_abort-O2", 9, 3, -1,
       {{"host", "eus-node-04"}}, 0, "host", "eus-node-04", "amd-ras"},
      {"a crash that arrives with release rocm-6.2.4 on every host", "call_null-O0", 40, 9, -1,
       {{"release", "rocm-6.2.4"}}, 0, "release", "rocm-6.2.4", "", true},
      {"background: null dereferences", "null_deref-O2", 60, 0, -1, {}, 0, "", ""},
      {"background: failed assertions", "abort_assert-O0", 30, 0, -1, {}, 0, "", ""},
  };
  return s;
}

Scenario TrainingScenario() {
  Scenario s;
  s.name = "training";
  s.seed = 8080;
  s.hosts = 48;
  s.days = 21;
  s.regions = {"eastus", "westus"};
  s.skus = {"Standard_ND96isr_H100_v5"};
  s.services = {"training"};
  s.initial = {{"kernel", "6.8.0-1017-azure"}, {"release", "jax-0.4.30"}};
  PlantedPopulation bad_gpu{"bad GPU: rank 0's Xid 79/48, its job's other ranks time out", "gpu_runtime_abort-O2",
                            6, 1, -1, {{"host", "eus-node-05"}}, 0, "host", "eus-node-05", "xid-hardware"};
  bad_gpu.ranks = 32;
  bad_gpu.collateral_core = "uncaught_exception-O0";
  PlantedPopulation every_rank{"an application bug that every rank of a job hits at once", "divide_by_zero-O0", 5, 2,
                               -1, {}, 0, "", ""};
  every_rank.ranks = 16;
  every_rank.alike = true;
  s.populations = {
      bad_gpu,
      every_rank,
      {"background: null dereferences", "null_deref-O2", 60, 0, -1, {}, 0, "", ""},
      {"background: failed assertions", "abort_assert-O0", 30, 0, -1, {}, 0, "", ""},
  };
  return s;
}

Scenario RegionScenario() {
  Scenario s;
  s.name = "region";
  s.seed = 99;
  s.hosts = 40;
  s.days = 30;
  s.regions = {"westeurope", "northeurope", "eastus", "japaneast"};
  s.skus = {"Standard_E32s_v5", "Standard_E64s_v5"};
  s.services = {"ingest", "query", "index", "api"};
  s.initial = {{"kernel", "6.1.0-25-cloud-amd64"}, {"release", "r517"}};
  s.rollouts = {{"release", "r518", 8, 1.0}};
  s.populations = {
      {"wild jumps in one region from day 12", "wild_jump-O0", 45, 12, -1, {{"region", "japaneast"}}, 0, "region",
       "japaneast"},
      {"calls through null only in the api service", "call_null-O0", 50, 4, -1, {{"service", "api"}}, 0, "service",
       "api"},
      {"background: heap corruption", "double_free-O0", 60, 0, -1, {}, 0, "", ""},
      {"background: unmapped writes", "unmapped_write-O0", 50, 0, -1, {}, 0, "", ""},
  };
  return s;
}

Scenario ExposureScenario() {
  Scenario s;
  s.name = "exposure";
  s.seed = 4242;
  s.hosts = 64;
  s.days = 28;
  s.regions = {"eastus", "westeurope"};
  s.region_weights = {3, 1};
  s.skus = {"Standard_D32s_v5", "Standard_E32s_v5", "Standard_L8s_v3"};
  s.services = {"web", "batch", "cache"};
  s.affinities = {{"batch", "Standard_L8s_v3", 0.85},
                  {"web", "Standard_D32s_v5", 0.8},
                  {"cache", "Standard_E32s_v5", 0.8}};
  s.initial = {{"kernel", "6.1.0-25-cloud-amd64"}, {"release", "v41"}};
  s.rollouts = {{"release", "v42", 10, 1.0}};
  s.populations = {
      {"bus errors on one bad SKU (most batch hosts run on it)", "bus_error-O0", 60, 3, -1,
       {{"sku", "Standard_L8s_v3"}}, 0, "sku", "Standard_L8s_v3"},
      {"stack overflows only in the small region", "stack_overflow-O0", 90, 0, -1, {{"region", "westeurope"}}, 0,
       "region", "westeurope"},
      {"background: null dereferences everywhere", "null_deref-O0", 150, 0, -1, {}, 0, "", ""},
      {"background: division by zero", "divide_by_zero-O0", 60, 0, -1, {}, 0, "", ""},
  };
  return s;
}

std::optional<Scenario> ScenarioNamed(const std::string& name) {
  for (Scenario (*make)() :
       {DemoScenario, GpuScenario, RegionScenario, ExposureScenario, HardwareScenario, AmdScenario, TrainingScenario}) {
    Scenario s = make();
    if (s.name == name) return s;
  }
  return std::nullopt;
}

namespace {

namespace fs = std::filesystem;

// The fleet's VMs: each in a region by the scenario's weights, with its
// attributes, the rollouts that reach it, and its placements on the
// region's machines (a VM is re-created on another every 1-8 days); and
// the hosts whose GPUs report errors, with when.
Expected<std::vector<Host>> MakeHosts(const Scenario& s, Rng& rng, int64_t begin, int64_t end) {
  // Regions in turn, each as often as its weight says.
  std::vector<size_t> region_cycle;
  for (size_t r = 0; r < s.regions.size(); ++r)
    for (int w = 0; w < (r < s.region_weights.size() ? std::max(s.region_weights[r], 0) : 1); ++w)
      region_cycle.push_back(r);
  if (region_cycle.empty()) return MakeError(ErrorKind::kMalformed, "scenario " + s.name + " weighs every region 0");
  std::vector<Host> hosts;
  std::map<std::string, int> per_region;
  for (int i = 0; i < s.hosts; ++i) {
    Host h;
    h.region = s.regions[region_cycle[static_cast<size_t>(i) % region_cycle.size()]];
    char name[64];
    std::snprintf(name, sizeof name, "%s-node-%02d", Abbrev(h.region).c_str(), ++per_region[h.region]);
    h.name = name;
    h.base = s.initial;
    h.base["region"] = h.region;
    h.base["sku"] = s.skus[rng.Below(s.skus.size())];
    h.base["service"] = s.services[rng.Below(s.services.size())];
    for (const auto& a : s.affinities)
      if (h.base["service"] == a.service && rng.Unit() < a.probability) h.base["sku"] = a.sku;
    for (const auto& r : s.rollouts)
      if (rng.Unit() < r.fraction)
        h.changes.push_back({begin + r.day * kDay + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(
                                                        std::max(r.spread_hours, 1)) * 3600)),
                             r.attribute, r.value});
    std::sort(h.changes.begin(), h.changes.end(), [](const Change& a, const Change& b) { return a.time < b.time; });
    int64_t t = begin - static_cast<int64_t>(rng.Below(5 * kDay));
    while (t < end) {
      int64_t len = kDay + static_cast<int64_t>(rng.Below(7 * kDay));
      char machine[64];
      std::snprintf(machine, sizeof machine, "phys-%s-%02d", Abbrev(h.region).c_str(),
                    static_cast<int>(rng.Below(static_cast<uint64_t>(s.machines_per_region))) + 1);
      h.placements.push_back({t, t + len, machine});
      t += len;
    }
    hosts.push_back(std::move(h));
  }
  for (int g = 0; g < s.gpu_error_hosts && g < s.hosts; ++g) {
    Host& h = hosts[static_cast<size_t>(g) * static_cast<size_t>(s.hosts) / static_cast<size_t>(s.gpu_error_hosts)];
    for (int64_t t = begin + static_cast<int64_t>(rng.Below(3 * kDay)); t < end;
         t += 3 * kDay + static_cast<int64_t>(rng.Below(6 * kDay)))
      h.gpu_errors.push_back(t);
  }
  return hosts;
}

// A planted crash, and what the kernel prints of it: the zoo core's pid,
// name, signal and registers, as the kernel would have printed them.
struct Planted {
  const Host* host;
  int64_t t;
  const PlantedPopulation* pop;
  int pid, signo, code;
  std::string comm;
  uint64_t pc, sp, fault;
};

Planted FactsOfCore(const std::string& source, const PlantedPopulation& pop) {
  Planted facts{nullptr, 0, &pop, 0, 0, 0, "", 0, 0, 0};
  if (auto file = OpenFileSource(source); file.ok())
    if (auto core = Core::Open(std::move(*file)); core.ok()) {
      const Core& c = **core;
      if (c.process()) facts.pid = c.process()->pid, facts.comm = c.process()->comm;
      if (c.signal()) facts.signo = c.signal()->signo, facts.code = c.signal()->code,
                      facts.fault = c.signal()->fault_address.value_or(0);
      if (!c.threads().empty()) facts.pc = c.threads()[0].registers.pc(), facts.sp = c.threads()[0].registers.sp();
    }
  return facts;
}

// Writes the fleet's cores: each a link of a zoo core, and its sidecar with
// the host's attributes at the crash (and `extra`, JSON members).
class CoreWriter {
 public:
  explicit CoreWriter(GeneratedFleet& fleet) : fleet_(fleet) {}
  size_t written() const { return seq_; }
  Status Place(const std::string& source, const Host& host, int64_t t, const std::string& population,
               const std::string& extra) {
    std::error_code ec;
    fs::create_directories(fleet_.cores_dir + "/" + host.name, ec);
    char file[64];
    std::snprintf(file, sizeof file, "/core-%05zu.core", ++seq_);
    std::string path = fleet_.cores_dir + "/" + host.name + file;
    if (::link(source.c_str(), path.c_str()) != 0 && ::symlink(source.c_str(), path.c_str()) != 0)
      return MakeError(ErrorKind::kIo, "cannot link " + path + ": " + std::strerror(errno));
    std::string json = "{";
    for (const char* key : {"region", "sku", "kernel", "release", "service"})
      json += JsonString(key) + ": " + JsonString(Attribute(host, key, t)) + ", ";
    json += "\"host\": " + JsonString(host.name) + ", \"time\": " + JsonString(FormatIso8601(t)) +
            ", \"boot_time\": " + JsonString(FormatIso8601(PlacementAt(host, t)->from)) + extra + "}\n";
    if (auto w = WriteFile(path + ".json", json); !w.ok()) return w.error();
    ++fleet_.cores;
    ++fleet_.per_population[population];
    fleet_.population_of[path] = population;
    return Ok{};
  }

 private:
  GeneratedFleet& fleet_;
  size_t seq_ = 0;
};

// Where and when one crash of `pop` lands: a host that fits the population
// at a time in its days (the first crash on the start day, its onset).
Expected<std::pair<const Host*, int64_t>> PickHostAndTime(const Scenario& s, const PlantedPopulation& pop, size_t k,
                                                          const std::vector<Host>& hosts, Rng& rng, int64_t begin) {
  int last = pop.end_day < 0 ? s.days - 1 : std::min(pop.end_day, s.days - 1);
  for (int attempt = 0; attempt < 20000; ++attempt) {
    int span = k == 0 && attempt < 10000 ? 1 : last - pop.start_day + 1;
    int day = pop.start_day + static_cast<int>(rng.Below(static_cast<uint64_t>(span)));
    int64_t t = begin + day * kDay + static_cast<int64_t>(rng.Below(kDay));
    std::vector<const Host*> fit;
    for (const auto& h : hosts)
      if (Matches(h, pop, t)) fit.push_back(&h);
    if (!fit.empty()) return std::pair<const Host*, int64_t>{fit[rng.Below(fit.size())], t};
  }
  return MakeError(ErrorKind::kMalformed, "population \"" + pop.name + "\" fits no host");
}

// A distributed job whose rank 0 crashed on `host` at `t`: the other ranks,
// 8 to a host, crash alike at once or give up after it.
Status PlaceOtherRanks(const PlantedPopulation& pop, const std::string& zoo_cores_dir, const Host* host, int64_t t,
                       const std::vector<Host>& hosts, Rng& rng, CoreWriter& writer,
                       const std::function<std::string(int, const Host&)>& job_json) {
  std::vector<const Host*> nodes = {host};
  for (int r = 8; r < pop.ranks; r += 8) {
    std::vector<const Host*> free;
    for (const auto& h : hosts)
      if (PlacementAt(h, t) && PlacementAt(h, t + 60) && std::find(nodes.begin(), nodes.end(), &h) == nodes.end())
        free.push_back(&h);
    if (free.empty()) break;
    nodes.push_back(free[rng.Below(free.size())]);
  }
  std::string rank_source = zoo_cores_dir + "/" + (pop.alike ? pop.core : pop.collateral_core) + ".core";
  std::string rank_population = pop.alike ? pop.name : pop.name + " (collateral ranks)";
  for (int r = 1; r < pop.ranks && static_cast<size_t>(r / 8) < nodes.size(); ++r) {
    const Host& node = *nodes[static_cast<size_t>(r / 8)];
    int64_t rt = pop.alike ? t : t + 5 + static_cast<int64_t>(rng.Below(55));
    if (auto w = writer.Place(rank_source, node, rt, rank_population, job_json(r, node)); !w.ok()) return w.error();
  }
  return Ok{};
}

// Every crash of one population, with its job's other ranks.
Status PlantPopulation(const Scenario& s, const PlantedPopulation& pop, const std::string& zoo_cores_dir,
                       const std::vector<Host>& hosts, Rng& rng, int64_t begin, CoreWriter& writer,
                       GeneratedFleet& fleet, std::vector<Planted>& planted) {
  std::string source = zoo_cores_dir + "/" + pop.core + ".core";
  struct stat st;
  if (::stat(source.c_str(), &st) != 0)
    return MakeError(ErrorKind::kIo, "zoo core " + source + ": " + std::strerror(errno));
  const Planted facts = FactsOfCore(source, pop);
  for (size_t k = 0; k < pop.count; ++k) {
    auto where = PickHostAndTime(s, pop, k, hosts, rng, begin);
    if (!where.ok()) return where.error();
    auto [host, t] = *where;
    std::string job = pop.ranks > 1 ? "j" + std::to_string(writer.written() + 1) : "";
    auto job_json = [&](int rank, const Host& h) {
      return ", \"job_id\": " + JsonString(job) + ", \"job_step\": \"0\", \"launcher\": \"slurm\", \"rank\": \"" +
             std::to_string(rank) + "\", \"world_size\": \"" + std::to_string(pop.ranks) +
             "\", \"local_rank\": \"" + std::to_string(rank % 8) + "\", \"job_node\": " + JsonString(h.name);
    };
    if (auto w = writer.Place(source, *host, t, pop.name, job.empty() ? "" : job_json(0, *host)); !w.ok())
      return w.error();
    if (!job.empty())
      if (auto w = PlaceOtherRanks(pop, zoo_cores_dir, host, t, hosts, rng, writer, job_json); !w.ok())
        return w.error();
    Planted p = facts;
    p.host = host;
    p.t = t;
    planted.push_back(p);
    int day = static_cast<int>((t - begin) / kDay);
    auto [first, added] = fleet.first_day.emplace(pop.name, day);
    if (!added) first->second = std::min(first->second, day);
  }
  return Ok{};
}

// The inventory: which machine each VM ran on and with what, and when; a
// placement is split where an attribute changed.
Status WriteInventory(const std::vector<Host>& hosts, const std::string& out_dir, GeneratedFleet& fleet) {
  static const char* kColumns[] = {"region", "sku", "service", "kernel", "release"};
  std::string csv = "host,machine,region,sku,service,kernel,release,valid_from,valid_to\n";
  for (const auto& h : hosts)
    for (const auto& p : h.placements) {
      std::vector<int64_t> cuts = {p.from};
      for (const auto& c : h.changes)
        if (p.from < c.time && c.time < p.to) cuts.push_back(c.time);
      cuts.push_back(p.to);
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        if (cuts[i] == cuts[i + 1]) continue;
        csv += h.name + "," + p.machine;
        for (const char* key : kColumns) csv += "," + Attribute(h, key, cuts[i]);
        csv += "," + FormatIso8601(cuts[i]) + "," + FormatIso8601(cuts[i + 1]) + "\n";
      }
    }
  fleet.inventory = out_dir + "/inventory.csv";
  return WriteFile(fleet.inventory, csv);
}

// Each host's kernel lines: (time, message) in the order they were made.
using KernelLines = std::map<std::string, std::vector<std::pair<int64_t, std::string>>>;

// What the kernel prints of a crash it delivered: a page fault's segfault
// line with the CPU it likely ran on (the bad host's CPU mostly), or a trap.
void AddCrashLine(const Scenario& s, const Planted& p, Rng& rng, KernelLines& lines) {
  const std::string& name = p.host->name;
  bool bad = name == s.bad_cpu_host;
  int cpu = bad && rng.Unit() < 0.85 ? s.bad_cpu : static_cast<int>(rng.Below(static_cast<uint64_t>(s.cpus_per_host)));
  int core = cpu % std::max(1, s.cpus_per_host / 2), socket = cpu / std::max(1, s.cpus_per_host / 2);
  char buf[512];
  if (p.signo == 11 && p.code != 0x80) {  // a page fault: show_signal_msg
    std::snprintf(buf, sizeof buf,
                  "kernel: %s[%d]: segfault at %llx ip %016llx sp %016llx error 4 likely on CPU %d (core %d, "
                  "socket %d)",
                  p.comm.c_str(), p.pid, static_cast<unsigned long long>(p.fault),
                  static_cast<unsigned long long>(p.pc), static_cast<unsigned long long>(p.sp), cpu, core, socket);
    lines[name].emplace_back(p.t, buf);
  } else if (p.signo == 11 || p.signo == 4 || p.signo == 8) {  // a trap
    const char* what = p.signo == 11 ? "general protection fault" : p.signo == 4 ? "trap invalid opcode"
                                                                                  : "trap divide error";
    std::snprintf(buf, sizeof buf, "kernel: traps: %s[%d] %s ip:%llx sp:%llx error:0", p.comm.c_str(), p.pid, what,
                  static_cast<unsigned long long>(p.pc), static_cast<unsigned long long>(p.sp));
    lines[name].emplace_back(p.t, buf);
  }
}

// An application's GPU page fault on an AMD host: one of its 8 GPUs, in the
// form its driver generation prints (the host's index picks it), with the
// status lines and ROCr's own line.
void AddAmdPageFault(const Planted& p, const std::vector<Host>& hosts, Rng& rng, KernelLines& lines) {
  const std::string& name = p.host->name;
  char buf[512];
  std::snprintf(buf, sizeof buf, "kernel: amdgpu 0000:%02x:00.0: amdgpu: ",
                static_cast<unsigned>(0x03 + 0x20 * rng.Below(8)));
  std::string dev = buf;
  std::string pid = std::to_string(p.pid), thread = std::to_string(p.pid + 7);
  std::string in_page = dev + "  in page starting at address 0x00007f3c00001000 from IH client 0x1b (UTCL2)";
  std::vector<std::string> fault;
  switch ((p.host - hosts.data()) % 4) {
    case 0:  // the process on the fault's line
      fault = {dev + "[gfxhub0] retry page fault (src_id:0 ring:0 vmid:8 pasid:32769, for process " + p.comm +
                   " pid " + pid + " thread " + p.comm + " pid " + thread + ")",
               in_page};
      break;
    case 1:  // older kernels: a line of its own
      fault = {dev + "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32771)",
               dev + " Process " + p.comm + " pid " + pid + " thread " + p.comm + " pid " + thread, in_page};
      break;
    case 2:  // amdgpu-dkms: " for process ... )" on a line of its own
      fault = {dev + "[gfxhub] page fault (src_id:0 ring:153 vmid:9 pasid:32776,",
               dev + " for process " + p.comm + " pid " + pid + " thread " + p.comm + " pid " + thread + ")",
               in_page};
      break;
    default:  // MI300: the die and XCD
      fault = {dev + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32770, for process " + p.comm +
                   " pid " + pid + " thread " + p.comm + " pid " + thread + ")",
               in_page, dev + "cookie node_id 2 fault from die AID0.XCD1"};
  }
  for (const char* status : {"GCVM_L2_PROTECTION_FAULT_STATUS:0x00800932", "\t Faulty UTCL2 client ID: CPC (0x9)",
                             "\t MORE_FAULTS: 0x0", "\t WALKER_ERROR: 0x0", "\t PERMISSION_FAULTS: 0x3",
                             "\t MAPPING_ERROR: 0x0", "\t RW: 0x0"})
    fault.push_back(dev + status);
  for (const auto& line : fault) lines[name].emplace_back(p.t - 1, line);
  lines[name].emplace_back(p.t - 1, p.comm + "[" + pid + "]: Memory access fault by GPU node-" +
                                        std::to_string(2 + rng.Below(8)) +
                                        " (Agent handle: 0x55d1c3a4e0b0) on address 0x7f3c00001000. Reason: Page "
                                        "not present or supervisor privilege.");
}

// The GPU lines a population's crashes come with (PlantedPopulation::gpu_lines).
void AddGpuLines(const Planted& p, const std::vector<Host>& hosts, Rng& rng, KernelLines& lines) {
  const std::string& name = p.host->name;
  if (p.pop->gpu_lines == "xid-hardware") {
    lines[name].emplace_back(p.t - 2, "kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=" + std::to_string(p.pid) +
                                          ", name=" + p.comm +
                                          ", An uncorrectable double bit error (DBE) has been detected on GPU in the "
                                          "framebuffer at partition 0, subpartition 0.");
    lines[name].emplace_back(p.t - 1, "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=" + std::to_string(p.pid) +
                                          ", name=" + p.comm + ", GPU has fallen off the bus.");
  } else if (p.pop->gpu_lines == "amd-app") {
    AddAmdPageFault(p, hosts, rng, lines);
  } else if (p.pop->gpu_lines == "amd-ras") {
    const std::string dev = "kernel: amdgpu 0000:c1:00.0: amdgpu: ";
    lines[name].emplace_back(p.t - 3, dev + "1 uncorrectable hardware errors detected in umc block");
    lines[name].emplace_back(p.t - 1, dev + "[gfxhub0] retry page fault (src_id:0 ring:0 vmid:8 pasid:32769, for "
                                            "process " + p.comm + " pid " + std::to_string(p.pid) + " thread " +
                                            p.comm + " pid " + std::to_string(p.pid) + ")");
    lines[name].emplace_back(p.t + 2, dev + "GPU reset begin!");
  } else if (p.pop->gpu_lines == "xid-app") {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "kernel: NVRM: Xid (PCI:0000:%02x:00): 31, pid=%d, name=%s, Ch 00000008, intr 10000000. MMU Fault: "
                  "ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3c_00001000. Fault is of type FAULT_PDE",
                  static_cast<unsigned>(0x18 + 0x10 * rng.Below(8)), p.pid, p.comm.c_str());
    lines[name].emplace_back(p.t - 1, buf);
  }
}

// Machine checks: the bad host's, and one routine line on a few others.
void AddMachineChecks(const Scenario& s, const std::vector<Host>& hosts, Rng& rng, int64_t begin, int64_t end,
                      KernelLines& lines) {
  char buf[512];
  for (const Host& h : hosts) {
    if (h.name != s.bad_cpu_host) continue;
    for (int i = 0; i < s.machine_checks; ++i) {
      std::snprintf(buf, sizeof buf, "kernel: mce: [Hardware Error]: CPU %d: Machine Check: 0 Bank 4: b200000000070f0f",
                    s.bad_cpu);
      lines[h.name].emplace_back(begin + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(end - begin))), buf);
    }
  }
  for (int i = 0, placed = 0; i < s.hosts && placed < s.noise_mce_hosts; ++i) {
    const Host& h = hosts[static_cast<size_t>(i * 7 + 5) % hosts.size()];
    if (h.name == s.bad_cpu_host) continue;
    ++placed;
    lines[h.name].emplace_back(begin + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(end - begin))),
                               "kernel: mce: [Hardware Error]: Machine check events logged");
  }
}

// Each host's log, journalctl short-iso: its lines, what the drivers print
// at every boot (never evidence) and ordinary noise, in time order.
Status WriteKernelLogs(const Scenario& s, const std::vector<Host>& hosts, Rng& rng, int64_t begin, int64_t end,
                       const std::string& out_dir, KernelLines& lines, GeneratedFleet& fleet) {
  std::error_code ec;
  fs::create_directories(out_dir + "/kernel-logs", ec);
  for (const Host& h : hosts) {
    auto& mine = lines[h.name];
    for (const auto& boot : h.placements) {
      if (boot.from < begin || boot.from >= end) continue;
      if (s.cpus_per_host > 0)
        mine.emplace_back(boot.from, "kernel: smp: Brought up 2 nodes, " + std::to_string(s.cpus_per_host) + " CPUs");
      mine.emplace_back(boot.from, "kernel: mce: CPU0: Thermal monitoring enabled (TM1)");
      mine.emplace_back(boot.from, "kernel: mce: CPU supports 32 MCE banks");
      mine.emplace_back(boot.from, "kernel: EDAC MC: Ver: 3.0.0");
      mine.emplace_back(boot.from + 1, "kernel: amdgpu 0000:03:00.0: amdgpu: RAS INFO: ras initialized "
                                        "successfully, hardware ability[0x7fff] ras_mask[0x7fff]");
    }
    for (int64_t t = begin; t < end; t += kDay / 2 + static_cast<int64_t>(rng.Below(kDay)))
      mine.emplace_back(t, "kernel: eth0: Link is Up - 100Gbps/Full - flow control off");
    std::stable_sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string text;
    for (const auto& [t, msg] : mine) {
      std::string iso = FormatIso8601(t);
      text += iso.substr(0, iso.size() - 1) + "+0000 " + h.name + " " + msg + "\n";
    }
    std::string path = out_dir + "/kernel-logs/" + h.name + ".log";
    if (auto w = WriteFile(path, text); !w.ok()) return w.error();
    fleet.kernel_logs.push_back(path);
  }
  return Ok{};
}

}  // namespace

Expected<GeneratedFleet> GenerateFleet(const Scenario& s, const std::string& zoo_cores_dir,
                                       const std::string& out_dir) {
  auto start = ParseIso8601(s.start_date);
  if (!start || s.days < 1 || s.hosts < 1 || s.regions.empty() || s.skus.empty() || s.services.empty())
    return MakeError(ErrorKind::kMalformed, "scenario " + s.name + " is incomplete");
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !fs::is_empty(out_dir, ec))
    return MakeError(ErrorKind::kIo, out_dir + " is not empty");
  GeneratedFleet fleet;
  fleet.cores_dir = out_dir + "/cores";
  fs::create_directories(fleet.cores_dir, ec);
  if (ec) return MakeError(ErrorKind::kIo, "cannot create " + fleet.cores_dir + ": " + ec.message());
  // One generator, drawn from in this order: a seed gives the same fleet everywhere.
  Rng rng{s.seed};
  int64_t begin = *start, end = *start + s.days * kDay;
  auto hosts = MakeHosts(s, rng, begin, end);
  if (!hosts.ok()) return hosts.error();

  CoreWriter writer(fleet);
  std::vector<Planted> planted;
  for (const auto& pop : s.populations)
    if (auto w = PlantPopulation(s, pop, zoo_cores_dir, *hosts, rng, begin, writer, fleet, planted); !w.ok())
      return w.error();
  if (auto w = WriteInventory(*hosts, out_dir, fleet); !w.ok()) return w.error();

  // The kernel's lines: the GPU errors, then per crash its own lines and
  // its GPU's, then the machine checks.
  KernelLines lines;
  for (const Host& h : *hosts)
    for (int64_t t : h.gpu_errors)
      lines[h.name].emplace_back(t, "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=" +
                                        std::to_string(1000 + rng.Below(9000)) +
                                        ", name=python3, GPU has fallen off the bus.");
  for (const Planted& p : planted) {
    if (s.cpus_per_host > 0) AddCrashLine(s, p, rng, lines);
    AddGpuLines(p, *hosts, rng, lines);
  }
  AddMachineChecks(s, *hosts, rng, begin, end, lines);
  if (!lines.empty())
    if (auto w = WriteKernelLogs(s, *hosts, rng, begin, end, out_dir, lines, fleet); !w.ok()) return w.error();
  return fleet;
}

}  // namespace coroner
