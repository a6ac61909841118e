#include "dataset/core_record.h"

#include "dataset/attribute_keys.h"

#include "core/crash_line.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "core/core.h"
#include "diagnose/peer_failure.h"
#include "dataset/record_columns.h"
#include "dataset/timestamps.h"
#include "live/snapshot.h"
#include "live/snapshot_core.h"
#include "processor/processor.h"
#include "text/text.h"

namespace coroner {
namespace {

using Json = nlohmann::json;

// Lends a source to a Core that must not own it.
class BorrowedSource final : public ByteSource {
 public:
  explicit BorrowedSource(ByteSource& inner) : inner_(inner) {}
  Expected<size_t> ReadUpTo(uint64_t offset, std::span<std::byte> out) override { return inner_.ReadUpTo(offset, out); }
  std::optional<uint64_t> Size() const override { return inner_.Size(); }
  uint64_t BytesRead() const override { return inner_.BytesRead(); }
  uint64_t BytesDecoded() const override { return inner_.BytesDecoded(); }
  bool Rereads(uint64_t offset, uint64_t size) const override { return inner_.Rereads(offset, size); }
  void Retain(std::span<const std::pair<uint64_t, uint64_t>> ranges) override { inner_.Retain(ranges); }
  void RetainIfRoom(std::span<const std::pair<uint64_t, uint64_t>> ranges) override { inner_.RetainIfRoom(ranges); }
  std::vector<SourceProblem> Problems() const override { return inner_.Problems(); }

