#include "diagnose/diagnosis.h"

#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <map>

#include "core/byte_view.h"
#include "core/elf_image.h"
#include "core/signals.h"
#include "diagnose/advice.h"
#include "diagnose/runtime_readers.h"
#include "symbolize/disassembler.h"
#include "text/text.h"

namespace coroner {

const std::vector<std::string> kSyndromes = {"null-deref", "bad-pointer", "write-to-readonly", "return-to-null", "call-to-null", "wild-jump", "misaligned-stack", "stack-overflow", "abort-assert", "uncaught-exception", "heap-corruption", "abort", "illegal-instruction", "fpe", "bus-error", "gpu-fault", "external-signal", "other"};
const std::vector<std::string> kContexts = {"runtime", "exit-time", "signal-handler", "exception-unwind", "module-load"};

std::string_view AddressKindName(AddressKind kind) {
  switch (kind) {
    case AddressKind::kNull: return "null";
    case AddressKind::kSmall: return "small";
    case AddressKind::kNonCanonical: return "non-canonical";
    case AddressKind::kUnmapped: return "unmapped";
    case AddressKind::kCode: return "code";
    case AddressKind::kStack: return "stack";
    case AddressKind::kData: return "data";
    case AddressKind::kHeap: return "heap";
    case AddressKind::kReadOnly: return "read-only";
    case AddressKind::kNoAccess: return "no-access";
  }
  return "unknown";
}

std::string_view SyndromeName(Syndrome syndrome) {
  auto i = static_cast<size_t>(syndrome);
  return i < kSyndromes.size() ? std::string_view(kSyndromes[i]) : std::string_view("other");
}

std::string_view ContextName(CrashContext context) {
  auto i = static_cast<size_t>(context);
  return i < kContexts.size() ? std::string_view(kContexts[i]) : std::string_view("runtime");
}

std::vector<const Frame*> EffectiveFrames(const Backtrace* bt, const std::optional<FaultContext>& fc) {
  std::vector<const Frame*> out;
  if (!bt) return out;
  out.reserve(bt->frames.size());
  size_t from = 0;
  if (fc) {
    for (size_t i = 0; i < bt->frames.size(); ++i) {
      if (bt->frames[i].signal_trampoline && bt->frames[i].sp == fc->frame_address) {
        from = i + 1;
        break;
      }
    }
  }
  for (size_t i = from; i < bt->frames.size(); ++i) out.push_back(&bt->frames[i]);
  return out;
}

namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.starts_with(p); }

// Whether `s` is one of `names`. As string_views, a name of another length
// costs one comparison (a std::string against a C string measures the
// literal and compares bytes every time: 11,000 instructions of a log line's
// diagnosis went to that).
bool OneOf(std::string_view s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (s == n) return true;
  return false;
}


// "230 (clock_nanosleep)": the number, and the name of the calls threads
// wait in.
std::string SyscallName(uint64_t nr) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {0, "read"},       {1, "write"},        {7, "poll"},          {23, "select"},      {34, "pause"},
      {35, "nanosleep"}, {43, "accept"},      {45, "recvfrom"},     {47, "recvmsg"},     {61, "wait4"},
      {202, "futex"},    {230, "clock_nanosleep"}, {232, "epoll_wait"}, {270, "pselect6"}, {271, "ppoll"},
      {281, "epoll_pwait"}, {288, "accept4"}};
  for (const auto& [n, name] : kNames)
    if (n == nr) return std::to_string(nr) + " (" + name + ")";
  return std::to_string(nr);
}

// The libraries every program runs on: a thread's own code is the first
// frame outside them.
bool RuntimeLibrary(const std::string& path) {
  for (const char* lib : {"/libc.so", "/ld-linux", "/libpthread.so", "/libstdc++.so", "/libgcc_s.so", "/libm.so",
                          "/libdl.so", "/librt.so"})
    if (path.find(lib) != std::string::npos) return true;
  return false;
}

std::string Where(const ModuleMap& modules, uint64_t addr) {
  PcSymbol s = modules.Symbolize(addr);
  std::string name = !s.functions.empty() && !s.functions.back().name.empty() ? s.functions.back().name : s.symbol;
  if (!s.module && modules.IsJitCode(addr)) return "JIT code at " + Hex(addr);
  std::string mod = s.module ? Basename(s.module->module->path) : std::string("?");
  if (!s.module && name.empty()) return Hex(addr) + ", outside any module";
  if (name.empty()) return mod + "+" + Hex(s.offset);
  if (!s.functions.empty() && !s.functions.back().name.empty()) return name + " (" + mod + ")";
  return name + "+" + Hex(s.symbol_offset) + " (" + mod + ")";
}

class Diagnoser {
 public:
  Diagnoser(const Core& core, const ModuleMap& modules, const std::vector<Backtrace>& bts,
            const std::optional<FaultContext>& fc, StackMemory& mem, DiagnosisDepth depth)
      : core_(core), modules_(modules), bts_(bts), fc_(fc), mem_(mem), report_(depth == DiagnosisDepth::kReport) {}

