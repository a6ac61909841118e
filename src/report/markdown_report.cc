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

// The report's sections, in the order of the workflow's Output Format.
class MarkdownReport {
 public:
  MarkdownReport(const CrashAnalysis& analysis, const ComponentMap& component_map, const SourceReport* sources)
      : a_(analysis), core_(*analysis.core), components_(component_map), sources_(sources) {
    thread_ = core_.threads().empty() ? nullptr : &core_.threads()[core_.crashing_thread()];
    bt_ = a_.crashing_backtrace();
    // Where the fault happened: frame 0, or past the signal frame that a
    // re-raising handler left.
    origin_ = FaultOrigin(bt_, a_.fault_context);
    d_ = a_.diagnosis ? &*a_.diagnosis : nullptr;
  }

  std::string Write() {
    Header();
    CallChain();
    CrashingInstruction();
    Environment();
    RootCause();
    Evidence();
    FixStatus();
    RecommendedSteps();
    return std::move(md_);
  }

 private:
  void add(const std::string& s) {
    md_ += s;
    md_ += '\n';
  }
  static std::string esc(std::string_view s) { return MarkdownEscape(s); }

  void Header() {

    add("## Coredump Analysis: " + esc(a_.path));
    add("");
    const SignalInfo* sig = a_.fault_context ? &a_.fault_context->signal : core_.signal() ? &*core_.signal() : nullptr;
    if (sig) {
      // NT_PRSTATUS's signal alone (qemu-user's cores): no code is known.
      std::string code = sig->source == SignalInfo::Source::kPrstatus && sig->code == 0
                             ? "code unknown: the core has no siginfo"
                             : SignalCodeName(sig->signo, sig->code).value_or("code " + std::to_string(sig->code));
      std::string s = SignalName(sig->signo) + " (" + code;
      if (sig->fault_address) s += ", fault address " + ShownWord(*sig->fault_address);
      s += ")";
      if (a_.fault_context) {
        s += "; a handler caught it and " + HandlerEnding(*core_.signal(), a_.fault_context->signal);
      }
      add("**Crash signal:** " + s + "  ");
    }
    if (a_.identity && a_.identity->job) add("**Job:** " + esc(JobLine(*a_.identity->job)) + "  ");
    if (thread_) {
      std::string where;
      if (bt_) {
        // The top frame of the fault, named or not: JIT code, or a module's
        // address, is what the thread ran, not the first named caller.
        for (const auto& f : bt_->frames) {
          if (f.index < origin_ || f.signal_trampoline) continue;
          std::string component = esc(components_.For(ModulePath(f), InExecutable(f, core_.executable())));
          if (!f.function.empty()) where = ", in " + esc(f.function) + ", " + component;
          else if (f.jit) where = ", in JIT code at " + ShownWord(f.pc);
          else if (f.module) where = ", in " + esc(ModulePath(f)) + (f.offset ? "+" + ShownWord(*f.offset) : "") + ", " + component;
          else where = ", at " + ShownWord(f.pc) + ", outside any module";
          break;
        }
      }
      add(fmt::format("**Crashing thread:** Thread {} (LWP {}{})  ", core_.crashing_thread() + 1, thread_->tid, where));
      // The Python code the thread was running, innermost first.
      if (a_.python && bt_) {
        for (const auto& f : bt_->frames) {
          if (f.trust != FrameTrust::kPython) continue;
          std::string gil;
          for (const auto& pt : a_.python->threads) {
            if (pt.holds_gil) gil = pt.tid == static_cast<uint64_t>(thread_->tid) ? ", holding the GIL" : "";
          }
          add(fmt::format("**Python code:** {} ({}:{}), CPython {}{}  ", esc(f.function), esc(f.file), f.line,
                          esc(a_.python->version), gil));
          break;
        }
      }
    }
    if (d_) {
      add("**Crash context:** " + std::string(ContextName(d_->context)) + "  ");
      add("**Syndrome:** " + std::string(SyndromeName(d_->syndrome)) + "  ");
      add("**Signature:** " + esc(a_.signature) + "  ");
      if (d_->impossible_state) add("**Impossible register state:** " + esc(EvidenceSentence(*d_->impossible_state)) + "  ");
    }
    for (const auto& g : a_.gpu_state) add("**GPU state:** " + esc(GpuStateText(g)) + "  ");
    add("**Determinism:** unknown (single occurrence)");
    add("");
  }

