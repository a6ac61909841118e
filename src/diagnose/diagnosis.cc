#include "diagnose/diagnosis.h"

#include "diagnose/syscalls.h"

#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <map>
#include <set>

#include "core/byte_view.h"
#include "core/elf_image.h"
#include "core/signals.h"
#include "diagnose/runtime_readers.h"
#include "symbolize/disassembler.h"
#include "text/text.h"

namespace coroner {


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
  switch (syndrome) {
    case Syndrome::kNullDeref: return "null-deref";
    case Syndrome::kBadPointer: return "bad-pointer";
    case Syndrome::kWriteToReadonly: return "write-to-readonly";
    case Syndrome::kReturnToNull: return "return-to-null";
    case Syndrome::kCallToNull: return "call-to-null";
    case Syndrome::kWildJump: return "wild-jump";
    case Syndrome::kMisalignedStack: return "misaligned-stack";
    case Syndrome::kStackOverflow: return "stack-overflow";
    case Syndrome::kAbortAssert: return "abort-assert";
    case Syndrome::kUncaughtException: return "uncaught-exception";
    case Syndrome::kHeapCorruption: return "heap-corruption";
    case Syndrome::kAbort: return "abort";
    case Syndrome::kIllegalInstruction: return "illegal-instruction";
    case Syndrome::kFpe: return "fpe";
    case Syndrome::kBusError: return "bus-error";
    case Syndrome::kGpuFault: return "gpu-fault";
    case Syndrome::kExternalSignal: return "external-signal";
    case Syndrome::kDeadlock: return "deadlock";
    case Syndrome::kSnapshot: return "snapshot";
    case Syndrome::kOther: return "other";
  }
  return "other";
}

std::optional<Syndrome> SyndromeFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(Syndrome::kOther); ++i) {
    if (SyndromeName(static_cast<Syndrome>(i)) == name) return static_cast<Syndrome>(i);
  }
  return std::nullopt;
}

std::string_view ContextName(CrashContext context) {
  switch (context) {
    case CrashContext::kRuntime: return "runtime";
    case CrashContext::kExitTime: return "exit-time";
    case CrashContext::kSignalHandler: return "signal-handler";
    case CrashContext::kExceptionUnwind: return "exception-unwind";
    case CrashContext::kModuleLoad: return "module-load";
  }
  return "runtime";
}

size_t FaultOrigin(const Backtrace* bt, const std::optional<FaultContext>& fc) {
  if (!bt || !fc) return 0;
  for (size_t i = 0; i < bt->frames.size(); ++i) {
    if (bt->frames[i].signal_trampoline && bt->frames[i].sp == fc->frame_address) return i + 1;
  }
  return 0;
}

std::vector<const Frame*> EffectiveFrames(const Backtrace* bt, const std::optional<FaultContext>& fc) {
  std::vector<const Frame*> out;
  if (!bt) return out;
  out.reserve(bt->frames.size());
  for (size_t i = FaultOrigin(bt, fc); i < bt->frames.size(); ++i) out.push_back(&bt->frames[i]);
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

// The address a memory operand names, from the registers; nullopt when
// it has no base register or is pc-relative.
std::optional<uint64_t> OperandAddress(const Registers& regs, const MemoryOperand& op) {
  if (!op.base || op.base->reg == Reg::rip || op.base->reg == Reg::pc) return std::nullopt;
  uint64_t e = SizedRegValue(regs, *op.base) + static_cast<uint64_t>(op.displacement);
  if (op.index) {
    uint64_t index = SizedRegValue(regs, *op.index);
    if (op.index_sign_extended) index = static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(index)));
    e += index * static_cast<uint64_t>(op.scale);
  }
  return e;
}

class Diagnoser {
 public:
  Diagnoser(const Core& core, const ModuleMap& modules, const std::vector<Backtrace>& bts,
            const std::optional<FaultContext>& fc, StackMemory& mem, DiagnosisDepth depth)
      : core_(core), modules_(modules), bts_(bts), fc_(fc), mem_(mem), report_(depth == DiagnosisDepth::kReport) {}

  Diagnosis Run() {
    if (!core_.threads().empty() && !core_.signal()) return Snapshot();
    if (core_.threads().empty() || !core_.signal()) {
      d_.syndrome = Syndrome::kOther;
      d_.context = CrashContext::kRuntime;
      return std::move(d_);
    }
    d_.classified = true;
    const Thread& t = core_.threads()[core_.crashing_thread()];
    regs_ = fc_ ? fc_->registers : t.registers;
    sig_ = fc_ ? fc_->signal : *core_.signal();
    crashing_ = bts_.size() > core_.crashing_thread() ? &bts_[core_.crashing_thread()] : nullptr;
    frames_ = EffectiveFrames(crashing_, fc_);
    if (fc_) d_.evidence.push_back(evidence::HandlerCaughtFault{*core_.signal(), fc_->signal, fc_->frame_address});
    RedZone();
    if (report_) ClassifyRegisters();
    if (auto op = MemoryOperandAt(modules_, regs_.pc())) op_ = op;
    if (op_) d_.faulting_instruction = op_->text;
    FaultWithoutSiginfo();
    DecideSyndrome();
    if (!d_.impossible_state) PcInsideAnInstruction();
    DecideContext();
    if (report_) {
      Threads();
      Site();
    }
    LockWaits();
    return std::move(d_);
  }