  Diagnosis Run() {
    if (core_.threads().empty() || !core_.signal()) {
      d_.syndrome = Syndrome::kOther;
      d_.context = CrashContext::kRuntime;
      d_.summary = "The core holds no thread registers or signal, so the crash cannot be classified.";
      return std::move(d_);
    }
    const Thread& t = core_.threads()[core_.crashing_thread()];
    regs_ = fc_ ? fc_->registers : t.registers;
    sig_ = fc_ ? fc_->signal : *core_.signal();
    crashing_ = bts_.size() > core_.crashing_thread() ? &bts_[core_.crashing_thread()] : nullptr;
    frames_ = EffectiveFrames(crashing_, fc_);
    if (fc_) {
      d_.evidence.push_back("A fatal-signal handler caught the fault and " + HandlerEnding(*core_.signal(), *fc_) + " (" +
                            SignalName(core_.signal()->signo) + ", " +
                            SignalCodeName(core_.signal()->signo, core_.signal()->code).value_or("?") +
                            "); the real fault was read from the kernel's signal frame at " +
                            Hex(fc_->frame_address) + ".");
    }
    RedZone();
    if (report_) ClassifyRegisters();
    if (auto op = MemoryOperandAt(modules_, regs_.pc())) op_ = op;
    if (op_) d_.faulting_instruction = op_->text;
    DecideSyndrome();
    // The misaligned-stack rules already stand on a state compiled code
    // cannot reach (they leave setcontext, longjmp and signal frames out).
    if (d_.syndrome == Syndrome::kMisalignedStack && !d_.evidence.empty()) d_.impossible_state = d_.evidence.back();
    if (!d_.impossible_state) PcInsideAnInstruction();
    DecideContext();
    if (report_) {
      Threads();
      Advise(Facts(), d_);
    }
    return std::move(d_);
  }

 private:
  // --- memory and addresses ---------------------------------------------------
  const Segment* StackSegment() const { return core_.memory().Find(regs_.sp()); }

  AddressKind Classify(uint64_t v, std::string* detail) const {
    if (v == 0) return AddressKind::kNull;
    if (v < kNullPages) return AddressKind::kSmall;
    if (!IsCanonicalAddress(v)) return AddressKind::kNonCanonical;
    const Segment* s = core_.memory().Find(v);
    if (!s) return AddressKind::kUnmapped;
    if (s->exec) {
      if (detail) *detail = Where(modules_, v);
      return AddressKind::kCode;
    }
    for (const auto& th : core_.threads()) {
      const Segment* ss = core_.memory().Find(th.registers.sp());
      if (ss == s) return AddressKind::kStack;
    }
    if (s->write) {
      if (const MappedModule* m = modules_.Find(v); m && detail) *detail = "data of " + Basename(m->module->path);
      return modules_.Find(v) ? AddressKind::kData : AddressKind::kHeap;
    }
    return s->read ? AddressKind::kReadOnly : AddressKind::kNoAccess;
  }

  void RedZone() {
    for (int64_t off = 8; off <= 128; off += 8) {
      auto v = mem_.Read64(regs_.sp() - static_cast<uint64_t>(off));
      if (!v) break;
      RedZoneWord w{-off, *v, {}};
      // The labels read only what a word is; where it points is for a report.
      std::string detail;
      AddressKind kind = Classify(*v, report_ ? &detail : nullptr);
      if (kind == AddressKind::kNull) w.meaning = "zero";
      else if (kind == AddressKind::kCode && LooksLikeReturnAddress(modules_, *v))
        w.return_address = true, w.meaning = "return address into " +
                    (report_ ? Where(modules_, *v - 1) + ": a call from there returned" : std::string());
      else if (kind == AddressKind::kCode) w.meaning = "code address " + detail;
      else if (kind == AddressKind::kStack) w.meaning = "pointer into the stack";
      else w.meaning = AddressKindName(kind);
      d_.red_zone.push_back(std::move(w));
    }
  }

  void ClassifyRegisters() {
    static const Reg kGeneral[] = {Reg::rax, Reg::rbx, Reg::rcx, Reg::rdx, Reg::rsi, Reg::rdi, Reg::rbp, Reg::rsp,
                                   Reg::r8,  Reg::r9,  Reg::r10, Reg::r11, Reg::r12, Reg::r13, Reg::r14, Reg::r15,
                                   Reg::rip};
    for (Reg r : kGeneral) {
      RegisterClass c{std::string(RegName(r)), regs_[r], AddressKind::kNull, {}};
      c.kind = Classify(c.value, &c.detail);
      bool pointer_into_memory = c.kind == AddressKind::kHeap || c.kind == AddressKind::kData || c.kind == AddressKind::kStack;
      if (pointer_into_memory && c.value % 8 != 0 && r != Reg::rsp && r != Reg::rbp) {
        c.detail = c.detail.empty() ? "misaligned for a pointer" : c.detail + ", misaligned for a pointer";
      }
      if (c.kind == AddressKind::kUnmapped || c.kind == AddressKind::kNoAccess) c.detail = "not mapped in the process";
      d_.registers.push_back(std::move(c));
    }
  }

  std::optional<uint64_t> RegisterByName(const std::string& name) const {
    if (auto r = RegFromName(name)) return regs_[*r];
    // 32-bit names (an address-size prefix, 0x67): eax..., r8d..., eip.
    static const std::map<std::string, std::string> k32 = {
        {"eax", "rax"}, {"ebx", "rbx"}, {"ecx", "rcx"}, {"edx", "rdx"}, {"esi", "rsi"},   {"edi", "rdi"},
        {"ebp", "rbp"}, {"esp", "rsp"}, {"r8d", "r8"},  {"r9d", "r9"},  {"r10d", "r10"}, {"r11d", "r11"},
        {"r12d", "r12"}, {"r13d", "r13"}, {"r14d", "r14"}, {"r15d", "r15"}, {"eip", "rip"}};
    if (auto it = k32.find(name); it != k32.end()) {
      if (auto r = RegFromName(it->second)) return regs_[*r] & 0xffffffff;
    }
    return std::nullopt;
  }