 private:
  ByteSource& inner_;
};

void FillLabels(CoreRecord& r, Core& core, const RecordOptions& options, SymbolProvider& symbols);
void HideWords(CoreRecord& r, const Core& core, const CrashAnalysis& analysis);

void FillFromCore(CoreRecord& r, Core& core, const RecordOptions& options, SymbolProvider& symbols) {
  // The machine: a mixed fleet's populations, and what a cluster's cores
  // share (a sidecar's `arch` wins).
  r.attributes.push_back({"arch", std::string(ArchName(core.arch()))});
  if (const auto& p = core.process()) {
    r.pid = p->pid;
    r.comm = ValidUtf8(p->comm);
  }
  if (const auto& s = core.signal()) {
    r.signal = s->signo;
    r.si_code = s->code;
    r.fault_address = s->fault_address;
  }
  r.exe = ValidUtf8(core.exe_path());
  if (const Module* exe = core.executable()) {
    r.build_id = exe->build_id;
    // The package its package metadata note names (a container's programs
    // carry theirs when the host's dpkg knows nothing of them).
    if (exe->package) {
      r.attributes.push_back({"package", exe->package->name});
      if (!exe->package->version.empty()) r.attributes.push_back({"package_version", exe->package->version});
    }
  }
  double cpu = 0;
  r.threads.reserve(core.threads().size());
  for (size_t i = 0; i < core.threads().size(); ++i) {
    const Thread& t = core.threads()[i];
    ThreadRow row;
    row.index = static_cast<int>(i);
    row.tid = t.tid;
    row.crashing = i == core.crashing_thread();
    row.pc = t.registers.pc();
    row.sp = t.registers.sp();
    row.registers = RegistersJsonText(t.registers);
    row.cpu_seconds = static_cast<double>(t.utime_us + t.stime_us) / 1e6;
    cpu += row.cpu_seconds;
    r.threads.push_back(std::move(row));
  }
  if (!core.threads().empty()) {
    r.crashing_tid = core.threads()[core.crashing_thread()].tid;
    r.cpu_seconds = cpu;
  }
  r.modules.reserve(core.modules().size());
  for (const auto& m : core.modules()) {
    r.modules.push_back({ValidUtf8(m.path), m.base, m.end - m.base, m.build_id, ModuleFileStatusName(m.file_status)});
  }
  if (!options.notes_only) FillLabels(r, core, options, symbols);
  // Last: what is missing includes what the analysis's own reads met (a
  // stream cut, a remote read that failed).
  r.truncated = core.truncated();
  for (const auto& m : core.missing()) r.warnings.push_back(ValidUtf8(m));
  for (const auto& m : core.soft_errors()) r.warnings.push_back(ValidUtf8(m));
}

// The labels: the analysis's diagnosis, signature, job and frames.
void FillLabels(CoreRecord& r, Core& core, const RecordOptions& options, SymbolProvider& symbols) {
  // The labels' depth: the crashing thread alone (the diagnosis and the
  // signature need no more, and the other threads' stacks would multiply the
  // bytes read).
  ProcessOptions process;
  process.depth = AnalysisDepth::kLabels;
  process.unwind.max_frames = static_cast<size_t>(std::max(options.max_frames, 1));
  if (r.source == "core") process.input_path = r.path;
  process.environment = options.environment;
  CrashAnalysis analysis = ProcessCore(core, symbols, process);
  if (analysis.identity && analysis.identity->job) {
    // JobAttributeKeys()'s order.
    const JobIdentity& job = *analysis.identity->job;
    auto number = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string(); };
    const std::string values[] = {job.launcher,        job.job_id,          job.step.value_or(""),
                                  number(job.restart), number(job.rank),    number(job.world_size),
                                  number(job.local_rank), job.node,         job.gpus,
                                  job.cluster,            number(job.elastic_restart)};
    const auto& keys = JobAttributeKeys();
    for (size_t i = 0; i < keys.size() && i < std::size(values); ++i)
      if (!values[i].empty()) r.attributes.push_back({keys[i], ValidUtf8(values[i])});
  }
  // The host a rules file's [environment] host variable names (Kubernetes'
  // node name), first present first: `node_name`, which places the core
  // when nothing before it does (HostFromCore).
  if (analysis.identity) {
    const auto& env = analysis.identity->environment;
    for (const auto& name : options.environment.host) {
      auto it = std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == name; });
      if (it == env.end() || it->second.empty() || it->second == kHiddenValue) continue;
      r.attributes.push_back({"node_name", ValidUtf8(it->second)});
      break;
    }
  }
  const std::optional<FaultContext>& fault = analysis.fault_context;
  if (analysis.diagnosis) {
    r.syndrome = SyndromeName(analysis.diagnosis->syndrome);
    r.context = ContextName(analysis.diagnosis->context);
    // The core's own hardware evidence, for epi's per-host verdicts
    // (docs/dataset.md: attributes coroner derives).
    if (size_t n = analysis.diagnosis->possible_bit_flips.size())
      r.attributes.push_back({"possible_bit_flips", std::to_string(n)});
    if (analysis.diagnosis->impossible_state) r.attributes.push_back({"impossible_state", "yes"});
    // A rank that gave up because a peer did: epi's incidents mark it collateral.
    if (auto peer = PeerFailure(*analysis.diagnosis)) r.attributes.push_back({"peer_failure", *peer});
  }
  if (!analysis.gpu_state.empty())
    r.attributes.push_back({"gpu_state", std::string(GpuStateName(analysis.gpu_state.front().kind))});
  if (fault) {
    r.real_signal = fault->signal.signo;
    r.real_si_code = fault->signal.code;
    r.real_fault_address = fault->signal.fault_address;
  }
  if (analysis.signed_backtrace()) {
    // The frames of the thread the signature names, from which epi signs
    // again with a rules file's skip-list.
    Backtrace& crashing = analysis.threads[analysis.signed_thread];
    const size_t base = r.frames.size();
    r.frames.reserve(base + crashing.frames.size());
    // The frames' names move to the rows: nothing reads them after.
    for (auto& f : crashing.frames) {
      FrameRow row;
      row.thread = static_cast<int>(analysis.signed_thread);
      row.index = static_cast<int>(f.index);
      row.pc = f.pc;
      if (f.module) {
        row.module = ValidUtf8(f.module->module->path);
        row.build_id = f.module->module->build_id;
      }
      row.offset = f.offset;
      row.function = ValidUtf8(std::move(f.function));
      row.file = ValidUtf8(std::move(f.file));
      row.line = f.line;
      row.trust = FrameTrustName(f.trust);  // how the frame was found, as analyze says it
      row.inlined = f.inlined;
      r.frames.push_back(std::move(row));
    }
  }
  r.signature = std::move(analysis.signature);
  HideWords(r, core, analysis);
}

