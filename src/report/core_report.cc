#include "report/core_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "core/byte_view.h"
#include "core/signals.h"
#include "diagnose/peer_failure.h"
#include "report/diagnosis_words.h"
#include "report/value_printer.h"
#include "unwind/frame_variables.h"

namespace coroner {

using Json = nlohmann::ordered_json;

Json RegistersJson(const Registers& r) {
  Json j = Json::object();
  for (Reg reg : kRegDisplayOrder) j[std::string(RegName(reg))] = Hex(r[reg]);
  return j;
}

namespace {

std::string Text(const std::string& s) { return ValidUtf8(s); }

Json HexOrNull(const std::optional<uint64_t>& v) { return v ? Json(Hex(*v)) : Json(nullptr); }

Json SignalJson(const std::optional<SignalInfo>& s) {
  if (!s) return nullptr;
  Json j;
  j["number"] = s->signo;
  j["name"] = SignalName(s->signo);
  j["code"] = s->code;
  auto code_name = SignalCodeName(s->signo, s->code);
  j["code_name"] = code_name ? Json(*code_name) : Json(nullptr);
  j["fault_address"] = HexOrNull(s->fault_address);
  j["errno"] = s->err;
  j["sender_pid"] = s->sender_pid ? Json(*s->sender_pid) : Json(nullptr);
  switch (s->source) {
    case SignalInfo::Source::kSiginfoNote: j["from"] = "NT_SIGINFO"; break;
    case SignalInfo::Source::kPrstatus: j["from"] = "NT_PRSTATUS"; break;
    case SignalInfo::Source::kSignalFrame: j["from"] = "signal frame siginfo"; break;
    case SignalInfo::Source::kSigcontext: j["from"] = "signal frame sigcontext"; break;
  }
  return j;
}



const char* BuildIdSourceName(Module::BuildIdSource s) {
  switch (s) {
    case Module::BuildIdSource::kCore: return "core";
    case Module::BuildIdSource::kFile: return "file";
    case Module::BuildIdSource::kNone: return nullptr;
  }
  return nullptr;
}


Json InstructionsJson(const std::vector<Instruction>& ins) {
  Json a = Json::array();
  for (const auto& i : ins) {
    a.push_back(Json{{"address", Hex(i.address)}, {"bytes", i.bytes}, {"text", i.text}, {"current", i.current}});
  }
  return a;
}

void AddInstructions(std::string& out, const std::vector<Instruction>& ins) {
  for (const auto& i : ins) {
    out += fmt::format("{} {:#014x}:  {:<24} {}\n", i.current ? "=>" : "  ", i.address, i.bytes, i.text);
  }
}

Json FrameJson(const Frame& f) {
  Json j;
  j["index"] = f.index;
  j["pc"] = Hex(f.pc);
  j["function"] = f.function.empty() ? Json(nullptr) : Json(Text(f.function));
  j["module"] = f.module ? Json(Text(f.module->module->path)) : Json(nullptr);
  j["jit"] = f.jit;
  j["offset"] = HexOrNull(f.offset);
  j["file"] = f.file.empty() ? Json(nullptr) : Json(Text(f.file));
  j["line"] = f.line > 0 ? Json(f.line) : Json(nullptr);
  j["inlined"] = f.inlined;
  j["trust"] = FrameTrustName(f.trust);
  j["kind"] = f.trust == FrameTrust::kPython ? "python" : "native";
  j["sp"] = Hex(f.sp);
  j["signal_frame"] = f.signal_trampoline;
  if (f.variables_read) {
    auto variables = [](const std::vector<Variable>& vars) {
      Json a = Json::array();
      for (const auto& v : vars) {
        Json o{{"name", Text(v.name)}, {"type", Text(v.type)}, {"value", v.value ? Json(Text(PrintValue(*v.value))) : Json(nullptr)}};
        if (!v.value) o["unavailable"] = v.unavailable;
        a.push_back(std::move(o));
      }
      return a;
    };
    j["args"] = variables(f.args);
    j["locals"] = variables(f.locals);
  }
  return j;
}

Json DiagnosisJson(const Diagnosis& d) {
  auto strings = [](const std::vector<std::string>& v) {
    Json a = Json::array();
    for (const auto& s : v) a.push_back(Text(s));
    return a;
  };
  auto opt = [](const std::optional<std::string>& v) { return v ? Json(Text(*v)) : Json(nullptr); };
  Json j;
  j["syndrome"] = SyndromeName(d.syndrome);
  j["context"] = ContextName(d.context);
  j["summary"] = Text(Summary(d));
  j["evidence"] = strings(EvidenceSentences(d));
  j["next_steps"] = strings(NextSteps(d));
  j["faulting_instruction"] = d.faulting_instruction.empty() ? Json(nullptr) : Json(d.faulting_instruction);
  j["null_register"] = d.null_register ? Json(SizedRegName(*d.null_register)) : Json(nullptr);
  j["abort_message"] = opt(d.abort_message);
  j["exception_type"] = opt(d.exception_type);
  j["exception_what"] = opt(d.exception_what);
  j["unwinder"] = opt(d.unwinder);
  Json flips = Json::array();
  for (const auto& f : d.possible_bit_flips) {
    flips.push_back(Json{{"source", f.source},
                         {"value", Hex(f.value)},
                         {"original", Hex(f.original)},
                         {"bit", f.bit},
                         {"confidence", f.high_confidence ? "high" : "medium"}});
  }
  j["possible_bit_flips"] = std::move(flips);
  j["impossible_state"] = d.impossible_state ? Json(Text(EvidenceSentence(*d.impossible_state))) : Json(nullptr);
  j["peer_failure"] = opt(PeerFailure(d));
  j["gpu_runtime"] = d.gpu_runtime.empty() ? Json(nullptr) : Json(Text(d.gpu_runtime));
  Json rz = Json::array();
  for (const auto& w : d.red_zone) rz.push_back(Json{{"offset", w.offset}, {"value", Hex(w.value)}, {"meaning", Text(RedZoneMeaning(w))}});
  j["red_zone"] = std::move(rz);
  Json regs = Json::object();
  for (const auto& r : d.registers) {
    regs[std::string(RegName(r.reg))] =
        Json{{"value", Hex(r.value)}, {"kind", AddressKindName(r.kind)}, {"detail", Text(RegisterDetail(r))}};
  }
  j["registers"] = std::move(regs);
  Json groups = Json::array();
  for (const auto& g : d.thread_groups) {
    groups.push_back(Json{{"function", Text(g.function)}, {"state", ThreadStateName(g.state)}, {"threads", g.tids.size()}, {"tids", g.tids},
                          {"with_crashing_thread", g.with_crashing_thread}});
  }
  j["thread_groups"] = std::move(groups);
  return j;
}

// The interpreter and its threads; their frames are in threads[].frames.
Json PythonJson(const PythonState& p) {
  Json threads = Json::array();
  for (const auto& t : p.threads) {
    threads.push_back(Json{{"tid", t.tid},
                           {"holds_gil", t.holds_gil},
                           {"frames", t.frames.size()},
                           {"stop_reason", t.stop_reason.empty() ? Json(nullptr) : Json(Text(t.stop_reason))}});
  }
  return Json{{"version", p.version.empty() ? Json(nullptr) : Json(p.version)},
              {"module", Text(p.module)},
              {"error", p.error.empty() ? Json(nullptr) : Json(Text(p.error))},
              {"threads", std::move(threads)}};
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

Json JobJson(const std::optional<JobIdentity>& job) {
  if (!job) return nullptr;
  auto number = [](const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); };
  return Json{{"launcher", job->launcher},
              {"job_id", Text(job->job_id)},
              {"step", job->step ? Json(Text(*job->step)) : Json(nullptr)},
              {"restart", number(job->restart)},
              {"rank", number(job->rank)},
              {"world_size", number(job->world_size)},
              {"local_rank", number(job->local_rank)},
              {"node", job->node.empty() ? Json(nullptr) : Json(Text(job->node))},
              {"gpus", job->gpus.empty() ? Json(nullptr) : Json(Text(job->gpus))}};
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
  for (Reg r : kRegDisplayOrder) {
    row += fmt::format("  {:<9}{:#018x}", RegName(r), regs[r]);
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
  if (f.signal_trampoline) return fmt::format("#{:<2} {:#018x} <signal handler called>", f.index, f.pc);
  std::string s = fmt::format("#{:<2} {:#018x} in {}", f.index, f.pc, f.function.empty() ? "??" : Text(f.function));
  if (f.jit) s += " (JIT code)";
  if (f.module) {
    s += " (" + Text(f.module->module->path);
    if (f.function.empty() && f.offset) s += "+" + Hex(*f.offset);
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
  if (job.rank) {
    out += ", rank " + std::to_string(*job.rank);
    if (job.world_size) out += " of " + std::to_string(*job.world_size);
  }
  if (job.local_rank) out += " (local " + std::to_string(*job.local_rank) + ")";
  if (!job.node.empty()) out += " on node " + job.node;
  if (!job.gpus.empty()) out += ", GPUs " + job.gpus;
  return out;
}

Json CoreToJson(const CrashAnalysis& analysis) {
  const Core& core = *analysis.core;
  const std::string& path = analysis.path;
  Json j;
  Json c;
  c["path"] = Text(path);
  c["size"] = core.size() ? Json(*core.size()) : Json(nullptr);
  c["bytes_read"] = core.bytes_read();
  c["truncated"] = core.truncated();
  c["missing"] = Json::array();
  for (const auto& m : core.missing()) c["missing"].push_back(Text(m));
  if (std::string m = IdentityMissing(analysis); !m.empty()) c["missing"].push_back(Text(m));
  c["soft_errors"] = Json::array();
  for (const auto& m : core.soft_errors()) c["soft_errors"].push_back(Text(m));
  j["version"] = kAnalyzeJsonVersion;
  j["core"] = std::move(c);

  Json p;
  if (const auto& pi = core.process()) {
    p["pid"] = pi->pid;
    p["ppid"] = pi->ppid;
    p["uid"] = pi->uid;
    p["comm"] = ValidUtf8KeepingControls(pi->comm);
    p["args"] = ValidUtf8KeepingControls(pi->args);
  } else {
    p["pid"] = core.threads().empty() ? Json(nullptr) : Json(core.threads()[0].tid);
    p["ppid"] = nullptr;
    p["uid"] = nullptr;
    p["comm"] = nullptr;
    p["args"] = nullptr;
  }
  const auto& identity = analysis.identity;
  if (identity && !identity->argv.empty()) p["args"] = ValidUtf8KeepingControls(CommandLine(identity->argv));
  std::string exe = core.exe_path();
  p["exe"] = exe.empty() ? Json(nullptr) : Json(Text(exe));
  // Only the variables the environment policy keeps; the others counted.
  if (identity && identity->environment_read) {
    Json env = Json::object();
    for (const auto& [name, value] : identity->environment) env[Text(name)] = ValidUtf8KeepingControls(value);
    p["environment"] = std::move(env);
    p["environment_hidden"] = identity->environment_hidden;
  } else {
    p["environment"] = nullptr;
    p["environment_hidden"] = nullptr;
  }
  j["process"] = std::move(p);
  j["job"] = JobJson(identity ? identity->job : std::nullopt);
  j["signal"] = SignalJson(core.signal());
  j["crashing_thread"] = core.threads().empty() ? Json(nullptr) : Json(core.crashing_thread());

  Json threads = Json::array();
  for (const Backtrace& bt : analysis.threads) {
    const Thread& t = *bt.thread;
    Json tj;
    tj["tid"] = t.tid;
    tj["registers"] = RegistersJson(t.registers);
    tj["utime_us"] = t.utime_us;
    tj["stime_us"] = t.stime_us;
    tj["mxcsr"] = t.fpregs ? Json(Hex(t.fpregs->mxcsr)) : Json(nullptr);
    tj["xstate_size"] = t.xstate_size ? Json(*t.xstate_size) : Json(nullptr);
    {
      size_t k = threads.size();
      const auto& d = analysis.diagnosis;
      tj["state"] = d && k < d->thread_states.size() ? Json(ThreadStateName(d->thread_states[k])) : Json(nullptr);
    }
    tj["frames"] = Json::array();
    if (analysis.modules) {  // unwound (not --registers-only)
      for (const auto& f : bt.frames) {
        Json fj = FrameJson(f);
        if (f.disassembly) fj["disassembly"] = InstructionsJson(*f.disassembly);
        tj["frames"].push_back(std::move(fj));
      }
      tj["stop_reason"] = StopReasonText(bt.stop_reason);
    }
    if (&bt == analysis.crashing_backtrace() && analysis.fault_context) {
      const FaultContext& fc = *analysis.fault_context;
      tj["fault_context"] = Json{{"registers", RegistersJson(fc.registers)},
                                 {"signal", SignalJson(fc.signal)},
                                 {"frame_address", Hex(fc.frame_address)},
                                 {"disassembly", InstructionsJson(analysis.fault_disassembly)}};
    }
    threads.push_back(std::move(tj));
  }
  j["threads"] = std::move(threads);

  Json modules = Json::array();
  for (const auto& m : core.modules()) {
    Json mj;
    mj["path"] = Text(m.path);
    mj["base"] = Hex(m.base);
    mj["end"] = Hex(m.end);
    mj["build_id"] = m.build_id.empty() ? Json(nullptr) : Json(m.build_id);
    auto src = BuildIdSourceName(m.build_id_source);
    mj["build_id_source"] = src ? Json(src) : Json(nullptr);
    mj["status"] = m.is_vdso ? Json("ok")
                   : m.file_status == ModuleFileStatus::kUnchecked
                       ? Json(nullptr)
                       : Json(ModuleFileStatusName(m.file_status));
    if (const MappedModule* mm = FindMapped(analysis.modules.get(), m)) {
      if (mm->path_mismatched) mj["status"] = "mismatched";
      Json sym;
      auto or_null = [](const std::string& v) { return v.empty() ? Json(nullptr) : Json(Text(v)); };
      bool has_binary = mm->image && !mm->image->binary_path().empty();
      bool has_debug = mm->image && (mm->image->has_dwarf() || mm->image->has_symtab()) && !mm->debug_found_by.empty();
      sym["binary"] = has_binary ? or_null(mm->image->binary_path()) : Json(nullptr);
      sym["binary_found_by"] = or_null(mm->binary_found_by);
      sym["debug_file"] = has_debug ? or_null(mm->image->debug_path()) : Json(nullptr);
      sym["debug_found_by"] = has_debug ? or_null(mm->debug_found_by) : Json(nullptr);
      sym["debug_cache"] = mm->image ? or_null(mm->image->debug_cache_path()) : Json(nullptr);
      mj["symbols"] = std::move(sym);
    }
    modules.push_back(std::move(mj));
  }
  j["modules"] = std::move(modules);

  Json files = Json::array();
  for (const auto& f : core.files()) {
    files.push_back(Json{{"start", Hex(f.start)}, {"end", Hex(f.end)}, {"offset", Hex(f.offset)},
                         {"path", Text(f.path)}});
  }
  j["mappings"] = std::move(files);

  const Auxv& a = core.auxv();
  Json aj;
  aj["execfn"] = a.execfn ? Json(Text(*a.execfn)) : Json(nullptr);
  aj["platform"] = a.platform ? Json(Text(*a.platform)) : Json(nullptr);
  aj["entry"] = HexOrNull(a.entry);
  aj["phdr"] = HexOrNull(a.phdr);
  aj["base"] = HexOrNull(a.base);
  aj["pagesz"] = a.pagesz ? Json(*a.pagesz) : Json(nullptr);
  aj["hwcap"] = HexOrNull(a.hwcap);
  aj["hwcap2"] = HexOrNull(a.hwcap2);
  aj["sysinfo_ehdr"] = HexOrNull(a.sysinfo_ehdr);
  j["auxv"] = std::move(aj);
  j["diagnosis"] = analysis.diagnosis ? DiagnosisJson(*analysis.diagnosis) : Json(nullptr);
  if (analysis.diagnosis) j["diagnosis"]["signature"] = analysis.signature;
  j["python"] = analysis.python ? PythonJson(*analysis.python) : Json(nullptr);
  Json gpu = Json::array();
  for (const auto& g : analysis.gpu_state) gpu.push_back(Text(GpuStateText(g)));
  j["gpu_state"] = std::move(gpu);
  return j;
}

Json ErrorToJson(const std::string& path, const Error& error) {
  Json j;
  j["version"] = kAnalyzeJsonVersion;
  j["core"] = Json{{"path", Text(path)}};
  if (error.kind == ErrorKind::kTruncated) j["core"]["truncated"] = true;  // cut, whatever it decoded
  j["error"] = Json{{"kind", ErrorKindName(error.kind)}, {"message", Text(error.message)}};
  return j;
}

std::string CoreToText(const CrashAnalysis& analysis) {
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
  if (const auto& p = core.process()) {
    const auto& id = analysis.identity;
    std::string args = id && !id->argv.empty() ? CommandLine(id->argv) : p->args;
    add(fmt::format("process: pid {} ({}) uid {}: {}", p->pid, EscapedLine(p->comm), p->uid, EscapedLine(args)));
  }
  if (analysis.identity && analysis.identity->job) add("job: " + EscapedLine(JobLine(*analysis.identity->job)));
  std::string exe = core.exe_path();
  if (!exe.empty()) add("executable: " + Text(exe));
  if (const auto& s = core.signal()) {
    auto code = SignalCodeName(s->signo, s->code);
    std::string line = fmt::format("signal: {} ({}), code {} ({})", SignalName(s->signo), s->signo,
                                   s->code, code ? *code : "unknown");
    if (s->fault_address) line += ", fault address " + Hex(*s->fault_address);
    if (s->sender_pid) line += fmt::format(", sent by pid {}", *s->sender_pid);
    add(line);
  }
  if (const auto& fc = analysis.fault_context) {
    auto code = SignalCodeName(fc->signal.signo, fc->signal.code);
    std::string line = fmt::format("real fault, from the signal frame at {}: {} ({}), code {} ({})",
                                   Hex(fc->frame_address), SignalName(fc->signal.signo), fc->signal.signo,
                                   fc->signal.code, code ? *code : "unknown");
    if (fc->signal.fault_address) line += ", fault address " + Hex(*fc->signal.fault_address);
    add(line);
    add(fmt::format("  at rip {} rsp {}; a handler caught it and {}", Hex(fc->registers.pc()), Hex(fc->registers.sp()),
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
    add(fmt::format("thread {} (LWP {}){}: rip {} rsp {}", i, t.tid,
                    i == core.crashing_thread() ? " [crashed]" : "", Hex(t.registers.pc()),
                    Hex(t.registers.sp())));
  }
  if (!core.threads().empty()) {
    const Thread& t = core.threads()[core.crashing_thread()];
    add(fmt::format("registers of the crashing thread (LWP {}):", t.tid));
    for (const auto& row : RegisterGrid(t.registers)) add(row);
  }
  for (size_t i = 0; analysis.modules && i < analysis.threads.size(); ++i) {
    const Backtrace& bt = analysis.threads[i];
    add(fmt::format("\nthread {} (LWP {}){}:", i, bt.thread->tid, &bt == analysis.crashing_backtrace() ? " crashed" : ""));
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
    add(fmt::format("  {:#014x}-{:#014x} {} {} [{}]", m.base, m.end,
                    m.build_id.empty() ? std::string("(no build-id)") : m.build_id, Text(m.path), status));
  }
  return out;
}

}  // namespace coroner