  // The innermost frame in a GPU runtime: ROCm's libhsa-runtime64 or
  // NVIDIA's libcuda (the driver API, which the CUDA runtime calls).
  const Frame* GpuRuntimeFrame() const {
    for (const Frame* f : frames_) {
      if (!f->module || !f->module->module) continue;
      std::string base = Basename(f->module->module->path);
      if (StartsWith(base, "libhsa-runtime64.so") || StartsWith(base, "libcuda.so")) return f;
    }
    return nullptr;
  }

  bool HasFrame(std::initializer_list<const char*> names) const {
    for (const Frame* f : frames_) {
      for (const char* n : names) {
        if (f->function == n) return true;
      }
    }
    return false;
  }

  // --- syndrome ----------------------------------------------------------------
  // A signal another process sent (kill, tkill, sigqueue with its pid): a
  // watchdog's, a supervisor's or an operator's, not a fault of this
  // process, whatever the signal. raise() and abort() send from the process
  // itself; a handler that re-raised has its real fault in fc_.
  bool ExternalSignal() {
    if (fc_ || !core_.signal()) return false;
    const SignalInfo& s = *core_.signal();
    bool sent = s.code == 0 /* SI_USER */ || s.code == -1 /* SI_QUEUE */ || s.code == -6 /* SI_TKILL */;
    if (!sent || !s.sender_pid || *s.sender_pid <= 0) return false;
    bool own = core_.process() && core_.process()->pid == *s.sender_pid;
    for (const auto& t : core_.threads()) own |= t.tid == *s.sender_pid;
    ThreadWait wait = ThreadWaitOf(regs_, modules_);
    const std::optional<uint64_t>& syscall = wait.syscall;
    bool interrupted = wait.interrupted;
    uint64_t pc = regs_.pc();
    if (own) {
      // Sent by the process itself. abort() and raise() send from the
      // thread that gets the signal, blocked in the sending system call.
      // Blocked in any other one, the thread did not cause it: a handler
      // re-sent a signal it received (node's, after a kill), or another
      // thread sent it.
      constexpr uint64_t kKill = 62, kTkill = 200, kTgkill = 234, kRtSigqueueinfo = 129, kRtTgsigqueueinfo = 297;
      bool sending = syscall && (*syscall == kKill || *syscall == kTkill || *syscall == kTgkill ||
                                 *syscall == kRtSigqueueinfo || *syscall == kRtTgsigqueueinfo);
      if (sending || (!syscall && !interrupted)) return false;
    }
    d_.syndrome = Syndrome::kExternalSignal;
    std::string how = s.code == 0 ? "kill()" : s.code == -1 ? "sigqueue()" : "tkill()";
    std::string code = " (" + SignalCodeName(s.signo, s.code).value_or("?") + ")";
    if (own) {
      d_.evidence.push_back(SignalName(s.signo) + " was sent by this process itself (pid " + std::to_string(*s.sender_pid) +
                            ") with " + how + code +
                            " while the thread was in a system call, where no instruction faults: a "
                            "signal handler re-sent a signal it received, or another thread sent it. The first "
                            "sender is not in the core.");
    } else {
      d_.evidence.push_back(SignalName(s.signo) + " was sent by pid " + std::to_string(*s.sender_pid) +
                            (s.sender_uid ? " (uid " + std::to_string(*s.sender_uid) + ")" : std::string()) +
                            " with " + how + code +
                            ": no instruction of this process faulted, and the core holds no fault address.");
    }
    std::string where = crashing_ && !crashing_->frames.empty() && !crashing_->frames[0].function.empty()
                            ? crashing_->frames[0].function
                            : Where(modules_, pc);
    if (syscall) {
      d_.evidence.push_back("The thread was blocked in system call " + SyscallName(*syscall) + " in " + where + ".");
    } else if (interrupted) {
      d_.evidence.push_back("The thread was in a system call in " + where +
                            ", which an earlier signal interrupted (it returned EINTR).");
    } else {
      d_.evidence.push_back("The thread was running in " + where + ".");
    }
    return true;
  }