// The words whose bytes are a hidden variable's (a return address a string
// overflow wrote, a register in the middle of a copy) are stored as
// kHiddenEnvironment: the rows the notes gave before the environment was
// read are looked at again.
void HideWords(CoreRecord& r, const Core& core, const CrashAnalysis& analysis) {
  auto hides = HiddenWords(analysis);
  if (!hides) return;
  HiddenWordsScope scope(hides);
  auto hide = [&](StoredWord& w) { w.hidden = w.hidden || hides(w.value); };
  for (size_t i = 0; i < r.threads.size() && i < core.threads().size(); ++i) {
    ThreadRow& row = r.threads[i];
    hide(row.pc);
    hide(row.sp);
    const Registers& regs = core.threads()[i].registers;
    if (std::any_of(regs.value.begin(), regs.value.end(), hides)) row.registers = RegistersJsonText(regs);
  }
  for (FrameRow& f : r.frames) hide(f.pc);
  if (r.fault_address) hide(*r.fault_address);
  if (r.real_fault_address) hide(*r.real_fault_address);
}

}  // namespace

InputStamp StampInput(const std::string& input) {
  InputStamp s;
  if (IsUrl(input)) {
    HttpOptions o = DefaultHttpOptions();
    o.first_fetch = 1;
    RemoteFileInfo info;
    auto src = OpenHttpSource(input, o, &info);
    if (!src.ok()) {
      s.error = src.error().message;
      return s;
    }
    s.size = info.size;
    s.mtime_ns = info.mtime_ns;
    return s;
  }
  struct statx st {};
  if (::statx(AT_FDCWD, input.c_str(), 0, STATX_SIZE | STATX_MTIME | STATX_BTIME, &st) != 0) {
    s.error = std::string("cannot stat: ") + std::strerror(errno);
    return s;
  }
  auto ns = [](const struct statx_timestamp& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; };
  s.size = static_cast<uint64_t>(st.stx_size);
  s.mtime_ns = ns(st.stx_mtime);
  if (st.stx_mask & STATX_BTIME) s.btime_ns = ns(st.stx_btime);
  return s;
}

const char* RowStatusName(RowStatus s) {
  switch (s) {
    case RowStatus::kOk: return "ok";
    case RowStatus::kPartial: return "partial";
    case RowStatus::kError: return "error";
  }
  return "error";
}

std::optional<RowStatus> RowStatusFromName(std::string_view name) {
  for (RowStatus s : {RowStatus::kOk, RowStatus::kPartial, RowStatus::kError})
    if (name == RowStatusName(s)) return s;
  return std::nullopt;
}

const std::vector<std::string>& JobAttributeKeys() {
  static const std::vector<std::string> kKeys = [] {
    std::vector<std::string> keys;
    for (const auto& k : AttributeKeys())
      if (k.job) keys.emplace_back(k.name);
    return keys;
  }();
  return kKeys;
}

namespace {

// Where neither a sidecar nor the journal names the host, the core's own
// environment may: the node Slurm ran the rank on (SLURMD_NODENAME), else
// the HOSTNAME a rank's process exported — the job's `job_node` — else the
// variable a rules file names as the host (`node_name`); it wins over
// systemd-coredump's hostname xattr, which is only the crashing process's
// UTS name (a container's, in a container). `host_source` says where the
// host came from; the inventory then joins by it as by any host.
void HostFromCore(const CoreRecord& r, Metadata& md) {
  const std::string* source = md.Get("host_source");
  if (md.Get("host") && !(source && *source == "xattr")) return;
  for (const char* key : {"job_node", "node_name"}) {
    for (const auto& a : r.attributes) {
      if (a.key != key || a.value.empty()) continue;
      std::erase_if(md.attributes, [](const auto& kv) { return kv.first == "host" || kv.first == "host_source"; });
      md.Add("host", a.value);
      md.Add("host_source", "environment");
      return;
    }
  }
}

}  // namespace