  void CallChain() {
    add("### Crash call chain");
    add("");
    add("| Frame | Function | Library / Source | Component |");
    add("|-------|----------|-----------------|-----------|");
    if (bt_) {
      const Module* exe = core_.executable();
      for (const auto& f : bt_->frames) {
        std::string fn = f.signal_trampoline ? "&lt;signal handler called&gt;" : f.function.empty() ? "??" : esc(f.function);
        if (f.inlined) fn += " (inlined)";
        std::string src = f.jit            ? std::string("JIT code")
                          : f.file.empty() ? esc(ModulePath(f)) + (f.offset ? "+" + ShownWord(*f.offset) : std::string())
                                         : esc(f.file) + ":" + std::to_string(f.line);
        bool is_exe = InExecutable(f, exe);
        std::string comp = f.trust == FrameTrust::kPython ? esc(ComponentMap::ForPython(f.file))
                           : f.module                     ? esc(components_.For(f.module->module->path, is_exe))
                                                          : "-";
        if (f.trust == FrameTrust::kPython) fn += " (Python)";
        if (d_ && f.index == origin_) comp = "**" + comp + "** (crash origin)";
        add(fmt::format("| #{} | {} | {} | {} |", f.index, fn, src, comp));
        if (f.index >= 63) {
          add(fmt::format("| ... | {} more frames | | |", bt_->frames.size() - f.index - 1));
          break;
        }
      }
    }
    add("");
  }

  void CrashingInstruction() {
    add("### Crashing instruction");
    add("");
    add("```");
    const Registers& regs = a_.fault_context ? a_.fault_context->registers : thread_ ? thread_->registers : Registers{};
    for (const auto& row : RegisterGrid(regs)) add(row);
    add("");
    const std::vector<Instruction>& ins = CrashingInstructions(a_);
    for (const auto& i : ins) add(fmt::format("{} {}:  {}", i.current ? "=>" : "  ", ShownWord(i.address), MarkdownFenced(i.text)));
    if (ins.empty()) add("(no code bytes at pc " + ShownWord(regs.pc()) + ")");
    add("```");
    if (d_) {
      for (const auto& r : d_->registers) {
        bool suspicious = r.kind == AddressKind::kNull || r.kind == AddressKind::kSmall || r.kind == AddressKind::kNonCanonical;
        if (suspicious || r.misaligned_pointer) {
          std::string detail = RegisterDetail(r);
          add(fmt::format("- `{}` = `{}`: {}{}", RegName(r.reg), ShownWord(r.value), AddressKindName(r.kind),
                          detail.empty() ? "" : " (" + esc(detail) + ")"));
        }
      }
    }
    add("");
  }

  void Environment() {
    add("### Container environment");
    add("");
    add("| Component | Module | Build-id | Version | Git Hash |");
    add("|-----------|--------|----------|---------|----------|");
    const Module* exe = core_.executable();
    for (const auto& m : core_.modules()) {
      std::string version = "unknown", commit = "unknown";
      if (sources_) {
        if (auto p = sources_->packages.find(m.path); p != sources_->packages.end()) {
          version = esc(p->second.name + " " + p->second.version) + " (" + p->second.manager + ")";
        }
        for (const auto& v : sources_->modules) {
          if (v.path == m.path && !v.commit.empty()) commit = v.commit.substr(0, 12) + " (" + esc(v.checkout) + ")";
        }
      }
      add(fmt::format("| {} | {} | {} | {} | {} |", esc(components_.For(m.path, &m == exe)), esc(m.path),
                      m.build_id.empty() ? std::string("-") : m.build_id, version, commit));
    }
    if (sources_) {
      for (const auto& v : sources_->modules) {
        if (!v.producer.empty()) add(fmt::format("\n{} was built by {}", esc(v.path), esc(v.producer)));
      }
    }
    add("");
  }