  void DecideSyndrome() {
    if (ExternalSignal()) return;
    int signo = sig_.signo;
    uint64_t pc = regs_.pc(), sp = regs_.sp();
    bool fault = signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE || signo == SIGTRAP;
    if (fault && pc == 0) return PcZero(sp);
    if (fault && !modules_.IsCode(pc)) {
      // Reached by `ret` when the word just below rsp (what it popped, still
      // in the red zone) equals pc. A ret from a stack pointer off by 8 pops
      // the wrong slot: the real return address then sits next to it.
      auto popped = mem_.Read64(sp - 8);
      if (popped && *popped == pc) {
        auto above = mem_.Read64(sp), below2 = mem_.Read64(sp - 16);
        bool above_ra = above && LooksLikeReturnAddress(modules_, *above);
        bool below_ra = below2 && LooksLikeReturnAddress(modules_, *below2);
        if (above_ra || below_ra) {
          uint64_t ra = above_ra ? *above : *below2;
          d_.syndrome = Syndrome::kMisalignedStack;
          d_.evidence.push_back("`ret` popped " + Hex(pc) + ", which is not code, while the return address " + Hex(ra) + " into " +
                                Where(modules_, ra - 1) + " sits one slot away: rsp was off by 8.");
          return;
        }
        d_.syndrome = Syndrome::kWildJump;
        d_.evidence.push_back("`ret` popped " + Hex(pc) + " (still at [rsp-8]), which is not code: the return address was overwritten.");
        return;
      }
      d_.syndrome = Syndrome::kWildJump;
      std::string detail;
      d_.evidence.push_back("pc " + Hex(pc) + " is not in executable memory (" + std::string(AddressKindName(Classify(pc, &detail))) + ").");
      return;
    }
    if (signo == SIGSEGV && StackOverflow()) return;
    if (fault && MisalignedStack()) return;
    if (signo == SIGSEGV && op_ && op_->is_ret) {
      // A ret that faulted: the word it would return to is not code.
      if (auto target = mem_.Read64(sp); target && !modules_.IsCode(*target)) {
        d_.syndrome = Syndrome::kWildJump;
        d_.evidence.push_back("The faulting instruction is `ret`, and the return address at [rsp] is " + Hex(*target) +
                              ", which is not code.");
        return;
      }
    }
    switch (signo) {
      case SIGILL:
        d_.syndrome = Syndrome::kIllegalInstruction;
        d_.evidence.push_back("SIGILL " + SignalCodeName(signo, sig_.code).value_or("") + " at " + Where(modules_, pc) +
                              (op_ ? ": " + op_->text : std::string()));
        return;
      case SIGFPE:
        d_.syndrome = Syndrome::kFpe;
        d_.evidence.push_back("SIGFPE " + SignalCodeName(signo, sig_.code).value_or("") + " at " + Where(modules_, pc) +
                              (op_ ? ": " + op_->text : std::string()));
        return;
      case SIGBUS:
        d_.syndrome = Syndrome::kBusError;
        d_.evidence.push_back("SIGBUS " + SignalCodeName(signo, sig_.code).value_or("") +
                              (sig_.fault_address ? " at " + Hex(*sig_.fault_address) : std::string()) +
                              ": the address is mapped but its backing is gone (a file mapping past the end of the file?) or misaligned.");
        return;
      case SIGSEGV: return Segv();
      case SIGABRT: return Abort();
      default:
        d_.syndrome = Syndrome::kOther;
        d_.evidence.push_back("Signal " + SignalName(signo) + " (" + SignalCodeName(signo, sig_.code).value_or("?") + ").");
    }
  }

  void PcZero(uint64_t sp) {
    auto top = mem_.Read64(sp);
    auto below = mem_.Read64(sp - 8);
    bool top_is_ra = top && LooksLikeReturnAddress(modules_, *top);
    bool indirect = false;
    if (top_is_ra) {
      std::byte b[2];
      // An indirect call (ff /2) pushed it: a call through a function pointer.
      for (int n = 2; n <= 7 && !indirect; ++n) {
        if (modules_.ReadCode(*top - n, b) == 2 && static_cast<uint8_t>(b[0]) == 0xff &&
            ((static_cast<uint8_t>(b[1]) >> 3) & 7) == 2) {
          indirect = true;
        }
      }
    }
    if (top_is_ra && indirect) {
      d_.syndrome = Syndrome::kCallToNull;
      d_.evidence.push_back("pc is 0 and [rsp] = " + Hex(*top) + " is a return address just after an indirect call in " +
                            Where(modules_, *top - 1) + ": a call through a NULL function pointer.");
      return;
    }
    if (below && *below == 0) {
      d_.syndrome = Syndrome::kReturnToNull;
      d_.evidence.push_back("pc is 0 and the word just below rsp ([rsp-8], still intact in the red zone) is 0: a `ret` popped a NULL return address.");
      return;
    }
    if (top_is_ra) {
      d_.syndrome = Syndrome::kCallToNull;
      d_.evidence.push_back("pc is 0 and [rsp] = " + Hex(*top) + " is a return address into " + Where(modules_, *top - 1) + ".");
      return;
    }
    d_.syndrome = Syndrome::kWildJump;
    d_.evidence.push_back("pc is 0, but neither [rsp] is a return address nor [rsp-8] is 0.");
  }