void ApplyMetadata(CoreRecord& r, const Metadata& md) {
  r.time = md.time;
  r.time_source = md.time_source;
  r.uptime = md.Uptime();
  // A sidecar's job and package keys win over what the core said.
  const auto& job_keys = JobAttributeKeys();
  for (const auto& attribute : md.attributes) {
    const std::string& key = attribute.first;
    if (std::find(job_keys.begin(), job_keys.end(), key) != job_keys.end() || key == "package" ||
        key == "package_version")
      std::erase_if(r.attributes, [&](const auto& a) { return a.key == key; });
  }
  for (const auto& [k, v] : md.attributes) r.attributes.push_back({ValidUtf8(k), ValidUtf8(v)});
  for (const auto& w : md.warnings) r.warnings.push_back(ValidUtf8(w));
}

void SetError(CoreRecord& r, std::optional<ErrorKind> kind, const std::string& message) {
  r.status = RowStatus::kError;
  r.error_kind = kind;
  r.error = ValidUtf8(kind ? std::string(ErrorKindName(*kind)) + ": " + message : message);
}

CoreRecord ErrorRecord(const std::string& input, std::optional<ErrorKind> kind, const std::string& message) {
  CoreRecord r;
  r.path = ValidUtf8(input);
  SetError(r, kind, message);
  return r;
}

