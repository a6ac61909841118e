#include "report/core_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/byte_view.h"
#include "core/signals.h"
#include "diagnose/peer_failure.h"
#include "processor/process_identity.h"
#include "report/diagnosis_words.h"
#include "report/value_printer.h"
#include "text/json_writer.h"
#include "unwind/frame_variables.h"

namespace coroner {


namespace {

// ", checkpoint_writ": a live snapshot's thread name, for the thread lines.
std::string ThreadNameText(const Thread& t) { return t.name.empty() ? "" : ", " + EscapedLine(t.name); }

std::string Text(const std::string& s) { return ValidUtf8(s); }

void HexOrNull(JsonWriter& w, const std::optional<uint64_t>& v) { v ? w.String(ShownWord(*v)) : w.Null(); }
// A string, or null when it is empty.
void TextOrNull(JsonWriter& w, const std::string& s) { s.empty() ? w.Null() : w.String(Text(s)); }
void IntOrNull(JsonWriter& w, const std::optional<int64_t>& v) { v ? w.Int(*v) : w.Null(); }

void WriteSignal(JsonWriter& w, const std::optional<SignalInfo>& s) {
  if (!s) return w.Null();
  w.BeginObject();
  w.Key("number").Int(s->signo);
  w.Key("name").String(SignalName(s->signo));
  w.Key("code").Int(s->code);
  w.Key("code_name").StringOrNull(SignalCodeName(s->signo, s->code));
  w.Key("fault_address");
  HexOrNull(w, s->fault_address);
  w.Key("errno").Int(s->err);
  w.Key("sender_pid");
  s->sender_pid ? w.Int(*s->sender_pid) : w.Null();
  const char* from = "NT_SIGINFO";
  switch (s->source) {
    case SignalInfo::Source::kSiginfoNote: from = "NT_SIGINFO"; break;
    case SignalInfo::Source::kPrstatus: from = "NT_PRSTATUS"; break;
    case SignalInfo::Source::kSignalFrame: from = "signal frame siginfo"; break;
    case SignalInfo::Source::kSigcontext: from = "signal frame sigcontext"; break;
  }
  w.Key("from").String(from);
  w.EndObject();
}

const char* BuildIdSourceName(Module::BuildIdSource s) {
  switch (s) {
    case Module::BuildIdSource::kCore: return "core";
    case Module::BuildIdSource::kFile: return "file";
    case Module::BuildIdSource::kNone: return nullptr;
  }
  return nullptr;
}

void WriteInstructions(JsonWriter& w, const std::vector<Instruction>& ins) {
  w.BeginArray();
  for (const auto& i : ins) {
    w.BeginObject();
    w.Key("address").String(ShownWord(i.address));
    w.Key("bytes").String(i.bytes);
    w.Key("text").String(i.text);
    w.Key("current").Bool(i.current);
    w.EndObject();
  }
  w.EndArray();
}

void AddInstructions(std::string& out, const std::vector<Instruction>& ins) {
  for (const auto& i : ins) {
    out += fmt::format("{} {:#014x}:  {:<24} {}\n", i.current ? "=>" : "  ", i.address, i.bytes, i.text);
  }
}

void WriteVariables(JsonWriter& w, const std::vector<Variable>& vars) {
  w.BeginArray();
  for (const auto& v : vars) {
    w.BeginObject();
    w.Key("name").String(Text(v.name));
    w.Key("type").String(Text(v.type));
    w.Key("value");
    v.value ? w.String(Text(PrintValue(*v.value))) : w.Null();
    if (!v.value) w.Key("unavailable").String(v.unavailable);
    w.EndObject();
  }
  w.EndArray();
}

void WriteFrame(JsonWriter& w, const Frame& f) {
  w.BeginObject();
  w.Key("index").UInt(f.index);
  w.Key("pc").String(ShownWord(f.pc));
  w.Key("function");
  TextOrNull(w, f.function);
  w.Key("module");
  f.module ? w.String(Text(f.module->module->path)) : w.Null();
  w.Key("jit").Bool(f.jit);
  w.Key("offset");
  HexOrNull(w, f.offset);
  w.Key("file");
  TextOrNull(w, f.file);
  w.Key("line");
  f.line > 0 ? w.Int(f.line) : w.Null();
  w.Key("inlined").Bool(f.inlined);
  w.Key("trust").String(FrameTrustName(f.trust));
  w.Key("kind").String(f.trust == FrameTrust::kPython ? "python" : "native");
  w.Key("sp").String(ShownWord(f.sp));
  w.Key("signal_frame").Bool(f.signal_trampoline);
  if (f.variables_read) {
    w.Key("args");
    WriteVariables(w, f.args);
    w.Key("locals");
    WriteVariables(w, f.locals);
  }
  if (f.disassembly) {
    w.Key("disassembly");
    WriteInstructions(w, *f.disassembly);
  }
  w.EndObject();
}

void WriteStrings(JsonWriter& w, const std::vector<std::string>& v) {
  w.BeginArray();
  for (const auto& s : v) w.String(Text(s));
  w.EndArray();
}

void WriteDiagnosis(JsonWriter& w, const Diagnosis& d, const std::string& signature) {
  auto opt = [&w](const std::optional<std::string>& v) { v ? w.String(Text(*v)) : w.Null(); };
  w.BeginObject();
  w.Key("syndrome").String(SyndromeName(d.syndrome));
  w.Key("context").String(ContextName(d.context));
  w.Key("summary").String(Text(Summary(d)));
  w.Key("evidence");
  WriteStrings(w, EvidenceSentences(d));
  w.Key("next_steps");
  WriteStrings(w, NextSteps(d));
  w.Key("faulting_instruction");
  d.faulting_instruction.empty() ? w.Null() : w.String(d.faulting_instruction);
  w.Key("null_register");
  d.null_register ? w.String(SizedRegName(*d.null_register)) : w.Null();
  w.Key("abort_message");
  opt(d.abort_message);
  w.Key("exception_type");
  opt(d.exception_type);
  w.Key("exception_what");
  opt(d.exception_what);
  w.Key("unwinder");
  opt(d.unwinder);
  w.Key("possible_bit_flips").BeginArray();
  for (const auto& f : d.possible_bit_flips) {
    w.BeginObject();
    w.Key("source").String(f.source);
    w.Key("value").String(ShownWord(f.value));
    w.Key("original").String(ShownWord(f.original));
    w.Key("bit").Int(f.bit);
    w.Key("confidence").String(f.high_confidence ? "high" : "medium");
    w.EndObject();
  }
  w.EndArray();
  w.Key("impossible_state");
  d.impossible_state ? w.String(Text(EvidenceSentence(*d.impossible_state))) : w.Null();
  w.Key("peer_failure");
  opt(PeerFailure(d));
  w.Key("gpu_runtime");
  TextOrNull(w, d.gpu_runtime);
  w.Key("red_zone").BeginArray();
  for (const auto& z : d.red_zone) {
    w.BeginObject();
    w.Key("offset").Int(z.offset);
    w.Key("value").String(ShownWord(z.value));
    w.Key("meaning").String(Text(RedZoneMeaning(z)));
    w.EndObject();
  }
  w.EndArray();
  w.Key("registers").BeginObject();
  for (const auto& r : d.registers) {
    w.Key(RegName(r.reg)).BeginObject();
    w.Key("value").String(ShownWord(r.value));
    w.Key("kind").String(AddressKindName(r.kind));
    w.Key("detail").String(Text(RegisterDetail(r)));
    w.EndObject();
  }
  w.EndObject();
  w.Key("thread_groups").BeginArray();
  for (const auto& g : d.thread_groups) {
    w.BeginObject();
    w.Key("function").String(Text(g.function));
    w.Key("state").String(ThreadStateName(g.state));
    w.Key("threads").UInt(g.tids.size());
    w.Key("tids").BeginArray();
    for (int tid : g.tids) w.Int(tid);
    w.EndArray();
    w.Key("with_crashing_thread").Bool(g.with_crashing_thread);
    w.EndObject();
  }
  w.EndArray();
  w.Key("signature").String(signature);
  w.EndObject();
}

// The interpreter and its threads; their frames are in threads[].frames.
void WritePython(JsonWriter& w, const PythonState& p) {
  w.BeginObject();
  w.Key("version");
  p.version.empty() ? w.Null() : w.String(p.version);
  w.Key("module").String(Text(p.module));
  w.Key("error");
  TextOrNull(w, p.error);
  w.Key("threads").BeginArray();
  for (const auto& t : p.threads) {
    w.BeginObject();
    w.Key("tid").UInt(t.tid);
    w.Key("holds_gil").Bool(t.holds_gil);
    w.Key("frames").UInt(t.frames.size());
    w.Key("stop_reason");
    TextOrNull(w, t.stop_reason);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

// One line on the interpreter: its version, the GIL's holder, and what
// could not be read.
std::string PythonLine(const PythonState& p) {
  std::string s = "python: CPython " + (p.version.empty() ? std::string("(version unknown)") : p.version) + ", " +
                  std::to_string(p.threads.size()) + (p.threads.size() == 1 ? " Python thread" : " Python threads");
  for (const auto& t : p.threads) {
    if (t.holds_gil) s += ", the GIL held by LWP " + std::to_string(t.tid);
  }
  if (!p.error.empty()) s += "; " + Text(p.error);
  return s;
}

// The module map's entry for `m`, by address (both are sorted by base): a
// core may list 100,000 mappings, and a search per module must not be linear.
const MappedModule* FindMapped(const ModuleMap* map, const Module& m) {
  if (!map) return nullptr;
  const MappedModule* mm = map->Find(m.base);
  return mm && mm->module == &m ? mm : nullptr;
}

void WriteJob(JsonWriter& w, const std::optional<JobIdentity>& job) {
  if (!job) return w.Null();
  w.BeginObject();
  w.Key("launcher").String(job->launcher);
  w.Key("job_id").String(Text(job->job_id));
  w.Key("cluster");
  TextOrNull(w, job->cluster);
  w.Key("step");
  job->step ? w.String(Text(*job->step)) : w.Null();
  w.Key("restart");
  IntOrNull(w, job->restart);
  w.Key("elastic_restart");
  IntOrNull(w, job->elastic_restart);
  w.Key("rank");
  IntOrNull(w, job->rank);
  w.Key("world_size");
  IntOrNull(w, job->world_size);
  w.Key("local_rank");
  IntOrNull(w, job->local_rank);
  w.Key("node");
  TextOrNull(w, job->node);
  w.Key("gpus");
  TextOrNull(w, job->gpus);
  w.EndObject();
}

// What of the command line and environment could not be read, for
// `missing`; nothing for a snapshot without an AT_EXECFN to start from (a
// crash line).
std::string IdentityMissing(const CrashAnalysis& a) {
  if (!a.identity || a.identity->missing.empty() || !a.core->auxv().execfn_addr) return "";
  return "command line and environment: " + a.identity->missing;
}

// The whole command line, its arguments joined by spaces as ps shows them.
std::string CommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace

std::vector<std::string> RegisterGrid(const Registers& regs) {
  std::vector<std::string> rows;
  std::string row;
  int n = 0;
  for (Reg r : RegDisplayOrder(regs.arch)) {
    row += fmt::format("  {:<9}{}", RegName(r), ShownWord(regs[r], 16));
    if (++n % 3 == 0) rows.push_back(std::exchange(row, {}));
  }
  if (!row.empty()) rows.push_back(row);
  return rows;
}

std::vector<std::string> VariableLines(const Frame& f) {
  std::vector<std::string> out;
  if (!f.variables_read) return out;
  auto line = [](const Variable& v) {
    return Text(v.name) + " = " + (v.value ? Text(PrintValue(*v.value)) : "<unavailable: " + v.unavailable + ">");
  };
  if (!f.args.empty()) {
    std::string args = "arguments: ";
    for (size_t i = 0; i < f.args.size(); ++i) args += (i ? ", " : "") + line(f.args[i]);
    out.push_back(args);
  }
  if (f.locals.empty()) out.push_back("No locals.");
  for (const auto& v : f.locals) out.push_back(line(v));
  return out;
}

std::string FrameLine(const Frame& f) {
  if (f.trust == FrameTrust::kPython) {
    return fmt::format("#{:<2} {} ({}:{}) [python]", f.index, Text(f.function), Text(f.file), f.line);
  }
  if (f.signal_trampoline) return fmt::format("#{:<2} {} <signal handler called>", f.index, ShownWord(f.pc, 16));
  std::string s = fmt::format("#{:<2} {} in {}", f.index, ShownWord(f.pc, 16), f.function.empty() ? "??" : Text(f.function));
  if (f.jit) s += " (JIT code)";
  if (f.module) {
    s += " (" + Text(f.module->module->path);
    if (f.function.empty() && f.offset) s += "+" + ShownWord(*f.offset);
    s += ")";
  }
  if (!f.file.empty()) s += fmt::format(" at {}:{}", Text(f.file), f.line);
  if (f.inlined) s += " [inlined]";
  if (f.trust == FrameTrust::kScan) s += " [found by stack scan]";
  if (f.trust == FrameTrust::kFp) s += " [found by frame pointer]";
  if (f.trust == FrameTrust::kTailCall) s += " [tail call]";
  return s;
}

std::string JobLine(const JobIdentity& job) {
  std::string out = job.launcher + " job " + job.job_id;
  if (job.step) out += " step " + *job.step;
  if (job.restart && *job.restart > 0) out += " restart " + std::to_string(*job.restart);
  if (job.elastic_restart && *job.elastic_restart > 0)
    out += " elastic restart " + std::to_string(*job.elastic_restart);
  if (!job.cluster.empty()) out += " on cluster " + job.cluster;
  if (job.rank) {
    out += ", rank " + std::to_string(*job.rank);
    if (job.world_size) out += " of " + std::to_string(*job.world_size);
  }
  if (job.local_rank) out += " (local " + std::to_string(*job.local_rank) + ")";
  if (!job.node.empty()) out += " on node " + job.node;
  if (!job.gpus.empty()) out += ", GPUs " + job.gpus;
  return out;
}

namespace {

// The analyze JSON's parts, in its order (docs/analyze-json.md).
void WriteCoreJson(JsonWriter& w, const CrashAnalysis& analysis) {
  const Core& core = *analysis.core;
  w.Key("core").BeginObject();
  w.Key("path").String(Text(analysis.path));
  w.Key("size");
  core.size() ? w.UInt(*core.size()) : w.Null();
  w.Key("bytes_read").UInt(core.bytes_read());
  w.Key("truncated").Bool(core.truncated());
  w.Key("missing").BeginArray();
  for (const auto& m : core.missing()) w.String(Text(m));
  if (std::string m = IdentityMissing(analysis); !m.empty()) w.String(Text(m));
  w.EndArray();
  w.Key("soft_errors");
  WriteStrings(w, core.soft_errors());
  w.EndObject();
}

// A live snapshot's own facts: null for a core file.
void WriteSnapshotJson(JsonWriter& w, const Core& core) {
  const auto& live = core.live();
  if (!live) {
    w.Null();
    return;
  }
  w.BeginObject();
  w.Key("pid").Int(live->pid);
  w.Key("stopped_ms").Double(live->stopped_ms);
  w.Key("threads").UInt(live->threads.size());
  w.Key("not_stopped").BeginArray();
  for (const auto& t : live->not_stopped) {
    w.BeginObject();
    w.Key("tid").Int(t.tid);
    w.Key("state").String(std::string(1, t.state ? t.state : '?'));
    w.Key("name").String(Text(t.name));
    w.EndObject();
  }
  w.EndArray();
  w.Key("exited").BeginArray();
  for (int tid : live->exited) w.Int(tid);
  w.EndArray();
  w.EndObject();
}

void WriteProcessJson(JsonWriter& w, const CrashAnalysis& analysis) {
  const Core& core = *analysis.core;
  const auto& identity = analysis.identity;
  w.Key("process").BeginObject();
  std::optional<std::string> args;
  if (const auto& pi = core.process()) {
    w.Key("pid").Int(pi->pid);
    w.Key("ppid").Int(pi->ppid);
    w.Key("uid").Int(pi->uid);
    w.Key("comm").String(ValidUtf8KeepingControls(pi->comm));
    args = ValidUtf8KeepingControls(ScrubbedPsargs(pi->args));
  } else {
    w.Key("pid");
    core.threads().empty() ? w.Null() : w.Int(core.threads()[0].tid);
    w.Key("ppid").Null();
    w.Key("uid").Null();
    w.Key("comm").Null();
  }
  if (identity && !identity->argv.empty()) args = ValidUtf8KeepingControls(CommandLine(identity->argv));
  w.Key("args").StringOrNull(args);
  w.Key("exe");
  TextOrNull(w, core.exe_path());
  // Only the variables the environment policy keeps; the others counted.
  if (identity && identity->environment_read) {
    w.Key("environment").BeginObject();
    for (const auto& [name, value] : identity->environment) w.Key(Text(name)).String(ValidUtf8KeepingControls(value));
    w.EndObject();
    w.Key("environment_hidden").UInt(identity->environment_hidden);
  } else {
    w.Key("environment").Null();
    w.Key("environment_hidden").Null();
  }
  w.EndObject();
}

// Thread k: its registers, state and frames, and the fault context behind
// a re-raised signal in the crashing one.
void WriteThreadJson(JsonWriter& w, const CrashAnalysis& analysis, size_t k) {
  const auto& d = analysis.diagnosis;
  const Backtrace& bt = analysis.threads[k];
  const Thread& t = *bt.thread;
  w.BeginObject();
  w.Key("tid").Int(t.tid);
  // A live snapshot's: the thread's name and its state as it ran.
  w.Key("name");
  analysis.core->live() ? w.String(Text(t.name)) : w.Null();
  w.Key("run_state");
  analysis.core->live() && t.run_state ? w.String(std::string(1, t.run_state)) : w.Null();
  w.Key("registers");
  WriteRegistersJson(w, t.registers);
  w.Key("utime_us").UInt(t.utime_us);
  w.Key("stime_us").UInt(t.stime_us);
  w.Key("mxcsr");
  t.fpregs ? w.String(ShownWord(t.fpregs->mxcsr)) : w.Null();
  w.Key("xstate_size");
  t.xstate_size ? w.UInt(*t.xstate_size) : w.Null();
  w.Key("state");
  d && k < d->thread_states.size() ? w.String(ThreadStateName(d->thread_states[k])) : w.Null();
  w.Key("lock_wait");
  if (const LockWait* lw = d ? LockWaitOf(*d, t.tid) : nullptr) {
    w.BeginObject();
    w.Key("mutex").String(ShownWord(lw->mutex));
    w.Key("mutex_name");
    TextOrNull(w, lw->mutex_name);
    w.Key("owner");
    lw->owner ? w.Int(lw->owner) : w.Null();
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("spin");
  if (const SpinWait* sw = d ? SpinWaitOf(*d, t.tid) : nullptr) {
    w.BeginObject();
    w.Key("word");
    sw->word ? w.String(ShownWord(*sw->word)) : w.Null();
    w.Key("word_name");
    TextOrNull(w, sw->word_name);
    w.Key("word_offset").UInt(sw->word_offset);
    w.Key("value");
    sw->value ? w.UInt(*sw->value) : w.Null();
    w.Key("width").UInt(sw->width);
    w.Key("instruction").String(sw->instruction);
    w.Key("pauses").Bool(sw->pauses);
    w.EndObject();
  } else {
    w.Null();
  }
  w.Key("frames").BeginArray();
  if (analysis.modules) {  // unwound (not --registers-only)
    for (const auto& f : bt.frames) WriteFrame(w, f);
  }
  w.EndArray();
  if (analysis.modules) w.Key("stop_reason").String(StopReasonText(bt.stop_reason));
  if (&bt == analysis.crashing_backtrace() && analysis.fault_context) {
    const FaultContext& fc = *analysis.fault_context;
    w.Key("fault_context").BeginObject();
    w.Key("registers");
    WriteRegistersJson(w, fc.registers);
    w.Key("signal");
    WriteSignal(w, fc.signal);
    w.Key("frame_address").String(ShownWord(fc.frame_address));
    if (fc.esr) {
      w.Key("esr").BeginObject();
      w.Key("value").String(ShownWord(*fc.esr));
      w.Key("meaning").String(EsrDescription(*fc.esr));
      w.EndObject();
    }
    w.Key("disassembly");
    WriteInstructions(w, analysis.fault_disassembly);
    w.EndObject();
  }
  w.EndObject();
}

// A module: where it is, its build-id and the files found for it.
void WriteModuleJson(JsonWriter& w, const CrashAnalysis& analysis, const Module& m) {
  w.BeginObject();
  w.Key("path").String(Text(m.path));
  w.Key("base").String(ShownWord(m.base));
  w.Key("end").String(ShownWord(m.end));
  w.Key("build_id");
  m.build_id.empty() ? w.Null() : w.String(m.build_id);
  w.Key("build_id_source");
  const char* src = BuildIdSourceName(m.build_id_source);
  src ? w.String(src) : w.Null();
  const MappedModule* mm = FindMapped(analysis.modules.get(), m);
  w.Key("status");
  if (mm && mm->path_mismatched) w.String("mismatched");
  else if (m.is_vdso) w.String("ok");
  else if (m.file_status == ModuleFileStatus::kUnchecked) w.Null();
  else w.String(ModuleFileStatusName(m.file_status));
  w.Key("package");
  if (m.package) {
    const PackageNote& p = *m.package;
    w.BeginObject();
    using Member = std::pair<const char*, const std::string*>;
    const Member members[] = {{"type", &p.type}, {"name", &p.name}, {"version", &p.version},
                              {"architecture", &p.architecture}, {"os", &p.os}, {"os_version", &p.os_version},
                              {"debug_info_url", &p.debug_info_url}};
    for (const Member& member : members) {
      w.Key(member.first);
      TextOrNull(w, *member.second);
    }
    w.EndObject();
  } else {
    w.Null();
  }
  if (mm) {
    auto or_null = [&w](const std::string& v) { TextOrNull(w, v); };
    bool has_binary = mm->image && !mm->image->binary_path().empty();
    bool has_debug = mm->image && (mm->image->has_dwarf() || mm->image->has_symtab()) && !mm->debug_found_by.empty();
    w.Key("symbols").BeginObject();
    w.Key("binary");
    has_binary ? or_null(mm->image->binary_path()) : w.Null();
    w.Key("binary_found_by");
    or_null(mm->binary_found_by);
    w.Key("debug_file");
    has_debug ? or_null(mm->image->debug_path()) : w.Null();
    w.Key("debug_found_by");
    has_debug ? or_null(mm->debug_found_by) : w.Null();
    w.Key("debug_cache");
    mm->image ? or_null(mm->image->debug_cache_path()) : w.Null();
    w.EndObject();
  }
  w.EndObject();
}

void WriteMappingsJson(JsonWriter& w, const Core& core) {
  w.Key("mappings").BeginArray();
  for (const auto& f : core.files()) {
    w.BeginObject();
    w.Key("start").String(ShownWord(f.start));
    w.Key("end").String(ShownWord(f.end));
    w.Key("offset").String(ShownWord(f.offset));
    w.Key("path").String(Text(f.path));
    w.EndObject();
  }
  w.EndArray();
}

void WriteAuxvJson(JsonWriter& w, const Core& core) {
  const Auxv& a = core.auxv();
  w.Key("auxv").BeginObject();
  w.Key("execfn");
  a.execfn ? w.String(Text(*a.execfn)) : w.Null();
  w.Key("platform");
  a.platform ? w.String(Text(*a.platform)) : w.Null();
  w.Key("entry");
  HexOrNull(w, a.entry);
  w.Key("phdr");
  HexOrNull(w, a.phdr);
  w.Key("base");
  HexOrNull(w, a.base);
  w.Key("pagesz");
  a.pagesz ? w.UInt(*a.pagesz) : w.Null();
  w.Key("hwcap");
  HexOrNull(w, a.hwcap);
  w.Key("hwcap2");
  HexOrNull(w, a.hwcap2);
  w.Key("sysinfo_ehdr");
  HexOrNull(w, a.sysinfo_ehdr);
  w.EndObject();
}
}  // namespace

std::string CoreToJson(const CrashAnalysis& analysis) {
  HiddenWordsScope hidden(HiddenWords(analysis));
  const Core& core = *analysis.core;
  std::string out;
  out.reserve(64 * 1024);
  JsonWriter w(out);
  w.BeginObject();
  w.Key("version").Int(kAnalyzeJsonVersion);
  WriteCoreJson(w, analysis);
  WriteProcessJson(w, analysis);
  w.Key("job");
  WriteJob(w, analysis.identity ? analysis.identity->job : std::nullopt);
  w.Key("signal");
  WriteSignal(w, core.signal());
  w.Key("snapshot");
  WriteSnapshotJson(w, core);
  // No signal, no crashing thread: a snapshot's first thread is its main one.
  w.Key("crashing_thread");
  core.threads().empty() || !core.signal() ? w.Null() : w.UInt(core.crashing_thread());
  w.Key("threads").BeginArray();
  for (size_t k = 0; k < analysis.threads.size(); ++k) WriteThreadJson(w, analysis, k);
  w.EndArray();
  w.Key("modules").BeginArray();
  for (const auto& m : core.modules()) WriteModuleJson(w, analysis, m);
  w.EndArray();
  WriteMappingsJson(w, core);
  WriteAuxvJson(w, core);
  w.Key("diagnosis");
  analysis.diagnosis ? WriteDiagnosis(w, *analysis.diagnosis, analysis.signature) : w.Null();
  w.Key("python");
  analysis.python ? WritePython(w, *analysis.python) : w.Null();
  w.Key("gpu_state").BeginArray();
  for (const auto& g : analysis.gpu_state) w.String(Text(GpuStateText(g)));
  w.EndArray();
  w.EndObject();
  return out;
}

std::string ErrorToJson(const std::string& path, const Error& error) {
  std::string out;
  JsonWriter w(out);
  w.BeginObject();
  w.Key("version").Int(kAnalyzeJsonVersion);
  w.Key("core").BeginObject();
  w.Key("path").String(Text(path));
  if (error.kind == ErrorKind::kTruncated) w.Key("truncated").Bool(true);  // cut, whatever it decoded
  w.EndObject();
  w.Key("error").BeginObject();
  w.Key("kind").String(ErrorKindName(error.kind));
  w.Key("message").String(Text(error.message));
  w.EndObject();
  w.EndObject();
  return out;
}

std::string CoreToText(const CrashAnalysis& analysis) {
  HiddenWordsScope hidden(HiddenWords(analysis));
  const Core& core = *analysis.core;
  const std::string& path = analysis.path;
  std::string out;
  auto add = [&out](std::string s) {
    out += s;
    out += '\n';
  };
  add(fmt::format("core: {}", Text(path)));
  std::string size = core.size() ? std::to_string(*core.size()) : "unknown";
  add(fmt::format("  size {} bytes, read {} bytes{}", size, core.bytes_read(),
                  core.truncated() ? ", TRUNCATED" : ""));
  for (const auto& m : core.missing()) add("  missing: " + Text(m));
  if (std::string m = IdentityMissing(analysis); !m.empty()) add("  missing: " + Text(m));
  for (const auto& m : core.soft_errors()) add("  warning: " + Text(m));
  if (const auto& live = core.live()) {
    add(fmt::format("snapshot: pid {}, {} threads held for {:.2f} ms, then let go", live->pid, live->threads.size(),
                    live->stopped_ms));
    for (const auto& t : live->not_stopped) {
      add(fmt::format("  not stopped: thread {} ({}, state {}): it waits in the kernel and could not be held; its registers are not here",
                      t.tid, EscapedLine(t.name), t.state ? t.state : '?'));
    }
    for (int tid : live->exited) add(fmt::format("  exited: thread {} ended while the snapshot was taken", tid));
  }
  if (const auto& p = core.process()) {
    const auto& id = analysis.identity;
    std::string args = id && !id->argv.empty() ? CommandLine(id->argv) : ScrubbedPsargs(p->args);
    add(fmt::format("process: pid {} ({}) uid {}: {}", p->pid, EscapedLine(p->comm), p->uid, EscapedLine(args)));
  }
  if (analysis.identity && analysis.identity->job) add("job: " + EscapedLine(JobLine(*analysis.identity->job)));
  std::string exe = core.exe_path();
  if (!exe.empty()) add("executable: " + Text(exe));
  if (const auto& s = core.signal()) {
    auto code = SignalCodeName(s->signo, s->code);
    std::string line = fmt::format("signal: {} ({}), code {} ({})", SignalName(s->signo), s->signo,
                                   s->code, code ? *code : "unknown");
    // NT_PRSTATUS's pr_info has the signal number alone (the kernel and
    // qemu-user leave its code 0): no code is known.
    if (s->source == SignalInfo::Source::kPrstatus && s->code == 0)
      line = fmt::format("signal: {} ({}), code unknown (the core has no siginfo)", SignalName(s->signo), s->signo);
    if (s->fault_address) line += ", fault address " + ShownWord(*s->fault_address);
    if (s->sender_pid) line += fmt::format(", sent by pid {}", *s->sender_pid);
    add(line);
  }
  if (const auto& fc = analysis.fault_context) {
    auto code = SignalCodeName(fc->signal.signo, fc->signal.code);
    std::string line = fmt::format("real fault, from the signal frame at {}: {} ({}), code {} ({})",
                                   ShownWord(fc->frame_address), SignalName(fc->signal.signo), fc->signal.signo,
                                   fc->signal.code, code ? *code : "unknown");
    if (fc->signal.fault_address) line += ", fault address " + ShownWord(*fc->signal.fault_address);
    if (fc->esr) line += ", ESR " + ShownWord(*fc->esr) + " (" + EsrDescription(*fc->esr) + ")";
    add(line);
    add(fmt::format("  at {} {} {} {}; a handler caught it and {}", RegName(fc->registers.pc_reg()),
                    ShownWord(fc->registers.pc()), RegName(fc->registers.sp_reg()), ShownWord(fc->registers.sp()),
                    core.signal() ? HandlerEnding(*core.signal(), fc->signal) : "ended the process"));
  }
  if (const auto& d = analysis.diagnosis) {
    add(fmt::format("diagnosis: {} ({})", SyndromeName(d->syndrome), ContextName(d->context)));
    add("  signature: " + Text(analysis.signature));
    add("  " + Text(Summary(*d)));
    for (const auto& e : d->evidence) add("  - " + Text(EvidenceSentence(e)));
  }
  if (analysis.python) add(PythonLine(*analysis.python));
  for (const auto& g : analysis.gpu_state) add("gpu state: " + Text(GpuStateText(g)));
  add(fmt::format("threads: {}", core.threads().size()));
  for (size_t i = 0; i < core.threads().size(); ++i) {
    const Thread& t = core.threads()[i];
    add(fmt::format("thread {} (LWP {}{}){}: {} {} {} {}", i, t.tid, ThreadNameText(t),
                    i == core.crashing_thread() && core.signal() ? " [crashed]" : "",
                    RegName(t.registers.pc_reg()), ShownWord(t.registers.pc()), RegName(t.registers.sp_reg()),
                    ShownWord(t.registers.sp())));
  }
  if (!core.threads().empty()) {
    const Thread& t = core.threads()[core.crashing_thread()];
    add(fmt::format("registers of the {} thread (LWP {}):", core.signal() ? "crashing" : "main", t.tid));
    for (const auto& row : RegisterGrid(t.registers)) add(row);
  }
  for (size_t i = 0; analysis.modules && i < analysis.threads.size(); ++i) {
    const Backtrace& bt = analysis.threads[i];
    add(fmt::format("\nthread {} (LWP {}{}){}:", i, bt.thread->tid, ThreadNameText(*bt.thread),
                    &bt == analysis.crashing_backtrace() && core.signal() ? " crashed" : ""));
    if (const LockWait* lw = analysis.diagnosis ? LockWaitOf(*analysis.diagnosis, bt.thread->tid) : nullptr) {
      add("   waits for " + Text(LockWaitText(*lw)));
    }
    if (const SpinWait* sw = analysis.diagnosis ? SpinWaitOf(*analysis.diagnosis, bt.thread->tid) : nullptr) {
      add("   spins on " + Text(SpinWaitText(*sw)));
    }
    for (const auto& f : bt.frames) {
      add(FrameLine(f));
      for (const auto& line : VariableLines(f)) add("        " + line);
    }
    if (bt.stop_reason.kind != StopReason::Kind::kNone) add("   (" + StopReasonText(bt.stop_reason) + ")");
    if (analysis.python) {
      for (const auto& pt : analysis.python->threads) {
        if (pt.tid == static_cast<uint64_t>(bt.thread->tid) && !pt.stop_reason.empty()) {
          add("   (its Python frames end early: " + Text(pt.stop_reason) + ")");
        }
      }
    }
  }
  if (analysis.modules && !analysis.threads.empty()) add("");
  const std::vector<Instruction>& crash_ins = CrashingInstructions(analysis);
  if (!crash_ins.empty()) {
    add(analysis.fault_context ? "crashing instruction (the real fault):" : "crashing instruction:");
    AddInstructions(out, crash_ins);
    add("");
  }
  add(fmt::format("modules: {}", core.modules().size()));
  for (const auto& m : core.modules()) {
    std::string status = m.is_vdso ? "in core" : ModuleFileStatusName(m.file_status);
    std::string package = m.package ? " " + Text(m.package->name) + (m.package->version.empty() ? "" : " " + Text(m.package->version)) : "";
    add(fmt::format("  {:#014x}-{:#014x} {} {} [{}]{}", m.base, m.end,
                    m.build_id.empty() ? std::string("(no build-id)") : m.build_id, Text(m.path), status, package));
  }
  return out;
}

}  // namespace coroner