  // A process no signal stopped: what its threads wait on is the story.
  Diagnosis Snapshot() {
    d_.classified = true;
    d_.syndrome = Syndrome::kSnapshot;
    regs_ = core_.threads()[0].registers;
    if (report_) Threads();
    LockWaits();
    return std::move(d_);
  }

 private:
  // --- memory and addresses ---------------------------------------------------
  // What `v` is as an address; `where`, when asked for, names the code or
  // the module whose data it points into.
  // aarch64 Linux ignores a data address' top byte (TBI): its tag, if any,
  // is no part of where it points.
  uint64_t Untagged(uint64_t v) const { return UntaggedAddress(regs_.arch, v); }
  bool Canonical(uint64_t v) const { return IsCanonicalAddress(regs_.arch, v); }

  AddressKind Classify(uint64_t tagged, std::string* where) const {
    const uint64_t v = Untagged(tagged);
    if (v == 0) return AddressKind::kNull;
    if (v < kNullPages) return AddressKind::kSmall;
    if (!Canonical(v)) return AddressKind::kNonCanonical;
    const Segment* s = core_.memory().Find(v);
    if (!s) return AddressKind::kUnmapped;
    if (s->exec) {
      if (where) *where = Where(modules_, v);
      return AddressKind::kCode;
    }
    for (const auto& th : core_.threads()) {
      const Segment* ss = core_.memory().Find(th.registers.sp());
      if (ss == s) return AddressKind::kStack;
    }
    if (s->write) {
      const MappedModule* m = modules_.Find(v);
      if (m && where) *where = Basename(m->module->path);
      return m ? AddressKind::kData : AddressKind::kHeap;
    }
    return s->read ? AddressKind::kReadOnly : AddressKind::kNoAccess;
  }

  void RedZone() {
    for (int64_t off = 8; off <= 128; off += 8) {
      auto v = mem_.Read64(regs_.sp() - static_cast<uint64_t>(off));
      if (!v) break;
      // The labels read only what a word is; where it points is for a report.
      RedZoneWord w{-off, *v};
      w.kind = Classify(*v, report_ ? &w.where : nullptr);
      if (w.kind == AddressKind::kCode && LooksLikeReturnAddress(modules_, *v)) {
        w.return_address = true;
        w.where = report_ ? Where(modules_, *v - 1) : std::string();
      }
      d_.red_zone.push_back(std::move(w));
    }
  }

  // qemu-user's cores carry no siginfo: NT_PRSTATUS's signal number alone,
  // with code 0. For a SIGSEGV at an instruction with a memory operand, what
  // the kernel would have said follows from the operand, as it does from
  // the trap number of an x86_64 sigcontext: the address, and whether any
  // mapping holds it (SEGV_ACCERR) or none does (SEGV_MAPERR).
  void FaultWithoutSiginfo() {
    if (sig_.source != SignalInfo::Source::kPrstatus || sig_.signo != SIGSEGV || sig_.code != 0 || sig_.fault_address)
      return;
    std::optional<uint64_t> effective = EffectiveAddress();
    if (!effective) return;
    // The kernel leaves a tag out of si_addr.
    const uint64_t e = Untagged(*effective);
    sig_.fault_address = e;
    sig_.code = core_.memory().Find(e) ? SEGV_ACCERR : SEGV_MAPERR;
  }

  void ClassifyRegisters() {
    static const Reg kGeneral[] = {Reg::rax, Reg::rbx, Reg::rcx, Reg::rdx, Reg::rsi, Reg::rdi, Reg::rbp, Reg::rsp,
                                   Reg::r8,  Reg::r9,  Reg::r10, Reg::r11, Reg::r12, Reg::r13, Reg::r14, Reg::r15,
                                   Reg::rip};
    std::span<const Reg> general = kGeneral;
    if (regs_.arch == Arch::kAarch64) general = RegDisplayOrder(Arch::kAarch64).first(kA64RegCount - 1);  // not pstate
    for (Reg r : general) {
      RegisterClass c{r, regs_[r], AddressKind::kNull, {}};
      c.kind = Classify(c.value, &c.where);
      bool pointer_into_memory = c.kind == AddressKind::kHeap || c.kind == AddressKind::kData || c.kind == AddressKind::kStack;
      bool stack_pointer = r == Reg::rsp || r == Reg::rbp || r == Reg::sp || r == Reg::x29;
      c.misaligned_pointer = pointer_into_memory && c.value % 8 != 0 && !stack_pointer;
      d_.registers.push_back(std::move(c));
    }
  }

  // The address the faulting operand names (base + index * scale +
  // displacement); none without a base register, or rip-relative.
  std::optional<uint64_t> EffectiveAddress() const { return op_ ? OperandAddress(regs_, *op_) : std::nullopt; }