CoreRecord AnalyzeInput(const std::string& input, const RecordOptions& options, SymbolProvider& symbols) {
  auto start = std::chrono::steady_clock::now();
  CoreRecord r;
  r.path = ValidUtf8(input);
  RemoteFileInfo remote;
  std::optional<int64_t> btime_ns;
  auto source = OpenCoreSource(input, options.max_bytes, &remote);
  if (IsUrl(input)) {
    r.size = remote.size;
    r.mtime_ns = remote.mtime_ns;
  } else {
    InputStamp st = StampInput(input);
    r.size = st.size;
    r.mtime_ns = st.mtime_ns;
    btime_ns = st.btime_ns;
  }
  if (!source.ok()) {
    SetError(r, source.error().kind, source.error().message);
  } else {
    // The source outlives the core, so its count is there even when the open fails.
    std::unique_ptr<ByteSource> owned = std::move(*source);
    ProcessOptions depth;
    depth.depth = options.notes_only ? AnalysisDepth::kRegisters : AnalysisDepth::kLabels;
    CoreOptions core_options = CoreOptionsFor(depth);
    core_options.sysroot = options.sysroot;
    core_options.executable_files = options.exe_files;
    core_options.sole_file_is_the_program = false;  // many programs' cores: by name
    auto core = Core::Open(std::make_unique<BorrowedSource>(*owned), core_options);
    if (!core.ok()) {
      SetError(r, core.error().kind, core.error().message);
      // A cut core is truncated, whatever it decoded (a stream cut before
      // its first block decoded nothing).
      r.truncated = core.error().kind == ErrorKind::kTruncated;
      for (const auto& p : owned->Problems()) r.truncated = r.truncated || p.kind == SourceProblem::Kind::kCut;
    } else {
      FillFromCore(r, **core, options, symbols);
      // A read that failed (a remote server's error) made this analysis
      // partial in a way the next scan may not repeat: the row is an error,
      // which the next scan retries, never an "ok" row it would skip.
      if ((*core)->read_failed()) {
        r.status = RowStatus::kError;
        r.error_kind = ErrorKind::kIo;
        for (const auto& p : owned->Problems()) {
          if (p.kind != SourceProblem::Kind::kFailed && p.kind != SourceProblem::Kind::kCorrupt) continue;
          SetError(r, ErrorKind::kIo, p.what);
          break;
        }
      }
    }
    r.bytes_read = owned->BytesRead();
  }
  const Metadata* journal = nullptr;
  if (options.journal)
    if (auto it = options.journal->find(input); it != options.journal->end()) journal = &it->second;
  Metadata md = ReadMetadata(input, r.mtime_ns, btime_ns, journal);
  HostFromCore(r, md);
  if (options.inventory) options.inventory->Join(md);
  ApplyMetadata(r, md);
  r.analysis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

CoreRecord JournalOnlyRecord(const std::string& path, const Metadata& md, const std::string& why,
                             const RecordOptions& options) {
  CoreRecord r;
  r.path = ValidUtf8(path);
  r.status = RowStatus::kPartial;
  r.error = ValidUtf8(why + "; the row holds the journal's fields alone");
  auto number = [&](const char* key) -> std::optional<int> {
    const std::string* v = md.Get(key);
    int n = 0;
    if (!v) return std::nullopt;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    return ec == std::errc() && end == v->data() + v->size() ? std::optional<int>(n) : std::nullopt;
  };
  r.pid = number("pid");
  r.signal = number("signal");
  if (const std::string* v = md.Get("comm")) r.comm = ValidUtf8(*v);
  if (const std::string* v = md.Get("exe")) r.exe = ValidUtf8(*v);
  if (const std::string* v = md.Get("truncated")) r.truncated = *v == "1";
  Metadata joined = md;
  if (options.inventory) options.inventory->Join(joined);
  ApplyMetadata(r, joined);
  return r;
}

CoreRecord AnalyzeLogLine(std::string_view text, const std::string& label, const RecordOptions& options,
                          SymbolProvider& symbols) {
  auto start = std::chrono::steady_clock::now();
  CoreRecord r;
  r.path = ValidUtf8(label);
  r.source = "log";
  auto line = ParseCrashLine(text);
  if (!line.ok()) {
    SetError(r, line.error().kind, line.error().message);
    return r;
  }
  auto core = AssembleCore(*line);
  FillFromCore(r, *core, options, symbols);
  // What the line says is not missing from a line: only what a core would
  // have had (other threads, the heap) is.
  r.warnings.clear();
  r.truncated = false;
  r.cpu_seconds.reset();
  Metadata md;
  if (!line->host.empty()) md.Add("host", line->host);
  md.time = line->time;
  md.time_source = "log";
  if (options.inventory) options.inventory->Join(md);
  ApplyMetadata(r, md);
  r.analysis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

CoreRecord AnalyzeProcess(int pid, const RecordOptions& options, SymbolProvider& symbols) {
  auto start = std::chrono::steady_clock::now();
  auto wall = std::chrono::system_clock::now();
  int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  std::string iso = FormatIso8601(ms / 1000);  // "2026-12-07T16:20:31Z"
  if (!iso.empty() && iso.back() == 'Z') {
    char millis[8];
    std::snprintf(millis, sizeof millis, ".%03d", static_cast<int>(ms % 1000));
    iso = iso.substr(0, iso.size() - 1) + millis + "Z";
  }
  CoreRecord r;
  r.path = ValidUtf8("snapshot:" + std::string(host) + ":" + std::to_string(pid) + ":" + iso);
  r.source = "snapshot";
  r.pid = pid;
  auto snapshot = TakeSnapshot(pid);
  if (!snapshot.ok()) {
    SetError(r, snapshot.error().kind, snapshot.error().message);
  } else {
    LiveCapture capture = CaptureFacts(*snapshot);
    char stopped[32];
    std::snprintf(stopped, sizeof stopped, "%.3f", capture.stopped_ms);
    r.attributes.push_back({"stopped_ms", stopped});
    std::unique_ptr<ByteSource> owned = MakeSnapshotSource(std::move(*snapshot));
    ProcessOptions depth;
    depth.depth = options.notes_only ? AnalysisDepth::kRegisters : AnalysisDepth::kLabels;
    CoreOptions core_options = CoreOptionsFor(depth);
    core_options.sysroot = options.sysroot;
    core_options.executable_files = options.exe_files;
    core_options.sole_file_is_the_program = false;
    auto core = Core::Open(std::make_unique<BorrowedSource>(*owned), core_options);
    if (!core.ok()) {
      SetError(r, core.error().kind, core.error().message);
    } else {
      (*core)->SetLive(std::move(capture));
      FillFromCore(r, **core, options, symbols);
    }
    r.bytes_read = owned->BytesRead();
  }
  Metadata md;
  md.time = ms / 1000;
  md.time_source = "snapshot";
  if (host[0]) md.Add("host", host);
  if (options.inventory) options.inventory->Join(md);
  ApplyMetadata(r, md);
  r.analysis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

namespace {

// The workers' JSON is generated from the one definition of the row
// (dataset/record_columns.h): the record and each of its rows an object
// keyed by column names. Derived columns are not sent.
template <typename T>
Json Encode(const T& v) {
  if constexpr (requires { v.has_value(); }) {
    return v ? Encode(*v) : Json(nullptr);
  } else if constexpr (std::is_same_v<T, StoredWord>) {
    return v.hidden ? Json(std::string(kHiddenEnvironment)) : Json(v.value);
  } else if constexpr (std::is_same_v<T, RowStatus>) {
    return Json(RowStatusName(v));
  } else {
    return Json(v);
  }
}

template <typename T>
void Decode(const Json& j, T& v) {
  if constexpr (requires { v.has_value(); }) {
    if (j.is_null()) v.reset();
    else Decode(j, v.emplace());
  } else if constexpr (std::is_same_v<T, StoredWord>) {
    if (j.is_string() && j.get<std::string>() == kHiddenEnvironment) {
      v = StoredWord{};
      v.hidden = true;
    } else {
      v = StoredWord(j.get<uint64_t>());
    }
  } else if constexpr (std::is_same_v<T, RowStatus>) {
    auto status = RowStatusFromName(j.get<std::string>());
    if (!status) throw std::invalid_argument("an unknown status");
    v = *status;
  } else {
    v = j.get<T>();
  }
}

template <typename Row>
Json EncodeRows(const std::vector<Row>& rows) {
  Json out = Json::array();
  for (const Row& row : rows) {
    Json o = Json::object();
    RowColumns(row, [&](const Column& c, const auto& v) { o[c.name] = Encode(v); });
    out.push_back(std::move(o));
  }
  return out;
}

template <typename Row>
void DecodeRows(const Json& j, std::vector<Row>& rows) {
  if (!j.is_array()) throw std::invalid_argument("rows that are not an array");
  for (const auto& o : j) {
    Row row{};
    RowColumns(row, [&](const Column& c, auto& v) { Decode(o.at(c.name), v); });
    rows.push_back(std::move(row));
  }
}

}  // namespace

Json RecordToJson(const CoreRecord& r) {
  Json j;
  CoreColumns(r, [&](const Column& c, const auto& v) {
    if (!Derived(c)) j[c.name] = Encode(v);
  });
  j["attributes"] = EncodeRows(r.attributes);
  j["threads"] = EncodeRows(r.threads);
  j["frames"] = EncodeRows(r.frames);
  j["modules"] = EncodeRows(r.modules);
  // Not a column: for the scan's summary of error kinds.
  j["error_kind"] = r.error_kind ? Json(ErrorKindName(*r.error_kind)) : Json(nullptr);
  return j;
}

Expected<CoreRecord> RecordFromJson(const Json& j) {
  try {
    CoreRecord r;
    CoreColumns(r, [&](const Column& c, auto& v) {
      if (!Derived(c)) Decode(j.at(c.name), v);
    });
    DecodeRows(j.at("attributes"), r.attributes);
    DecodeRows(j.at("threads"), r.threads);
    DecodeRows(j.at("frames"), r.frames);
    DecodeRows(j.at("modules"), r.modules);
    if (auto k = j.find("error_kind"); k != j.end() && k->is_string()) r.error_kind = ErrorKindFromName(k->get<std::string>());
    return r;
  } catch (const Json::exception& e) {
    return MakeError(ErrorKind::kMalformed, std::string("record: ") + e.what());
  } catch (const std::invalid_argument& e) {
    return MakeError(ErrorKind::kMalformed, std::string("record: ") + e.what());
  }
}

}  // namespace coroner