  void RootCause() {
    add("### Root cause");
    add("");
    add(d_ ? MarkdownProse(Summary(*d_)) : std::string("Not diagnosed (registers only)."));
    add("");
  }

  void Evidence() {
    add("### Evidence");
    add("");
    if (d_) {
      for (const auto& e : d_->evidence) add("- " + MarkdownProse(EvidenceSentence(e)));
      if (d_->abort_message) add("- Abort message, verbatim: " + MarkdownCode(*d_->abort_message));
      if (d_->unwinder) add("- Unwinder in use: " + esc(*d_->unwinder));
      for (const auto& g : d_->thread_groups) {
        add(fmt::format("- {} threads {} in {}{}", g.tids.size(), esc(ThreadStateName(g.state)), esc(g.function),
                        g.with_crashing_thread ? " (with the crashing thread)" : ""));
      }
      // The crashing lines of the first frames whose source was found, and
      // the arguments and locals of the first frames that have them (the
      // workflow's `bt full`).
      size_t shown = 0;
      for (const auto& f : sources_ ? sources_->frames : std::vector<SourceFrame>{}) {
        if (f.lines.empty() || f.index < origin_ || shown == 3) continue;
        ++shown;
        add("");
        add(fmt::format("Source of frame #{} ({}, {}:{}, found by {}):", f.index, esc(f.function), esc(f.file), f.line,
                        f.resolved.how));
        add("");
        add("```");
        for (const auto& l : f.lines) add(fmt::format("{} {:>5}  {}", l.current ? "=>" : "  ", l.number, MarkdownFenced(l.text)));
        add("```");
      }
      if (bt_) {
        shown = 0;
        for (const auto& f : bt_->frames) {
          if (!f.variables_read || f.index < origin_ || shown == 4) continue;
          ++shown;
          add("");
          add(fmt::format("Arguments and locals of frame #{} ({}):", f.index, esc(f.function)));
          add("");
          add("```");
          for (const auto& line : VariableLines(f)) add(MarkdownFenced(line));
          add("```");
        }
      }
      if (!d_->red_zone.empty()) {
        add("");
        add("Red zone (the 128 bytes below rsp, which survive signal delivery):");
        add("");
        add("```");
        for (const auto& w : d_->red_zone) add(fmt::format("rsp{:<4} {}  {}", w.offset, ShownWord(w.value, 16), MarkdownFenced(RedZoneMeaning(w))));
        add("```");
      }
    }
    add("");
  }

  void FixStatus() {
    add("### Upstream fix status");
    add("");
    add(sources_ ? esc(FixStatusText(*sources_)) : std::string("Not checked"));
    add("");
  }

  void RecommendedSteps() {
    add("### Recommended next steps");
    add("");
    if (d_) {
      int k = 0;
      for (const auto& s : NextSteps(*d_)) add(fmt::format("{}. {}", ++k, MarkdownProse(s)));
    }
  }

  const CrashAnalysis& a_;
  const Core& core_;
  const ComponentMap& components_;
  const SourceReport* sources_;
  const Thread* thread_ = nullptr;
  const Backtrace* bt_ = nullptr;
  size_t origin_ = 0;
  const Diagnosis* d_ = nullptr;
  std::string md_;
};

}  // namespace

std::string CoreToMarkdown(const CrashAnalysis& a, const ComponentMap& components, const SourceReport* sources) {
  HiddenWordsScope hidden(HiddenWords(a));
  return MarkdownReport(a, components, sources).Write();
}

}  // namespace coroner