  bool StackOverflow() {
    uint64_t sp = regs_.sp();
    uint64_t addr = sig_.fault_address.value_or(sp);
    const auto& segs = core_.memory().segments();
    // The stack: the segment holding rsp, or the first writable one above it.
    const Segment* stack = core_.memory().Find(sp);
    if (!stack) {
      for (const auto& s : segs) {
        if (s.vaddr > sp && s.write) {
          stack = &s;
          break;
        }
      }
    }
    if (!stack) return false;
    constexpr uint64_t kGuard = 1u << 20;  // the kernel's stack guard gap is 256 pages
    bool below = addr < stack->vaddr && stack->vaddr - addr <= kGuard;
    bool in_guard = false;
    if (const Segment* g = core_.memory().Find(addr); g && !g->read && !g->write && g->end() == stack->vaddr) in_guard = true;
    bool sp_out = !core_.memory().Find(sp) && sp < stack->vaddr && stack->vaddr - sp <= kGuard;
    if (!(below || in_guard || sp_out)) return false;
    d_.syndrome = Syndrome::kStackOverflow;
    d_.evidence.push_back("The fault address " + Hex(addr) + " is " + std::to_string(stack->vaddr - std::min(addr, stack->vaddr)) +
                          " bytes below the stack mapping at " + Hex(stack->vaddr) + (in_guard ? " (its guard page)" : "") +
                          "; rsp is " + Hex(sp) + ".");
    size_t depth = crashing_ ? crashing_->frames.size() : 0;
    if (depth > 0) {
      std::map<std::string, size_t> counts;
      for (const auto& f : crashing_->frames) ++counts[f.function];
      auto most = std::max_element(counts.begin(), counts.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      if (most->second > 16 && !most->first.empty()) {
        d_.evidence.push_back(most->first + " appears in " + std::to_string(most->second) + " of the first " +
                              std::to_string(depth) + " frames: unbounded recursion.");
      }
    }
    return true;
  }

  // A fault at a pc inside an instruction of its function, decoded from
  // the function's start: no jump or return of compiled code lands there.
  void PcInsideAnInstruction() {
    int signo = sig_.signo;
    if (signo != SIGSEGV && signo != SIGILL && signo != SIGBUS && signo != SIGFPE && signo != SIGTRAP) return;
    if (d_.syndrome == Syndrome::kExternalSignal) return;
    const Frame* f0 = frames_.empty() ? nullptr : frames_[0];
    if (f0 && f0->trust != FrameTrust::kContext && f0->trust != FrameTrust::kSignal) return;
    uint64_t pc = regs_.pc();
    BoundaryAt at = InstructionBoundaryAt(modules_, pc);
    if (at.where != InstructionBoundary::kInside) return;
    const Instruction& in = at.straddling;
    std::string e = "pc " + Hex(pc) + " is " + std::to_string(pc - in.address) + " bytes into the " +
                    std::to_string(in.bytes.size() / 2) + "-byte instruction `" + in.text + "` at " +
                    Where(modules_, in.address) +
                    ", decoded from the function's start: no jump or return of compiled code lands inside an "
                    "instruction (a corrupted return address or function pointer, or a bad CPU).";
    d_.evidence.push_back(e);
    d_.impossible_state = e;
  }

  bool MisalignedStack() {
    // The ABI keeps the CFA 16-byte aligned; off by 8 means rsp moved by a
    // word it should not have (or the return address sits one slot away).
    // (Optimized code may legally call a leaf with rsp unaligned, so the
    // CFA alone does not decide; an instruction that needs the alignment does.)
    const Frame* f0 = frames_.empty() ? nullptr : frames_[0];
    if (f0 && f0->cfa && *f0->cfa % 16 == 8 && f0->trust != FrameTrust::kSignal && op_ && op_->needs_alignment) {
      d_.syndrome = Syndrome::kMisalignedStack;
      d_.evidence.push_back("The crashing frame's CFA is " + Hex(*f0->cfa) + ", 8 bytes off the 16-byte alignment the ABI requires, and `" +
                            op_->text + "` requires a 16-byte aligned operand: rsp is off by 8.");
      return true;
    }
    if (op_ && op_->needs_alignment && (op_->base == "rsp" || op_->base == "rbp") && sig_.code == 0x80) {
      uint64_t base = *RegisterByName(op_->base);
      if ((base + static_cast<uint64_t>(op_->displacement)) % 16 != 0) {
        d_.syndrome = Syndrome::kMisalignedStack;
        d_.evidence.push_back("`" + op_->text + "` needs a 16-byte aligned stack operand; " + op_->base + " = " + Hex(base) + ".");
        return true;
      }
    }
    if (op_ && op_->is_ret) {
      auto at = mem_.Read64(regs_.sp());
      auto next = mem_.Read64(regs_.sp() + 8);
      auto prev = mem_.Read64(regs_.sp() - 8);
      bool at_ok = at && LooksLikeReturnAddress(modules_, *at);
      if (!at_ok && ((next && LooksLikeReturnAddress(modules_, *next)) || (prev && LooksLikeReturnAddress(modules_, *prev)))) {
        d_.syndrome = Syndrome::kMisalignedStack;
        d_.evidence.push_back("`ret` found no return address at [rsp], but one sits 8 bytes away: rsp is off by 8.");
        return true;
      }
    }
    return false;
  }

  void Segv() {
    bool kernel = sig_.code == 0x80;  // SI_KERNEL: a general-protection fault, no address
    // A SIGSEGV that was sent (si_code <= 0: a handler re-raised it and the
    // context is the re-delivery's) carries no address either: the
    // faulting instruction's operand says where it went.
    bool sent = sig_.code <= 0;
    std::optional<uint64_t> effective;
    bool pc_relative = op_ && (op_->base == "rip" || op_->base == "eip");
    if (op_ && !op_->base.empty() && !pc_relative) {
      if (auto b = RegisterByName(op_->base)) {
        uint64_t e = *b + static_cast<uint64_t>(op_->displacement);
        if (!op_->index.empty()) {
          if (auto i = RegisterByName(op_->index)) e += *i * static_cast<uint64_t>(op_->scale);
        }
        effective = e;
      }
    }
    uint64_t addr = sent ? effective.value_or(sig_.fault_address.value_or(0)) : sig_.fault_address.value_or(0);
    if (!kernel && addr < kNullPages) {
      d_.syndrome = Syndrome::kNullDeref;
      std::string ins = op_ ? "`" + op_->text + "`" : "the instruction at " + Hex(regs_.pc());
      auto base = op_ && !op_->base.empty() && !pc_relative ? RegisterByName(op_->base) : std::nullopt;
      if (base) {
        uint64_t b = *base;
        if (b < kNullPages) {
          d_.null_register = op_->base;
          d_.evidence.push_back(op_->base + " = " + Hex(b) + (b == 0 ? " (NULL)" : " (a small offset from NULL)") +
                                " when " + ins + " in " + Where(modules_, regs_.pc()) + " read or wrote " + Hex(addr) + ".");
          return;
        }
      }
      d_.evidence.push_back("The fault address " + Hex(addr) + " is in the first " + std::to_string(kNullPages / 1024) +
                            " KiB, which are never mapped: " + ins + " in " + Where(modules_, regs_.pc()) + " dereferenced NULL.");
      return;
    }
    if (WriteToReadonly(kernel ? std::nullopt : std::optional<uint64_t>(addr))) return;
    d_.syndrome = Syndrome::kBadPointer;
    uint64_t a = kernel ? effective.value_or(0) : addr;
    std::string why;
    if (!IsCanonicalAddress(a)) why = "non-canonical (bits 63-48 are not a sign extension of bit 47)";
    else if (!core_.memory().Find(a)) why = "not mapped";
    else if (a % 8 != 0) why = "misaligned";
    else why = "mapped without the access right needed";
    std::string ins = op_ ? "`" + op_->text + "`" : "the instruction";
    d_.evidence.push_back(ins + " in " + Where(modules_, regs_.pc()) + " accessed " + (kernel && !effective ? std::string("a bad address") : Hex(a)) +
                          ", which is " + why + (kernel ? " (SI_KERNEL: the CPU raised a general-protection fault, so the kernel gives no address)" : "") + ".");
    std::vector<std::pair<std::string, uint64_t>> pointers;
    if (op_ && !op_->base.empty()) {
      if (auto b = RegisterByName(op_->base)) {
        d_.evidence.push_back(op_->base + " = " + Hex(*b) + ".");
        if (op_->base != "rip" && op_->base != "eip" && op_->base != "rsp") pointers.emplace_back(op_->base, *b);
      }
    }
    if (!kernel || effective) pointers.emplace_back("the fault address", a);
    BitFlips(pointers);
  }

  // A bad pointer one flipped bit away from NULL or from an address the core
  // maps: evidence of hardware corruption, if it recurs on the host.
  void BitFlips(const std::vector<std::pair<std::string, uint64_t>>& pointers) {
    d_.possible_bit_flips = PossibleBitFlips(pointers, core_.memory());
    for (const BitFlip& f : d_.possible_bit_flips) {
      std::string to = f.original == 0 ? "NULL" : Hex(f.original) + " (" + std::string(AddressKindName(Classify(f.original, nullptr))) + ", mapped)";
      d_.evidence.push_back(f.source + " " + Hex(f.value) + " is " + to + " with bit " + std::to_string(f.bit) +
                            " flipped: a possible bit flip" + (f.high_confidence ? " (a high bit: no overrun reaches that far)" : "") +
                            ". More such crashes on one host point to its CPU or memory.");
    }
  }

  // SEGV_ACCERR from an instruction that writes its memory operand, at an
  // address mapped without write permission: a string literal, a constant
  // table, code, a page the program protected.
  bool WriteToReadonly(std::optional<uint64_t> addr) {
    constexpr int kSegvAccerr = 2;
    if (!addr || sig_.code != kSegvAccerr || !op_ || !op_->writes) return false;
    const FileMapping* file = core_.FileAt(*addr);
    std::string mapping;
    if (const Segment* s = core_.memory().Find(*addr)) {
      if (s->write) return false;
      std::string perms = std::string(s->read ? "r" : "-") + "-" + (s->exec ? "x" : "-");
      mapping = "the " + perms + " mapping " + Hex(s->vaddr) + "-" + Hex(s->end());
    } else if (file && modules_.IsCode(*addr)) {
      // A core without the mapping (gdb's gcore leaves out a library's
      // unmodified code): the module's file says the loader maps it as code.
      mapping = "the r-x mapping " + Hex(file->start) + "-" + Hex(file->end) + " (code, as the module's file maps it)";
    } else {
      return false;
    }
    d_.syndrome = Syndrome::kWriteToReadonly;
    if (file) mapping += " of " + file->path + " (file offset " + Hex(file->offset + (*addr - file->start)) + ")";
    d_.readonly_mapping = mapping;
    d_.evidence.push_back("`" + op_->text + "` in " + Where(modules_, regs_.pc()) + " wrote to " + Hex(*addr) + ", in " +
                          mapping + ", which is not writable (SEGV_ACCERR: mapped, but not for this access).");
    return true;
  }

  void Abort() {
    d_.abort_message = ReadAbortMessage(core_, modules_, mem_);
    bool malloc_abort = HasFrame({"malloc_printerr", "__libc_message", "__malloc_assert"}) ||
                        (d_.abort_message && (d_.abort_message->find("free()") != std::string::npos ||
                                              d_.abort_message->find("malloc") != std::string::npos ||
                                              d_.abort_message->find("corrupted") != std::string::npos ||
                                              d_.abort_message->find("double free") != std::string::npos));
    bool assert_abort = HasFrame({"__assert_fail", "__assert_fail_base", "__assert_perror_fail"});
    bool terminate = HasFrame({"std::terminate", "__cxa_throw", "__cxa_rethrow", "__gnu_cxx::__verbose_terminate_handler",
                               "__cxxabiv1::__terminate", "std::__terminate"});
    if (assert_abort) {
      d_.syndrome = Syndrome::kAbortAssert;
      d_.evidence.push_back(d_.abort_message ? "glibc's assertion message: \"" + *d_.abort_message + "\""
                                             : "__assert_fail is on the stack (no message found in __abort_msg).");
    } else if (malloc_abort) {
      d_.syndrome = Syndrome::kHeapCorruption;
      d_.evidence.push_back(d_.abort_message ? "glibc malloc aborted: \"" + *d_.abort_message + "\""
                                             : "glibc's malloc_printerr is on the stack: malloc found its heap corrupted.");
    } else if (terminate) {
      d_.syndrome = Syndrome::kUncaughtException;
      ThrownException thrown = ReadThrownException(core_, modules_, mem_, regs_.sp());
      d_.exception_type = thrown.type;
      d_.exception_what = thrown.what;
      std::string e = "std::terminate was called";
      if (d_.exception_type) e += " for an exception of type " + *d_.exception_type;
      if (d_.exception_what) e += ", what() = \"" + *d_.exception_what + "\"";
      d_.evidence.push_back(e + ".");
    } else if (const Frame* gpu = GpuRuntimeFrame()) {
      // ROCr's VM fault handler prints "Memory access fault by GPU node-N
      // ... on address ..." to stderr and calls abort(); the CUDA driver
      // aborts on some unrecoverable GPU errors the same way.
      d_.syndrome = Syndrome::kGpuFault;
      d_.gpu_runtime = Basename(gpu->module->module->path);
      d_.evidence.push_back("abort() was called inside the GPU runtime (" +
                            (gpu->function.empty() ? Hex(gpu->pc) : gpu->function) + " in " + d_.gpu_runtime +
                            "): the runtime ends the process after the GPU reports a fault it cannot recover from.");
      if (d_.abort_message) d_.evidence.push_back("glibc's abort message: \"" + *d_.abort_message + "\"");
    } else {
      d_.syndrome = Syndrome::kAbort;
      d_.evidence.push_back(std::string("SIGABRT (") + SignalCodeName(sig_.signo, sig_.code).value_or("?") + ")" +
                            (d_.abort_message ? ": \"" + *d_.abort_message + "\"" : std::string(", no abort message")) + ".");
    }
  }

  // --- context -----------------------------------------------------------------
  static bool IsUnwinder(std::string_view f) {
    return StartsWith(f, "_Unwind_") || StartsWith(f, "_Ux86_64_") || StartsWith(f, "_ULx86_64_") ||
           OneOf(f, {"__gxx_personality_v0", "__cxa_throw", "__cxa_rethrow", "uw_install_context_1", "uw_frame_state_for",
                     "uw_update_context_1"});
  }
  static bool IsExit(std::string_view f) {
    return OneOf(f, {"__run_exit_handlers", "__cxa_finalize", "_dl_fini", "exit", "__GI_exit"}) ||
           StartsWith(f, "__tcf_") || StartsWith(f, "_GLOBAL__sub_D_");
  }
  static bool IsModuleLoad(std::string_view f) {
    return OneOf(f, {"dlopen", "___dlopen", "dlopen_doit", "_dl_open", "dl_open_worker", "dl_open_worker_begin",
                     "_dl_map_object", "_dl_relocate_object", "_dl_init", "call_init", "_dl_start_user"}) ||
           StartsWith(f, "_GLOBAL__sub_I_");
  }

  void DecideContext() {
    std::string unwinder_frame, exit_frame, load_frame;
    bool handler = false;
    for (const Frame* f : frames_) {
      if (IsUnwinder(f->function) && unwinder_frame.empty()) unwinder_frame = f->function;
      if (IsExit(f->function) && exit_frame.empty()) exit_frame = f->function;
      if (IsModuleLoad(f->function) && load_frame.empty()) load_frame = f->function;
      if (f->signal_trampoline) handler = true;
    }
    // The dead stack: return addresses the red zone still holds.
    std::string dead_unwinder;
    for (const auto& w : d_.red_zone) {
      if (!w.return_address) continue;
      PcSymbol s = modules_.Symbolize(w.value - 1);
      std::string name = !s.functions.empty() ? s.functions.back().name : s.symbol;
      if (name.empty()) name = s.symbol;
      if (IsUnwinder(name) && dead_unwinder.empty()) dead_unwinder = name;
    }
    // Control that went astray (pc 0 or not code) may have been the
    // unwinder's own transfer: its code addresses linger in the dead stack
    // below the red zone too (a saved signal frame's pc at
    // _Ux86_64_setcontext, return addresses of its frames).
    std::string deeper_unwinder;
    uint64_t deeper_at = 0;
    bool astray = d_.syndrome == Syndrome::kReturnToNull || d_.syndrome == Syndrome::kWildJump || d_.syndrome == Syndrome::kCallToNull;
    if (astray && unwinder_frame.empty() && dead_unwinder.empty()) {
      // The nearest unwinder address, unless a saved pc inside
      // _Ux86_64_setcontext (the signal frame of the race itself) is there.
      for (uint64_t off = 136; off <= 8192; off += 8) {
        auto v = mem_.Read64(regs_.sp() - off);
        if (!v) break;
        if (!modules_.IsCode(*v)) continue;
        PcSymbol s = modules_.Symbolize(*v);
        std::string name = !s.functions.empty() && !s.functions.back().name.empty() ? s.functions.back().name : s.symbol;
        if (!IsUnwinder(name)) continue;
        bool setcontext = name == "_Ux86_64_setcontext";
        if (deeper_unwinder.empty() || setcontext) {
          deeper_unwinder = name + "+" + Hex(s.symbol_offset);
          deeper_at = off;
        }
        if (setcontext) break;
      }
    }
    if (!unwinder_frame.empty() || !dead_unwinder.empty() || !deeper_unwinder.empty()) {
      d_.context = CrashContext::kExceptionUnwind;
      if (!unwinder_frame.empty()) {
        d_.evidence.push_back("The exception unwinder was running: " + unwinder_frame + " is on the stack.");
      } else if (!dead_unwinder.empty()) {
        d_.evidence.push_back("The exception unwinder was running: a return address into " + dead_unwinder +
                              " is still in the red zone below rsp.");
      } else {
        d_.evidence.push_back("The exception unwinder was running: the dead stack " + std::to_string(deeper_at) +
                              " bytes below rsp still holds the code address " + deeper_unwinder + ".");
      }
      Unwinder();
    } else if (handler) {
      d_.context = CrashContext::kSignalHandler;
      d_.evidence.push_back("The fault happened inside a signal handler: a signal frame (<signal handler called>) lies below it on the stack.");
    } else if (!load_frame.empty()) {
      d_.context = CrashContext::kModuleLoad;
      d_.evidence.push_back("A module was being loaded or initialized: " + load_frame + " is on the stack.");
    } else if (!exit_frame.empty()) {
      d_.context = CrashContext::kExitTime;
      d_.evidence.push_back("The process was exiting: " + exit_frame + " is on the stack (static destructors and atexit handlers run there).");
    } else {
      d_.context = CrashContext::kRuntime;
    }
  }

  // Which library the dynamic linker bound _Unwind_RaiseException to: the
  // first in the link map's load order that defines it.
  void Unwinder() {
    std::vector<const MappedModule*> order = LinkMapOrder(core_, modules_, mem_);
    for (const MappedModule* m : order) {
      if (!m->image || !m->image->DefinesDynamic("_Unwind_RaiseException")) continue;
      std::string base = Basename(m->module->path);
      d_.unwinder = StartsWith(base, "libunwind") ? "GNU libunwind (" + base + ")"
                    : StartsWith(base, "libgcc_s") ? "libgcc (" + base + ")"
                                                   : base;
      d_.evidence.push_back("_Unwind_RaiseException binds to " + *d_.unwinder + ", the first module in load order that defines it.");
      return;
    }
  }

  // --- threads -----------------------------------------------------------------
  void Threads() {
    std::map<std::string, ThreadGroup> groups;
    for (const Backtrace& bt : bts_) {
      std::string state = ThreadWaitOf(bt.thread->registers, modules_).state;
      d_.thread_states.push_back(state);
      // The first frame of the thread's own code: where it waits or runs,
      // as the program sees it.
      std::string function;
      for (const auto& f : bt.frames) {
        if (!f.function.empty() && !(f.module && RuntimeLibrary(f.module->module->path))) {
          function = f.function;
          break;
        }
      }
      if (function.empty()) continue;
      auto& g = groups[state + '\t' + function];
      g.function = function;
      g.state = state;
      g.tids.push_back(bt.thread->tid);
      if (&bt == crashing_) g.with_crashing_thread = true;
    }
    for (auto& [k, g] : groups) {
      if (g.tids.size() >= 2) d_.thread_groups.push_back(g);
    }
    std::sort(d_.thread_groups.begin(), d_.thread_groups.end(),
              [](const ThreadGroup& a, const ThreadGroup& b) { return a.tids.size() > b.tids.size(); });
    // A thread that was sent a signal did not race with anything.
    if (d_.syndrome == Syndrome::kExternalSignal) return;
    for (const auto& g : d_.thread_groups) {
      if (g.with_crashing_thread) {
        d_.evidence.push_back(std::to_string(g.tids.size() - 1) + " other thread(s) were " + g.state + " in " +
                              g.function + ", the crashing thread's function: a possible data race.");
      }
    }
  }

  // --- advice ------------------------------------------------------------------
  // The facts the advice is written from (diagnose/advice.h).
  AdviceFacts Facts() const {
    AdviceFacts f;
    f.where = frames_.empty() || frames_[0]->function.empty() ? Where(modules_, regs_.pc()) : frames_[0]->function;
    if (frames_.size() > 1) f.caller = frames_[1]->function;
    f.pc = regs_.pc();
    f.signal = sig_;
    f.delivered = *core_.signal();
    f.process_pid = core_.process() ? std::optional<int>(core_.process()->pid) : std::nullopt;
    return f;
  }

  const Core& core_;
  const ModuleMap& modules_;
  const std::vector<Backtrace>& bts_;
  const std::optional<FaultContext>& fc_;
  StackMemory& mem_;
  Registers regs_;
  SignalInfo sig_;
  const Backtrace* crashing_ = nullptr;
  std::vector<const Frame*> frames_;
  std::optional<MemoryOperand> op_;
  bool report_;
  Diagnosis d_;
};

}  // namespace

