#include "report/markdown_report.h"

#include <fmt/format.h>

#include "core/byte_view.h"
#include "core/signals.h"
#include "report/core_report.h"
#include "report/diagnosis_words.h"

namespace coroner {
namespace {

std::string ModulePath(const Frame& f) { return f.module ? f.module->module->path : std::string("?"); }

// Whether the frame ran in the executable (the module AT_PHDR is in).
bool InExecutable(const Frame& f, const Module* exe) { return exe && f.module && f.module->module == exe; }

}  // namespace

std::string CoreToMarkdown(const CrashAnalysis& a, const ComponentMap& components, const SourceReport* sources) {
  const Core& core = *a.core;
  std::string md;
  auto add = [&md](const std::string& s) {
    md += s;
    md += '\n';
  };
  auto esc = MarkdownEscape;
  add("## Coredump Analysis: " + esc(a.path));
  add("");
  const SignalInfo* sig = a.fault_context ? &a.fault_context->signal : core.signal() ? &*core.signal() : nullptr;
  if (sig) {
    std::string s = SignalName(sig->signo) + " (" + SignalCodeName(sig->signo, sig->code).value_or("code " + std::to_string(sig->code));
    if (sig->fault_address) s += ", fault address " + Hex(*sig->fault_address);
    s += ")";
    if (a.fault_context) {
      s += "; a handler caught it and " + HandlerEnding(*core.signal(), a.fault_context->signal);
    }
    add("**Crash signal:** " + s + "  ");
  }
  if (a.identity && a.identity->job) add("**Job:** " + esc(JobLine(*a.identity->job)) + "  ");
  const Thread* t = core.threads().empty() ? nullptr : &core.threads()[core.crashing_thread()];
  const Backtrace* bt = a.crashing_backtrace();
  // Where the fault happened: frame 0, or past the signal frame that a
  // re-raising handler left.
  size_t origin = FaultOrigin(bt, a.fault_context);
  if (t) {
    std::string where;
    if (bt) {
      // The top frame of the fault, named or not: JIT code, or a module's
      // address, is what the thread ran, not the first named caller.
      for (const auto& f : bt->frames) {
        if (f.index < origin || f.signal_trampoline) continue;
        std::string component = esc(components.For(ModulePath(f), InExecutable(f, core.executable())));
        if (!f.function.empty()) where = ", in " + esc(f.function) + ", " + component;
        else if (f.jit) where = ", in JIT code at " + Hex(f.pc);
        else if (f.module) where = ", in " + esc(ModulePath(f)) + (f.offset ? "+" + Hex(*f.offset) : "") + ", " + component;
        else where = ", at " + Hex(f.pc) + ", outside any module";
        break;
      }
    }
    add(fmt::format("**Crashing thread:** Thread {} (LWP {}{})  ", core.crashing_thread() + 1, t->tid, where));
    // The Python code the thread was running, innermost first.
    if (a.python && bt) {
      for (const auto& f : bt->frames) {
        if (f.trust != FrameTrust::kPython) continue;
        std::string gil;
        for (const auto& pt : a.python->threads) {
          if (pt.holds_gil) gil = pt.tid == static_cast<uint64_t>(t->tid) ? ", holding the GIL" : "";
        }
        add(fmt::format("**Python code:** {} ({}:{}), CPython {}{}  ", esc(f.function), esc(f.file), f.line,
                        esc(a.python->version), gil));
        break;
      }
    }
  }
  const Diagnosis* d = a.diagnosis ? &*a.diagnosis : nullptr;
  if (d) {
    add("**Crash context:** " + std::string(ContextName(d->context)) + "  ");
    add("**Syndrome:** " + std::string(SyndromeName(d->syndrome)) + "  ");
    add("**Signature:** " + esc(a.signature) + "  ");
    if (d->impossible_state) add("**Impossible register state:** " + esc(EvidenceSentence(*d->impossible_state)) + "  ");
  }
  for (const auto& g : a.gpu_state) add("**GPU state:** " + esc(GpuStateText(g)) + "  ");
  add("**Determinism:** unknown (single occurrence)");
  add("");

  add("### Crash call chain");
  add("");
  add("| Frame | Function | Library / Source | Component |");
  add("|-------|----------|-----------------|-----------|");
  if (bt) {
    const Module* exe = core.executable();
    for (const auto& f : bt->frames) {
      std::string fn = f.signal_trampoline ? "&lt;signal handler called&gt;" : f.function.empty() ? "??" : esc(f.function);
      if (f.inlined) fn += " (inlined)";
      std::string src = f.jit            ? std::string("JIT code")
                        : f.file.empty() ? esc(ModulePath(f)) + (f.offset ? "+" + Hex(*f.offset) : std::string())
                                       : esc(f.file) + ":" + std::to_string(f.line);
      bool is_exe = InExecutable(f, exe);
      std::string comp = f.trust == FrameTrust::kPython ? esc(ComponentMap::ForPython(f.file))
                         : f.module                     ? esc(components.For(f.module->module->path, is_exe))
                                                        : "-";
      if (f.trust == FrameTrust::kPython) fn += " (Python)";
      if (d && f.index == origin) comp = "**" + comp + "** (crash origin)";
      add(fmt::format("| #{} | {} | {} | {} |", f.index, fn, src, comp));
      if (f.index >= 63) {
        add(fmt::format("| ... | {} more frames | | |", bt->frames.size() - f.index - 1));
        break;
      }
    }
  }
  add("");

  add("### Crashing instruction");
  add("");
  add("```");
  const Registers& regs = a.fault_context ? a.fault_context->registers : t ? t->registers : Registers{};
  for (const auto& row : RegisterGrid(regs)) add(row);
  add("");
  const std::vector<Instruction>& ins = CrashingInstructions(a);
  for (const auto& i : ins) add(fmt::format("{} {:#x}:  {}", i.current ? "=>" : "  ", i.address, MarkdownFenced(i.text)));
  if (ins.empty()) add("(no code bytes at pc " + Hex(regs.pc()) + ")");
  add("```");
  if (d) {
    for (const auto& r : d->registers) {
      bool suspicious = r.kind == AddressKind::kNull || r.kind == AddressKind::kSmall || r.kind == AddressKind::kNonCanonical;
      if (suspicious || r.misaligned_pointer) {
        std::string detail = RegisterDetail(r);
        add(fmt::format("- `{}` = `{}`: {}{}", RegName(r.reg), Hex(r.value), AddressKindName(r.kind),
                        detail.empty() ? "" : " (" + esc(detail) + ")"));
      }
    }
  }
  add("");

  add("### Container environment");
  add("");
  add("| Component | Module | Build-id | Version | Git Hash |");
  add("|-----------|--------|----------|---------|----------|");
  const Module* exe = core.executable();
  const SourceReport* src = sources;
  for (const auto& m : core.modules()) {
    std::string version = "unknown", commit = "unknown";
    if (src) {
      if (auto p = src->packages.find(m.path); p != src->packages.end()) {
        version = esc(p->second.name + " " + p->second.version) + " (" + p->second.manager + ")";
      }
      for (const auto& v : src->modules) {
        if (v.path == m.path && !v.commit.empty()) commit = v.commit.substr(0, 12) + " (" + esc(v.checkout) + ")";
      }
    }
    add(fmt::format("| {} | {} | {} | {} | {} |", esc(components.For(m.path, &m == exe)), esc(m.path),
                    m.build_id.empty() ? std::string("-") : m.build_id, version, commit));
  }
  if (src) {
    for (const auto& v : src->modules) {
      if (!v.producer.empty()) add(fmt::format("\n{} was built by {}", esc(v.path), esc(v.producer)));
    }
  }
  add("");

  add("### Root cause");
  add("");
  add(d ? MarkdownProse(Summary(*d)) : std::string("Not diagnosed (registers only)."));
  add("");

  add("### Evidence");
  add("");
  if (d) {
    for (const auto& e : d->evidence) add("- " + MarkdownProse(EvidenceSentence(e)));
    if (d->abort_message) add("- Abort message, verbatim: " + MarkdownCode(*d->abort_message));
    if (d->unwinder) add("- Unwinder in use: " + esc(*d->unwinder));
    for (const auto& g : d->thread_groups) {
      add(fmt::format("- {} threads {} in {}{}", g.tids.size(), esc(ThreadStateName(g.state)), esc(g.function),
                      g.with_crashing_thread ? " (with the crashing thread)" : ""));
    }
    // The crashing lines of the first frames whose source was found, and
    // the arguments and locals of the first frames that have them (the
    // workflow's `bt full`).
    size_t shown = 0;
    for (const auto& f : src ? src->frames : std::vector<SourceFrame>{}) {
      if (f.lines.empty() || f.index < origin || shown == 3) continue;
      ++shown;
      add("");
      add(fmt::format("Source of frame #{} ({}, {}:{}, found by {}):", f.index, esc(f.function), esc(f.file), f.line,
                      f.resolved.how));
      add("");
      add("```");
      for (const auto& l : f.lines) add(fmt::format("{} {:>5}  {}", l.current ? "=>" : "  ", l.number, MarkdownFenced(l.text)));
      add("```");
    }
    if (bt) {
      shown = 0;
      for (const auto& f : bt->frames) {
        if (!f.variables_read || f.index < origin || shown == 4) continue;
        ++shown;
        add("");
        add(fmt::format("Arguments and locals of frame #{} ({}):", f.index, esc(f.function)));
        add("");
        add("```");
        for (const auto& line : VariableLines(f)) add(MarkdownFenced(line));
        add("```");
      }
    }
    if (!d->red_zone.empty()) {
      add("");
      add("Red zone (the 128 bytes below rsp, which survive signal delivery):");
      add("");
      add("```");
      for (const auto& w : d->red_zone) add(fmt::format("rsp{:<4} {:#018x}  {}", w.offset, w.value, MarkdownFenced(RedZoneMeaning(w))));
      add("```");
    }
  }
  add("");

  add("### Upstream fix status");
  add("");
  add(src ? esc(FixStatusText(*src)) : std::string("Not checked"));
  add("");

  add("### Recommended next steps");
  add("");
  if (d) {
    int k = 0;
    for (const auto& s : NextSteps(*d)) add(fmt::format("{}. {}", ++k, MarkdownProse(s)));
  }
  return md;
}

}  // namespace coroner
