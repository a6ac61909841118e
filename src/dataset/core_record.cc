#include "dataset/core_record.h"

#include "core/crash_line.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "core/core.h"
#include "dataset/signature.h"
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
  std::string Kind() const override { return inner_.Kind(); }
  std::vector<SourceProblem> Problems() const override { return inner_.Problems(); }

 private:
  ByteSource& inner_;
};

template <typename T>
Json Opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

template <typename T>
std::optional<T> GetOpt(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

std::string GetStr(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void FillFromCore(CoreRecord& r, Core& core, const RecordOptions& options, SymbolProvider& symbols) {
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
  if (const Module* exe = core.executable()) r.build_id = exe->build_id;
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
    r.modules.push_back({ValidUtf8(m.path), m.base, m.end, m.build_id, ModuleFileStatusName(m.file_status)});
  }

  // The labels' depth: the crashing thread alone (the diagnosis and the
  // signature need no more, and the other threads' stacks would multiply the
  // bytes read).
  ProcessOptions process;
  process.depth = AnalysisDepth::kLabels;
  process.unwind.max_frames = static_cast<size_t>(std::max(options.max_frames, 1));
  CrashAnalysis analysis = ProcessCore(core, symbols, process);
  const std::optional<FaultContext>& fault = analysis.fault_context;
  if (analysis.diagnosis) {
    r.syndrome = SyndromeName(analysis.diagnosis->syndrome);
    r.context = ContextName(analysis.diagnosis->context);
  }
  if (fault) {
    r.real_signal = fault->signal.signo;
    r.real_si_code = fault->signal.code;
    r.real_fault_address = fault->signal.fault_address;
  }
  std::vector<SignatureFrame> sig_frames;
  if (analysis.crashing_backtrace()) {
    Backtrace& crashing = analysis.backtraces[core.crashing_thread()];
    const size_t base = r.frames.size();
    r.frames.reserve(base + crashing.frames.size());
    sig_frames.reserve(crashing.frames.size());
    // The frames' names move to the rows: nothing reads them after.
    for (auto& f : crashing.frames) {
      FrameRow row;
      row.thread = static_cast<int>(core.crashing_thread());
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
    // The rows hold the frames' names made valid UTF-8 already.
    const Frame* first = crashing.frames.data();
    for (const Frame* f : EffectiveFrames(&crashing, fault)) {
      if (f->signal_trampoline) continue;
      const FrameRow& row = r.frames[base + static_cast<size_t>(f - first)];
      sig_frames.push_back({row.function, row.module, f->trust == FrameTrust::kScan});
    }
  }
  r.signature = MakeSignature(r.syndrome, sig_frames);
  // Last: what is missing includes what the analysis's own reads met (a
  // stream cut, a remote read that failed).
  r.truncated = core.truncated();
  for (const auto& m : core.missing()) r.warnings.push_back(ValidUtf8(m));
  for (const auto& m : core.soft_errors()) r.warnings.push_back(ValidUtf8(m));
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
  struct stat st {};
  if (::stat(input.c_str(), &st) != 0) {
    s.error = std::string("cannot stat: ") + std::strerror(errno);
    return s;
  }
  s.size = static_cast<uint64_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

void ApplyMetadata(CoreRecord& r, const Metadata& md) {
  r.time = md.time;
  r.time_source = md.time_source;
  r.uptime = md.Uptime();
  for (const auto& [k, v] : md.attributes) r.attributes.emplace_back(ValidUtf8(k), ValidUtf8(v));
  for (const auto& w : md.warnings) r.warnings.push_back(ValidUtf8(w));
}

CoreRecord ErrorRecord(const std::string& input, const std::string& error) {
  CoreRecord r;
  r.path = ValidUtf8(input);
  r.status = "error";
  r.error = ValidUtf8(error);
  return r;
}

CoreRecord AnalyzeInput(const std::string& input, const RecordOptions& options, SymbolProvider& symbols) {
  auto start = std::chrono::steady_clock::now();
  CoreRecord r;
  r.path = ValidUtf8(input);
  RemoteFileInfo remote;
  auto source = OpenCoreSource(input, options.max_bytes, &remote);
  if (IsUrl(input)) {
    r.size = remote.size;
    r.mtime_ns = remote.mtime_ns;
  } else {
    InputStamp st = StampInput(input);
    r.size = st.size;
    r.mtime_ns = st.mtime_ns;
  }
  if (!source.ok()) {
    r.status = "error";
    r.error = ValidUtf8(std::string(ErrorKindName(source.error().kind)) + ": " + source.error().message);
  } else {
    // The source outlives the core, so its count is there even when the open fails.
    std::unique_ptr<ByteSource> owned = std::move(*source);
    CoreOptions core_options;
    core_options.sysroot = options.sysroot;
    auto core = Core::Open(std::make_unique<BorrowedSource>(*owned), core_options);
    if (!core.ok()) {
      r.status = "error";
      r.error = ValidUtf8(std::string(ErrorKindName(core.error().kind)) + ": " + core.error().message);
    } else {
      FillFromCore(r, **core, options, symbols);
      // A read that failed (a remote server's error) made this analysis
      // partial in a way the next scan may not repeat: the row is an error,
      // which the next scan retries, never an "ok" row it would skip.
      if ((*core)->read_failed()) {
        r.status = "error";
        for (const auto& p : owned->Problems()) {
          if (p.kind != SourceProblem::Kind::kFailed) continue;
          r.error = ValidUtf8("io: " + p.what);
          break;
        }
      }
    }
    r.bytes_read = owned->BytesRead();
  }
  Metadata md = ReadMetadata(input, r.mtime_ns);
  if (options.inventory) options.inventory->Join(md);
  ApplyMetadata(r, md);
  r.analysis_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
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
    r.status = "error";
    r.error = ValidUtf8(std::string(ErrorKindName(line.error().kind)) + ": " + line.error().message);
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

Json RecordToJson(const CoreRecord& r) {
  Json j;
  j["path"] = r.path;
  j["source"] = r.source;
  j["size"] = Opt(r.size);
  j["mtime_ns"] = Opt(r.mtime_ns);
  j["bytes_read"] = r.bytes_read;
  j["status"] = r.status;
  j["error"] = r.error;
  j["warnings"] = r.warnings;
  j["time"] = Opt(r.time);
  j["uptime"] = Opt(r.uptime);
  j["time_source"] = r.time_source;
  j["pid"] = Opt(r.pid);
  j["comm"] = r.comm;
  j["signal"] = Opt(r.signal);
  j["si_code"] = Opt(r.si_code);
  j["fault_address"] = Opt(r.fault_address);
  j["real_signal"] = Opt(r.real_signal);
  j["real_si_code"] = Opt(r.real_si_code);
  j["real_fault_address"] = Opt(r.real_fault_address);
  j["syndrome"] = r.syndrome;
  j["context"] = r.context;
  j["signature"] = r.signature;
  j["crashing_tid"] = Opt(r.crashing_tid);
  j["exe"] = r.exe;
  j["build_id"] = r.build_id;
  j["truncated"] = r.truncated;
  j["cpu_seconds"] = Opt(r.cpu_seconds);
  j["analysis_ms"] = r.analysis_ms;
  Json attrs = Json::array();
  for (const auto& [k, v] : r.attributes) attrs.push_back({k, v});
  j["attributes"] = attrs;
  Json threads = Json::array();
  for (const auto& t : r.threads) {
    threads.push_back({t.index, t.tid, t.crashing, t.pc, t.sp, t.registers, t.cpu_seconds});
  }
  j["threads"] = threads;
  Json frames = Json::array();
  for (const auto& f : r.frames) {
    frames.push_back({f.thread, f.index, f.pc, f.module, f.build_id, Opt(f.offset), f.function, f.file, f.line,
                      f.trust, f.inlined});
  }
  j["frames"] = frames;
  Json modules = Json::array();
  for (const auto& m : r.modules) modules.push_back({m.path, m.base, m.end, m.build_id, m.status});
  j["modules"] = modules;
  return j;
}

Expected<CoreRecord> RecordFromJson(const Json& j) {
  try {
    CoreRecord r;
    r.path = GetStr(j, "path");
    r.source = GetStr(j, "source");
    r.size = GetOpt<uint64_t>(j, "size");
    r.mtime_ns = GetOpt<int64_t>(j, "mtime_ns");
    r.bytes_read = j.at("bytes_read").get<uint64_t>();
    r.status = GetStr(j, "status");
    r.error = GetStr(j, "error");
    r.warnings = j.at("warnings").get<std::vector<std::string>>();
    r.time = GetOpt<int64_t>(j, "time");
    r.uptime = GetOpt<int64_t>(j, "uptime");
    r.time_source = GetStr(j, "time_source");
    r.pid = GetOpt<int>(j, "pid");
    r.comm = GetStr(j, "comm");
    r.signal = GetOpt<int>(j, "signal");
    r.si_code = GetOpt<int>(j, "si_code");
    r.fault_address = GetOpt<uint64_t>(j, "fault_address");
    r.real_signal = GetOpt<int>(j, "real_signal");
    r.real_si_code = GetOpt<int>(j, "real_si_code");
    r.real_fault_address = GetOpt<uint64_t>(j, "real_fault_address");
    r.syndrome = GetStr(j, "syndrome");
    r.context = GetStr(j, "context");
    r.signature = GetStr(j, "signature");
    r.crashing_tid = GetOpt<int>(j, "crashing_tid");
    r.exe = GetStr(j, "exe");
    r.build_id = GetStr(j, "build_id");
    r.truncated = j.at("truncated").get<bool>();
    r.cpu_seconds = GetOpt<double>(j, "cpu_seconds");
    r.analysis_ms = j.at("analysis_ms").get<double>();
    for (const auto& a : j.at("attributes")) r.attributes.emplace_back(a.at(0).get<std::string>(), a.at(1).get<std::string>());
    for (const auto& t : j.at("threads")) {
      r.threads.push_back({t.at(0).get<int>(), t.at(1).get<int>(), t.at(2).get<bool>(), t.at(3).get<uint64_t>(),
                           t.at(4).get<uint64_t>(), t.at(5).get<std::string>(), t.at(6).get<double>()});
    }
    for (const auto& f : j.at("frames")) {
      FrameRow row;
      row.thread = f.at(0).get<int>();
      row.index = f.at(1).get<int>();
      row.pc = f.at(2).get<uint64_t>();
      row.module = f.at(3).get<std::string>();
      row.build_id = f.at(4).get<std::string>();
      if (!f.at(5).is_null()) row.offset = f.at(5).get<uint64_t>();
      row.function = f.at(6).get<std::string>();
      row.file = f.at(7).get<std::string>();
      row.line = f.at(8).get<int>();
      row.trust = f.at(9).get<std::string>();
      row.inlined = f.at(10).get<bool>();
      r.frames.push_back(std::move(row));
    }
    for (const auto& m : j.at("modules")) {
      r.modules.push_back({m.at(0).get<std::string>(), m.at(1).get<uint64_t>(), m.at(2).get<uint64_t>(),
                           m.at(3).get<std::string>(), m.at(4).get<std::string>()});
    }
    return r;
  } catch (const Json::exception& e) {
    return MakeError(ErrorKind::kMalformed, std::string("record: ") + e.what());
  }
}

}  // namespace coroner