ThreadWait ThreadWaitOf(const Registers& regs, const ModuleMap& modules) {
  ThreadWait w;
  // A `syscall` just before pc, with the system call's number kept in
  // orig_rax, is a thread blocked in the kernel. A system call a signal
  // interrupted, returning EINTR, has orig_rax -1 by the time a signal
  // pending behind it is delivered.
  std::byte b[2];
  uint64_t pc = regs.pc();
  bool after_syscall = pc >= 2 && modules.ReadCode(pc - 2, b) == 2 && b[0] == std::byte{0x0f} && b[1] == std::byte{0x05};
  if (after_syscall && regs[Reg::orig_rax] != ~uint64_t{0}) w.syscall = regs[Reg::orig_rax];
  w.interrupted = after_syscall && !w.syscall && regs[Reg::rax] == static_cast<uint64_t>(-EINTR);
  if (!w.syscall) {
    w.state = w.interrupted ? "interrupted system call" : "running";
    return w;
  }
  switch (*w.syscall) {
    case 202: w.state = "futex wait"; break;  // mutexes, condition variables, joins
    case 7: case 23: case 232: case 270: case 271: case 281: case 441: w.state = "poll"; break;
    case 35: case 230: w.state = "sleep"; break;
    case 0: case 17: case 19: case 45: case 47: case 299: w.state = "read"; break;
    case 43: case 288: w.state = "accept"; break;
    case 61: case 247: w.state = "wait for child"; break;
    case 34: case 130: w.state = "pause"; break;
    default: w.state = "system call " + SyscallName(*w.syscall);
  }
  return w;
}

Diagnosis Diagnose(const Core& core, const ModuleMap& modules, const std::vector<Backtrace>& threads,
                   const std::optional<FaultContext>& fault_context, StackMemory& memory, DiagnosisDepth depth) {
  return Diagnoser(core, modules, threads, fault_context, memory, depth).Run();
}

}  // namespace coroner