  // The operand's base register and its value; none for rip-relative.
  std::optional<std::pair<SizedReg, uint64_t>> DataBase() const {
    if (!op_ || !op_->base || op_->base->reg == Reg::rip || op_->base->reg == Reg::pc) return std::nullopt;
    return std::pair{*op_->base, SizedRegValue(regs_, *op_->base)};
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

  std::optional<std::string> InstructionText() const {
    return op_ ? std::optional<std::string>(op_->text) : std::nullopt;
  }

  void Decide(Syndrome s, Evidence e) {
    d_.syndrome = s;
    d_.evidence.push_back(std::move(e));
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
    if (own) {
      // Sent by the process itself. abort() and raise() send from the
      // thread that gets the signal, blocked in the sending system call.
      // Blocked in any other one, the thread did not cause it: a handler
      // re-sent a signal it received (node's, after a kill), or another
      // thread sent it.
      const SyscallEntry* call = wait.syscall ? FindSyscall(*wait.syscall, wait.arch) : nullptr;
      if ((call && call->sends_signal) || wait.kind == WaitKind::kRunning || wait.kind == WaitKind::kSpin) return false;
    }
    Decide(Syndrome::kExternalSignal, evidence::SignalSent{s, own});
    std::string where = crashing_ && !crashing_->frames.empty() && !crashing_->frames[0].function.empty()
                            ? crashing_->frames[0].function
                            : Where(modules_, regs_.pc());
    d_.evidence.push_back(evidence::ThreadWasIn{wait, where});
    return true;
  }

  void DecideSyndrome() {
    if (ExternalSignal()) return;
    int signo = sig_.signo;
    uint64_t pc = regs_.pc(), sp = regs_.sp();
    bool fault = signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE || signo == SIGTRAP;
    if (fault && pc == 0) return PcZero(sp);
    if (fault && !modules_.IsCode(pc) && regs_.arch == Arch::kAarch64) {
      // `ret` leaves its target in x30; `br`/`blr` leave no trace.
      bool returned = StripPointerAuthentication(Arch::kAarch64, regs_[Reg::x30], std::nullopt) == pc;
      if (returned) return Decide(Syndrome::kWildJump, evidence::RetPoppedNonCode{pc, std::nullopt, {}});
      return Decide(Syndrome::kWildJump, evidence::PcNotCode{pc, Classify(pc, nullptr)});
    }
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
          Decide(Syndrome::kMisalignedStack, evidence::RetPoppedNonCode{pc, ra, Where(modules_, ra - 1)});
          d_.impossible_state = d_.evidence.back();
          return;
        }
        return Decide(Syndrome::kWildJump, evidence::RetPoppedNonCode{pc, std::nullopt, {}});
      }
      return Decide(Syndrome::kWildJump, evidence::PcNotCode{pc, Classify(pc, nullptr)});
    }
    if (signo == SIGSEGV && StackOverflow()) return;
    if (fault && MisalignedStack()) {
      // Compiled code cannot reach this state (the rules leave setcontext,
      // longjmp and signal frames out).
      d_.impossible_state = d_.evidence.back();
      return;
    }
    if (signo == SIGSEGV && op_ && op_->is_ret && regs_.arch == Arch::kX86_64) {
      // A ret that faulted: the word it would return to is not code.
      if (auto target = mem_.Read64(sp); target && !modules_.IsCode(*target)) {
        return Decide(Syndrome::kWildJump, evidence::RetTargetNotCode{*target});
      }
    }
    evidence::SignalAt at{sig_, Where(modules_, pc), InstructionText()};
    switch (signo) {
      case SIGILL: return Decide(Syndrome::kIllegalInstruction, std::move(at));
      case SIGFPE: return Decide(Syndrome::kFpe, std::move(at));
      case SIGBUS: return Decide(Syndrome::kBusError, std::move(at));
      case SIGSEGV: return Segv();
      case SIGABRT: return Abort();
      default: return Decide(Syndrome::kOther, std::move(at));
    }
  }

  void PcZero(uint64_t sp) {
    using evidence::PcZeroCause;
    if (regs_.arch == Arch::kAarch64) {
      // `blr` to NULL left the return address in x30; `ret` to a zero x30
      // (a frame record overwritten with zeros) left x30 zero.
      uint64_t lr = StripPointerAuthentication(Arch::kAarch64, regs_[Reg::x30], std::nullopt);
      if (lr == 0) return Decide(Syndrome::kReturnToNull, evidence::PcZero{PcZeroCause::kReturn});
      uint32_t insn = 0;
      if (LooksLikeReturnAddress(modules_, lr) &&
          modules_.ReadCode(lr - 4, std::as_writable_bytes(std::span(&insn, 1))) == 4) {
        bool indirect = A64CallKind(insn) == A64Call::kIndirect;
        return Decide(Syndrome::kCallToNull, evidence::PcZero{indirect ? PcZeroCause::kIndirectCall : PcZeroCause::kCall,
                                                              lr, Where(modules_, lr - 4)});
      }
      return Decide(Syndrome::kWildJump, evidence::PcZero{PcZeroCause::kUnknown});
    }
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
      return Decide(Syndrome::kCallToNull, evidence::PcZero{PcZeroCause::kIndirectCall, *top, Where(modules_, *top - 1)});
    }
    if (below && *below == 0) return Decide(Syndrome::kReturnToNull, evidence::PcZero{PcZeroCause::kReturn});
    if (top_is_ra) {
      return Decide(Syndrome::kCallToNull, evidence::PcZero{PcZeroCause::kCall, *top, Where(modules_, *top - 1)});
    }
    Decide(Syndrome::kWildJump, evidence::PcZero{PcZeroCause::kUnknown});
  }

  bool StackOverflow() {
    uint64_t sp = regs_.sp();
    uint64_t addr = sig_.fault_address.value_or(sp);
    const auto& segs = core_.memory().segments();
    // The stack: the segment holding rsp, or the first writable one above it
    // (rsp itself in the guard: qemu-user maps its guest's guard page).
    const Segment* stack = core_.memory().Find(sp);
    if (stack && !stack->read && !stack->write) stack = nullptr;
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
    Decide(Syndrome::kStackOverflow, evidence::BelowStack{addr, stack->vaddr, sp, in_guard});
    size_t depth = crashing_ ? crashing_->frames.size() : 0;
    if (depth > 0) {
      std::map<std::string, size_t> counts;
      for (const auto& f : crashing_->frames) ++counts[f.function];
      auto most = std::max_element(counts.begin(), counts.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      if (most->second > 16 && !most->first.empty()) {
        d_.evidence.push_back(evidence::Recursion{most->first, most->second, depth});
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
    d_.evidence.push_back(evidence::PcInsideInstruction{pc, at.straddling, Where(modules_, at.straddling.address)});
    d_.impossible_state = d_.evidence.back();
  }

  bool MisalignedStack() {
    // The ABI keeps the CFA 16-byte aligned; off by 8 means rsp moved by a
    // word it should not have (or the return address sits one slot away).
    // (Optimized code may legally call a leaf with rsp unaligned, so the
    // CFA alone does not decide; an instruction that needs the alignment does.)
    const Frame* f0 = frames_.empty() ? nullptr : frames_[0];
    if (f0 && f0->cfa && *f0->cfa % 16 == 8 && f0->trust != FrameTrust::kSignal && op_ && op_->needs_alignment) {
      Decide(Syndrome::kMisalignedStack, evidence::MisalignedFrame{*f0->cfa, op_->text});
      return true;
    }
    // aarch64 checks the stack pointer itself: a load or store based on sp
    // while sp is not 16-byte aligned is an SP alignment fault, which the
    // kernel delivers as SIGBUS, BUS_ADRALN (a core without siginfo only
    // says SIGBUS).
    if (regs_.arch == Arch::kAarch64 && sig_.signo == SIGBUS && op_ && op_->base && op_->base->reg == Reg::sp &&
        regs_.sp() % 16 != 0 && (sig_.code == BUS_ADRALN || sig_.source == SignalInfo::Source::kPrstatus)) {
      Decide(Syndrome::kMisalignedStack, evidence::MisalignedStackOperand{op_->text, *op_->base, regs_.sp()});
      return true;
    }
    bool stack_base = op_ && op_->base && (op_->base->reg == Reg::rsp || op_->base->reg == Reg::rbp);
    if (op_ && op_->needs_alignment && stack_base && sig_.code == 0x80) {
      uint64_t base = SizedRegValue(regs_, *op_->base);
      if ((base + static_cast<uint64_t>(op_->displacement)) % 16 != 0) {
        Decide(Syndrome::kMisalignedStack, evidence::MisalignedStackOperand{op_->text, *op_->base, base});
        return true;
      }
    }
    if (op_ && op_->is_ret && regs_.arch == Arch::kX86_64) {
      auto at = mem_.Read64(regs_.sp());
      auto next = mem_.Read64(regs_.sp() + 8);
      auto prev = mem_.Read64(regs_.sp() - 8);
      bool at_ok = at && LooksLikeReturnAddress(modules_, *at);
      if (!at_ok && ((next && LooksLikeReturnAddress(modules_, *next)) || (prev && LooksLikeReturnAddress(modules_, *prev)))) {
        Decide(Syndrome::kMisalignedStack, evidence::ReturnAddressOneSlotAway{});
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
    std::optional<std::pair<SizedReg, uint64_t>> base = DataBase();
    std::optional<uint64_t> effective = EffectiveAddress();
    uint64_t addr = sent ? effective.value_or(sig_.fault_address.value_or(0)) : sig_.fault_address.value_or(0);
    uint64_t pc = regs_.pc();
    using evidence::BadAddress;
    constexpr int kSegvMteAsync = 8, kSegvMteSync = 9;
    const bool a64 = regs_.arch == Arch::kAarch64;
    // An asynchronous MTE tag check fault is reported after the access, at
    // a later pc and with no address (si_addr 0): a tag mismatch, neither a
    // NULL dereference nor the instruction at pc's doing.
    if (a64 && sig_.code == kSegvMteAsync) {
      evidence::BadAccess e{std::nullopt, Where(modules_, pc), std::nullopt, BadAddress::kTagMismatch, false};
      e.asynchronous = true;
      return Decide(Syndrome::kBadPointer, std::move(e));
    }
    if (!kernel && addr < kNullPages) {
      if (base && base->second < kNullPages) {
        d_.null_register = base->first;
        return Decide(Syndrome::kNullDeref,
                      evidence::NullBaseRegister{base->first, base->second, InstructionText(), pc, Where(modules_, pc), addr});
      }
      return Decide(Syndrome::kNullDeref, evidence::NullPage{addr, InstructionText(), pc, Where(modules_, pc)});
    }
    if (WriteToReadonly(kernel ? std::nullopt : std::optional<uint64_t>(addr))) return;
    uint64_t a = Untagged(kernel ? effective.value_or(0) : addr);
    BadAddress why = sig_.code == kSegvMteSync && a64 ? BadAddress::kTagMismatch
                     : !Canonical(a)            ? (a64 ? BadAddress::kBeyondUserSpace : BadAddress::kNonCanonical)
                     : !core_.memory().Find(a)  ? BadAddress::kUnmapped
                     : a % 8 != 0               ? BadAddress::kMisaligned
                                                : BadAddress::kNoAccess;
    std::optional<uint64_t> shown = kernel && !effective ? std::nullopt : std::optional<uint64_t>(a);
    Decide(Syndrome::kBadPointer, evidence::BadAccess{InstructionText(), Where(modules_, pc), shown, why, kernel});
    std::vector<std::pair<std::string, uint64_t>> pointers;
    if (op_ && op_->base) {
      uint64_t value = SizedRegValue(regs_, *op_->base);
      d_.evidence.push_back(evidence::BaseRegister{*op_->base, value});
      Reg b = op_->base->reg;
      if (b != Reg::rip && b != Reg::rsp && b != Reg::pc && b != Reg::sp) pointers.emplace_back(SizedRegName(*op_->base), value);
    }
    if (!kernel || effective) pointers.emplace_back("the fault address", a);
    BitFlips(pointers);
  }

  // A bad pointer one flipped bit away from NULL or from an address the core
  // maps: evidence of hardware corruption, if it recurs on the host.
  void BitFlips(const std::vector<std::pair<std::string, uint64_t>>& pointers) {
    const Thread& t = core_.threads()[core_.crashing_thread()];
    d_.possible_bit_flips = PossibleBitFlips(pointers, core_.memory(), regs_.arch, t.a64.pac_data_mask);
    for (const BitFlip& f : d_.possible_bit_flips) {
      d_.evidence.push_back(evidence::PossibleBitFlip{f, Classify(f.original, nullptr)});
    }
  }

  // SEGV_ACCERR from an instruction that writes its memory operand, at an
  // address mapped without write permission: a string literal, a constant
  // table, code, a page the program protected.
  bool WriteToReadonly(std::optional<uint64_t> addr) {
    constexpr int kSegvAccerr = 2;
    if (!addr || sig_.code != kSegvAccerr || !op_ || !op_->writes) return false;
    const FileMapping* file = core_.FileAt(*addr);
    evidence::ReadonlyMapping mapping;
    if (const Segment* s = core_.memory().Find(*addr)) {
      if (s->write) return false;
      mapping.start = s->vaddr, mapping.end = s->end(), mapping.read = s->read, mapping.exec = s->exec;
    } else if (file && modules_.IsCode(*addr)) {
      // A core without the mapping (gdb's gcore leaves out a library's
      // unmodified code): the module's file says the loader maps it as code.
      mapping.start = file->start, mapping.end = file->end, mapping.exec = true, mapping.from_module_file = true;
    } else {
      return false;
    }
    if (file) mapping.path = file->path, mapping.file_offset = file->offset + (*addr - file->start);
    d_.readonly_mapping = mapping;
    Decide(Syndrome::kWriteToReadonly, evidence::WroteReadonly{op_->text, Where(modules_, regs_.pc()), *addr, mapping});
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
    if (assert_abort) return Decide(Syndrome::kAbortAssert, evidence::AssertionFailed{d_.abort_message});
    if (malloc_abort) return Decide(Syndrome::kHeapCorruption, evidence::MallocAborted{d_.abort_message});
    if (terminate) {
      ThrownException thrown = ReadThrownException(core_, modules_, mem_, regs_.sp());
      d_.exception_type = thrown.type;
      d_.exception_what = thrown.what;
      return Decide(Syndrome::kUncaughtException, evidence::Terminated{thrown.type, thrown.what});
    }
    if (const Frame* gpu = GpuRuntimeFrame()) {
      // ROCr's VM fault handler prints "Memory access fault by GPU node-N
      // ... on address ..." to stderr and calls abort(); the CUDA driver
      // aborts on some unrecoverable GPU errors the same way.
      d_.gpu_runtime = Basename(gpu->module->module->path);
      Decide(Syndrome::kGpuFault,
             evidence::GpuRuntimeAborted{gpu->function.empty() ? Hex(gpu->pc) : gpu->function, d_.gpu_runtime});
      if (d_.abort_message) d_.evidence.push_back(evidence::AbortMessage{*d_.abort_message});
      return;
    }
    Decide(Syndrome::kAbort, evidence::AbortCalled{sig_, d_.abort_message});
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

  // The unwinder's transfer, seen in the dead stack: control that went
  // astray (pc 0 or not code) may have been the unwinder's own jump, and
  // its code addresses linger below the red zone (a saved signal frame's pc
  // at _Ux86_64_setcontext, return addresses of its frames). The nearest
  // unwinder address, unless a saved pc inside _Ux86_64_setcontext (the
  // signal frame of the race itself) is there.
  std::optional<evidence::UnwinderRunning> UnwinderInDeadStack() const {
    std::optional<evidence::UnwinderRunning> found;
    for (uint64_t off = 136; off <= 8192; off += 8) {
      auto v = mem_.Read64(regs_.sp() - off);
      if (!v) break;
      if (!modules_.IsCode(*v)) continue;
      PcSymbol s = modules_.Symbolize(*v);
      std::string name = !s.functions.empty() && !s.functions.back().name.empty() ? s.functions.back().name : s.symbol;
      if (!IsUnwinder(name)) continue;
      bool setcontext = name == "_Ux86_64_setcontext";
      if (!found || setcontext) {
        found = evidence::UnwinderRunning{evidence::UnwinderSeen::kInDeadStack, name + "+" + Hex(s.symbol_offset), off};
      }
      if (setcontext) break;
    }
    return found;
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
    using evidence::UnwinderSeen;
    std::optional<evidence::UnwinderRunning> unwinder;
    if (!unwinder_frame.empty()) unwinder = evidence::UnwinderRunning{UnwinderSeen::kOnStack, unwinder_frame};
    // The dead stack: return addresses the red zone still holds.
    for (const auto& w : d_.red_zone) {
      if (unwinder || !w.return_address) continue;
      PcSymbol s = modules_.Symbolize(w.value - 1);
      std::string name = !s.functions.empty() ? s.functions.back().name : s.symbol;
      if (name.empty()) name = s.symbol;
      if (IsUnwinder(name)) unwinder = evidence::UnwinderRunning{UnwinderSeen::kInRedZone, name};
    }
    bool astray = d_.syndrome == Syndrome::kReturnToNull || d_.syndrome == Syndrome::kWildJump ||
                  d_.syndrome == Syndrome::kCallToNull;
    if (!unwinder && astray) unwinder = UnwinderInDeadStack();
    if (unwinder) {
      d_.context = CrashContext::kExceptionUnwind;
      d_.evidence.push_back(*unwinder);
      Unwinder();
    } else if (handler) {
      d_.context = CrashContext::kSignalHandler;
      d_.evidence.push_back(evidence::InSignalHandler{});
    } else if (!load_frame.empty()) {
      d_.context = CrashContext::kModuleLoad;
      d_.evidence.push_back(evidence::LoadingModule{load_frame});
    } else if (!exit_frame.empty()) {
      d_.context = CrashContext::kExitTime;
      d_.evidence.push_back(evidence::Exiting{exit_frame});
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
      d_.evidence.push_back(evidence::UnwinderBinding{*d_.unwinder});
      return;
    }
  }

  // --- threads -----------------------------------------------------------------
  void Threads() {
    std::map<std::pair<std::string, std::string>, ThreadGroup> groups;
    for (const Backtrace& bt : bts_) {
      ThreadWait state = ThreadWaitOf(bt.thread->registers, modules_);
      // A thread that faulted in a polling loop was not spinning: its read faulted.
      if (state.kind == WaitKind::kSpin && &bt == crashing_ && !Stopped()) state.kind = WaitKind::kRunning;
      if (state.kind == WaitKind::kSpin) SpinWaitOf(bt);
      d_.thread_states.push_back(state);
      // The first frame of the thread's own code: where it waits or runs,
      // as the program sees it.
      std::string function = OwnFunction(bt);
      if (function.empty()) continue;
      auto& g = groups[{ThreadStateName(state), function}];
      g.function = function;
      g.state = state;
      g.tids.push_back(bt.thread->tid);
      if (&bt == crashing_) g.with_crashing_thread = true;
    }
    for (auto& [k, g] : groups) {
      if (g.tids.size() >= 2) d_.thread_groups.push_back(g);
    }
    std::stable_sort(d_.thread_groups.begin(), d_.thread_groups.end(),
                     [](const ThreadGroup& a, const ThreadGroup& b) { return a.tids.size() > b.tids.size(); });
    // A thread that was sent a signal did not race with anything.
    if (d_.syndrome == Syndrome::kExternalSignal) return;
    for (const auto& g : d_.thread_groups) {
      if (g.with_crashing_thread) d_.evidence.push_back(evidence::PossibleRace{g.tids.size() - 1, g.state, g.function});
    }
  }

  // --- locks -----------------------------------------------------------------
  // Each thread blocked in pthread_mutex_lock: glibc's __lll_lock_wait
  // waits with futex(&mutex->__lock, FUTEX_WAIT, 2), and the mutex's
  // __owner (8 bytes in) is the TID that holds it. A cycle of owners is a
  // deadlock; it decides the syndrome of a snapshot or of a process killed
  // from outside (a watchdog's signal), and is evidence beside a crash.
  // The wait is known from the registers and the lock word alone, so a
  // dataset row (no thread but the crashing one unwound) finds the same
  // deadlock as the report; where the frames are there, they must agree.
  void LockWaits() {
    std::set<int> tids;
    for (const Backtrace& bt : bts_) tids.insert(bt.thread->tid);
    for (const Backtrace& bt : bts_) {
      const Registers& r = bt.thread->registers;
      ThreadWait wait = ThreadWaitOf(r, modules_);
      if (wait.kind != WaitKind::kFutex) continue;
      constexpr uint64_t kFutexCommand = 0x7f;  // without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
      constexpr uint64_t kFutexWait = 0, kLockedWithWaiters = 2;
      if ((r[SyscallArgument(r.arch, 1)] & kFutexCommand) != kFutexWait) continue;
      if (r[SyscallArgument(r.arch, 2)] != kLockedWithWaiters) continue;
      if (!bt.frames.empty() && !InMutexLock(bt)) continue;
      LockWait w;
      w.tid = bt.thread->tid;
      w.thread_name = bt.thread->name;
      w.where = OwnFunction(bt);
      w.mutex = Untagged(r[SyscallArgument(r.arch, 0)]);
      if (w.mutex % 4 != 0) continue;  // a futex word is aligned: this is no lock wait
      auto owner = core_.memory().Read<int32_t>(w.mutex + 8);
      if (!owner) continue;
      w.owner = *owner > 0 ? *owner : 0;
      w.owner_in_process = w.owner && tids.count(w.owner);
      if (report_) {
        PcSymbol s = modules_.Symbolize(w.mutex);
        if (s.module && !s.symbol.empty() && s.symbol_offset == 0) w.mutex_name = s.symbol;
      }
      d_.lock_waits.push_back(std::move(w));
    }
    // Follow owners from each waiting thread; a thread met twice on one
    // walk closes a cycle. The cycle is reported from its lowest TID.
    std::map<int, const LockWait*> waiting;
    for (const auto& w : d_.lock_waits) waiting[w.tid] = &w;
    for (const auto& entry : waiting) {
      const int tid = entry.first;
      const LockWait* first = entry.second;
      std::vector<const LockWait*> path;
      std::set<int> seen;
      const LockWait* w = first;
      while (w && !seen.count(w->tid)) {
        seen.insert(w->tid);
        path.push_back(w);
        auto next = waiting.find(w->owner);
        w = next == waiting.end() ? nullptr : next->second;
      }
      if (!w || w != first) continue;  // no cycle, or one this thread only leads into
      if (std::any_of(path.begin(), path.end(), [&](const LockWait* c) { return c->tid < tid; })) continue;
      evidence::Deadlock e;
      for (const LockWait* c : path) e.cycle.push_back(*c);
      if (d_.syndrome == Syndrome::kSnapshot || d_.syndrome == Syndrome::kExternalSignal) d_.syndrome = Syndrome::kDeadlock;
      d_.evidence.push_back(std::move(e));
      break;
    }
  }

  // The process was stopped from outside (a snapshot, a signal another
  // process sent), not by a fault of its own.
  bool Stopped() const {
    return d_.syndrome == Syndrome::kSnapshot || d_.syndrome == Syndrome::kExternalSignal ||
           d_.syndrome == Syndrome::kDeadlock;
  }

  // What a spinning thread polls: the word's address from the read's
  // operand and the thread's registers, its variable and what it held.
  void SpinWaitOf(const Backtrace& bt) {
    const Registers& r = bt.thread->registers;
    std::optional<SpinLoop> loop = SpinLoopAt(modules_, r.pc());
    if (!loop) return;
    SpinWait w;
    w.tid = bt.thread->tid;
    w.thread_name = bt.thread->name;
    w.where = OwnFunction(bt);
    w.instruction = loop->polled.text;
    w.width = loop->width;
    w.pauses = loop->pauses;
    w.word = loop->address;
    if (!w.word) w.word = OperandAddress(r, loop->polled);
    if (w.word) {
      w.word = Untagged(*w.word);
      uint64_t v = 0;
      if (w.width >= 1 && w.width <= 8 &&
          core_.memory().ReadUpTo(*w.word, std::as_writable_bytes(std::span(&v, 1)).first(w.width)) == w.width)
        w.value = v;
      PcSymbol s = modules_.Symbolize(*w.word);
      if (s.module && !s.symbol.empty() && (s.symbol_size == 0 ? s.symbol_offset == 0 : s.symbol_offset < s.symbol_size)) {
        w.word_name = s.symbol;
        w.word_offset = s.symbol_offset;
      }
    }
    d_.spin_waits.push_back(std::move(w));
  }

  // Blocked in glibc's mutex lock: one of the top frames is its wait.
  static bool InMutexLock(const Backtrace& bt) {
    for (size_t i = 0; i < bt.frames.size() && i < 6; ++i) {
      std::string_view f = bt.frames[i].function;
      if (OneOf(f, {"__lll_lock_wait", "__GI___lll_lock_wait", "___pthread_mutex_lock", "__pthread_mutex_lock",
                    "pthread_mutex_lock", "lll_mutex_lock_optimized"}))
        return true;
    }
    return false;
  }

  // The first frame of the thread's own code (past libc, libstdc++, ...).
  static std::string OwnFunction(const Backtrace& bt) {
    for (const auto& f : bt.frames) {
      if (!f.function.empty() && !(f.module && IsRuntimeLibrary(f.module->module->path))) return f.function;
    }
    return {};
  }

  // Where the fault happened, for the summary and the advice.
  void Site() {
    FaultSite& f = d_.site.emplace();
    f.where = frames_.empty() || frames_[0]->function.empty() ? Where(modules_, regs_.pc()) : frames_[0]->function;
    if (frames_.size() > 1) f.caller = frames_[1]->function;
    f.pc = regs_.pc();
    f.signal = sig_;
    f.delivered = *core_.signal();
    f.process_pid = core_.process() ? std::optional<int>(core_.process()->pid) : std::nullopt;
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

bool IsRuntimeLibrary(std::string_view path) {
  std::string_view base = path.substr(path.rfind('/') + 1);
  for (std::string_view lib : {"libc.so", "ld-linux", "libpthread.so", "libstdc++.so", "libgcc_s.so", "libunwind.so",
                               "libm.so", "libdl.so", "librt.so"})
    if (base.starts_with(lib)) return true;
  return false;
}

const LockWait* LockWaitOf(const Diagnosis& d, int tid) {
  for (const auto& w : d.lock_waits)
    if (w.tid == tid) return &w;
  return nullptr;
}

const SpinWait* SpinWaitOf(const Diagnosis& d, int tid) {
  for (const auto& w : d.spin_waits)
    if (w.tid == tid) return &w;
  return nullptr;
}

std::string SyscallName(uint64_t nr, Arch arch) {
  const SyscallEntry* e = FindSyscall(nr, arch);
  return e ? std::to_string(nr) + " (" + e->name + ")" : std::to_string(nr);
}

std::string ThreadStateName(const ThreadWait& wait) {
  switch (wait.kind) {
    case WaitKind::kRunning: return "running";
    case WaitKind::kSpin: return "spinning";
    case WaitKind::kInterrupted: return "interrupted system call";
    case WaitKind::kFutex: return "futex wait";
    case WaitKind::kPoll: return "poll";
    case WaitKind::kSleep: return "sleep";
    case WaitKind::kRead: return "read";
    case WaitKind::kAccept: return "accept";
    case WaitKind::kWaitChild: return "wait for child";
    case WaitKind::kPause: return "pause";
    case WaitKind::kOtherSyscall: return "system call " + SyscallName(wait.syscall.value_or(0), wait.arch);
  }
  return "running";
}

ThreadWait ThreadWaitOf(const Registers& regs, const ModuleMap& modules) {
  ThreadWait w;
  w.arch = regs.arch;
  if (regs.arch == Arch::kAarch64) {
    // `svc #0` just before pc, the number in x8. The kernel keeps no
    // orig_x0 in the core: an interrupted call shows as x0 = -EINTR.
    uint32_t insn = 0;
    uint64_t pc = regs.pc();
    bool after_svc = pc >= 4 && modules.ReadCode(pc - 4, std::as_writable_bytes(std::span(&insn, 1))) == 4 &&
                     insn == 0xd4000001;
    if (after_svc && regs[Reg::x0] == static_cast<uint64_t>(-EINTR)) {
      w.kind = WaitKind::kInterrupted;
      return w;
    }
    if (!after_svc) {
      if (SpinLoopAt(modules, pc)) w.kind = WaitKind::kSpin;
      return w;
    }
    w.syscall = regs[Reg::x8];
    const SyscallEntry* e = FindSyscall(*w.syscall, w.arch);
    w.kind = e ? e->wait : WaitKind::kOtherSyscall;
    return w;
  }
  // A `syscall` just before pc, with the system call's number kept in
  // orig_rax, is a thread blocked in the kernel. A system call a signal
  // interrupted, returning EINTR, has orig_rax -1 by the time a signal
  // pending behind it is delivered.
  std::byte b[2];
  uint64_t pc = regs.pc();
  bool after_syscall = pc >= 2 && modules.ReadCode(pc - 2, b) == 2 && b[0] == std::byte{0x0f} && b[1] == std::byte{0x05};
  if (after_syscall && regs[Reg::orig_rax] != ~uint64_t{0}) w.syscall = regs[Reg::orig_rax];
  if (!w.syscall) {
    bool interrupted = after_syscall && regs[Reg::rax] == static_cast<uint64_t>(-EINTR);
    w.kind = interrupted ? WaitKind::kInterrupted : SpinLoopAt(modules, pc) ? WaitKind::kSpin : WaitKind::kRunning;
    return w;
  }
  const SyscallEntry* e = FindSyscall(*w.syscall, w.arch);
  w.kind = e ? e->wait : WaitKind::kOtherSyscall;
  return w;
}

Diagnosis Diagnose(const Core& core, const ModuleMap& modules, const std::vector<Backtrace>& threads,
                   const std::optional<FaultContext>& fault_context, StackMemory& memory, DiagnosisDepth depth) {
  return Diagnoser(core, modules, threads, fault_context, memory, depth).Run();
}

}  // namespace coroner
