#include "python/python_stacks.h"

#include <array>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "core/byte_view.h"
#include "python/interpreter_layout.h"
#include "python/location_table.h"

namespace coroner {
namespace {

// The process's memory as the Python reader sees it: the core's bytes, in
// 16-byte blocks each read once (interpreter objects are small and spread
// over the heap: whole pages would read several times the bytes the native
// analysis does), else the module files for data the kernel did not dump
// (read-only data, untouched .data pages).
class ProcessBytes {
 public:
  ProcessBytes(const ModuleMap& modules, const Memory& memory, Arch arch)
      : modules_(modules), memory_(memory), user_end_(UserSpaceEnd(arch)) {}

  bool Read(uint64_t addr, std::span<std::byte> out) {
    if (addr > UINT64_MAX - out.size()) return false;
    if (ReadCore(addr, out)) return true;
    // Data the kernel did not dump (read-only data, untouched .data pages)
    // is the module file's; dumped bytes left behind a compressed stream's
    // decoder are not (the process may have changed them).
    if (memory_.State(addr) == AddressState::kPresent) return false;
    return modules_.Find(addr) && modules_.ReadCode(addr, out) == out.size();
  }
  template <typename T>
  std::optional<T> Get(uint64_t addr) {
    T v;
    if (!Read(addr, std::as_writable_bytes(std::span<T, 1>(&v, 1)))) return std::nullopt;
    return v;
  }
  // A pointer field: present, and pointing at a plausible, aligned object.
  std::optional<uint64_t> Pointer(uint64_t addr) {
    auto v = Get<uint64_t>(addr);
    if (!v || *v < kNullPage || (*v & 7) != 0 || *v >= user_end_) return std::nullopt;
    return v;
  }
  // Reads not made: bytes behind what a compressed stream's decoder holds.
  size_t left_behind() const { return left_behind_; }

 private:
  static constexpr uint64_t kNullPage = 4096;
  static constexpr uint64_t kBlock = 16;
  static constexpr size_t kMaxBlocks = 262144;  // 4 MiB
  struct Block {
    std::array<std::byte, kBlock> bytes;
    size_t present;
  };

  bool ReadCore(uint64_t addr, std::span<std::byte> out) {
    size_t done = 0;
    while (done < out.size()) {
      uint64_t at = addr + done;
      const Block& b = GetBlock(at / kBlock);
      size_t from = static_cast<size_t>(at % kBlock);
      if (from >= b.present) return false;
      size_t take = std::min(out.size() - done, b.present - from);
      std::memcpy(out.data() + done, b.bytes.data() + from, take);
      done += take;
    }
    return true;
  }
  const Block& GetBlock(uint64_t block) {
    if (auto it = blocks_.find(block); it != blocks_.end()) return it->second;
    if (blocks_.size() >= kMaxBlocks) blocks_.clear();
    Block b;
    b.present = 0;
    if (memory_.State(block * kBlock) == AddressState::kPresent) {
      // In a stream-compressed core, bytes behind what the decoder holds
      // would cost a decode of the stream from its start, for each such
      // read: they are left out, and the reader says so.
      if (memory_.Rereads(block * kBlock, kBlock)) {
        ++left_behind_;
      } else {
        b.present = memory_.ReadUpTo(block * kBlock, b.bytes);
      }
    }
    return blocks_.emplace(block, b).first->second;
  }

  const ModuleMap& modules_;
  const Memory& memory_;
  uint64_t user_end_;  // a pointer field points below it
  std::unordered_map<uint64_t, Block> blocks_;
  size_t left_behind_ = 0;
};

}  // namespace

bool IsPythonInterpreterPath(std::string_view path) {
  std::string_view base = path.substr(path.rfind('/') + 1);
  return base.starts_with("python3") || base.starts_with("libpython3");
}

namespace {

// The interpreter's addresses in this process.
struct Interpreter {
  const MappedModule* module = nullptr;
  uint64_t runtime = 0;  // &_PyRuntime
  uint64_t code_type = 0, unicode_type = 0, bytes_type = 0;  // &PyCode_Type, ...
};

std::optional<uint64_t> RuntimeSymbol(const MappedModule& m, const char* name) {
  auto link = m.image->SymbolAddress(name);
  if (!link) return std::nullopt;
  return *link + m.bias;
}

// CPython is in the executable (python3.11) or in libpython3.11.so; other
// modules are not asked, as a symbol lookup loads a module's symbol table.
bool MayHoldInterpreter(const MappedModule& m) { return m.image && IsPythonInterpreterPath(m.module->path); }

class StateReader {
 public:
  StateReader(ProcessBytes& mem, const Interpreter& in, const InterpreterLayout& l, std::optional<uint64_t> only_tid)
      : mem_(mem), in_(in), l_(l), only_tid_(only_tid) {}

  // Bytes of location tables decoded, and whether their budget ran out.
  uint64_t line_table_bytes() const { return line_table_bytes_; }
  bool line_budget_spent() const { return line_budget_spent_; }

  void Read(PythonState& state) {
    auto interp = mem_.Pointer(in_.runtime + l_.runtime_interpreters_head);
    if (!interp) {
      state.error = "the interpreter list is not in the core (_PyRuntime.interpreters.head)";
      return;
    }
    std::unordered_set<uint64_t> seen_interps;
    for (size_t n = 0; interp && n < kMaxPythonInterpreters && seen_interps.insert(*interp).second; ++n) {
      ReadInterpreter(*interp, state);
      interp = mem_.Pointer(*interp + l_.interp_next);
    }
  }

 private:
  void ReadInterpreter(uint64_t interp, PythonState& state) {
    std::optional<uint64_t> gil;
    if (l_.runtime_gil) gil = in_.runtime + *l_.runtime_gil;
    if (l_.interp_gil) gil = mem_.Pointer(interp + *l_.interp_gil);
    std::optional<uint64_t> holder;
    if (gil) {
      auto locked = mem_.Get<int32_t>(*gil + l_.gil_locked);
      if (locked && *locked) holder = mem_.Get<uint64_t>(*gil + l_.gil_last_holder);
    }
    auto tstate = mem_.Pointer(interp + l_.interp_threads_head);
    std::unordered_set<uint64_t> seen;
    while (tstate && seen.insert(*tstate).second) {
      if (state.threads.size() >= kMaxPythonThreads) {
        state.error = "more than " + std::to_string(kMaxPythonThreads) + " Python threads: the rest are not read";
        return;
      }
      PythonThread t;
      t.tid = mem_.Get<uint64_t>(*tstate + l_.tstate_native_thread_id).value_or(0);
      t.thread_state = *tstate;
      t.holds_gil = holder && *holder == *tstate;
      if (!only_tid_ || *only_tid_ == t.tid) ReadFrames(*tstate, t);
      state.threads.push_back(std::move(t));
      tstate = mem_.Pointer(*tstate + l_.tstate_next);
    }
  }

  void ReadFrames(uint64_t tstate, PythonThread& t) {
    std::optional<uint64_t> frame;
    if (l_.tstate_cframe) {
      auto cframe = mem_.Pointer(tstate + *l_.tstate_cframe);
      if (cframe) frame = mem_.Get<uint64_t>(*cframe + l_.current_frame);
    } else {
      frame = mem_.Get<uint64_t>(tstate + l_.current_frame);
    }
    if (!frame) {
      t.stop_reason = "its current frame is not in the core";
      return;
    }
    std::unordered_set<uint64_t> seen;
    while (*frame != 0) {
      if (!seen.insert(*frame).second) {
        t.stop_reason = "its frame chain loops at " + Hex(*frame);
        return;
      }
      if (t.frames.size() >= kMaxPythonFramesPerThread || frames_read_ >= kMaxPythonFrames) {
        t.stop_reason = "the frame limit was reached";
        return;
      }
      if ((*frame & 7) != 0) {
        t.stop_reason = "a frame pointer is misaligned: " + Hex(*frame);
        return;
      }
      auto owner = mem_.Get<uint8_t>(*frame + l_.frame_owner);
      auto previous = mem_.Get<uint64_t>(*frame + l_.frame_previous);
      if (!owner || !previous) {
        t.stop_reason = "the frame at " + Hex(*frame) + " is not in the core";
        return;
      }
      if (l_.owned_by_c_stack && *owner == *l_.owned_by_c_stack) {
        // The shim an eval call starts with: the frame before it was its first.
        if (!t.frames.empty()) t.frames.back().entry = true;
      } else if (auto f = ReadFrame(*frame, t.stop_reason)) {
        t.frames.push_back(std::move(*f));
        ++frames_read_;
      } else if (!t.stop_reason.empty()) {
        return;
      }
      frame = previous;
    }
    if (!t.frames.empty()) t.frames.back().entry = true;
  }

  // One Python frame; nullopt with `why` set when it is damaged, nullopt
  // alone for a frame that runs no code object (skipped).
  std::optional<PythonFrame> ReadFrame(uint64_t frame, std::string& why) {
    auto code = mem_.Pointer(frame + l_.frame_code);
    if (!code) {
      why = "the frame at " + Hex(frame) + " has no code object in the core";
      return std::nullopt;
    }
    auto type = mem_.Get<uint64_t>(*code + 8);
    if (!type) {
      why = "the code object at " + Hex(*code) + " is not in the core";
      return std::nullopt;
    }
    if (*type != in_.code_type) return std::nullopt;  // 3.13: a frame of no code object
    PythonFrame f;
    f.address = frame;
    f.code = *code;
    f.function = String(mem_.Get<uint64_t>(*code + l_.code_qualname).value_or(0)).value_or("??");
    f.file = String(mem_.Get<uint64_t>(*code + l_.code_filename).value_or(0)).value_or("??");
    if (l_.frame_is_entry) f.entry = mem_.Get<uint8_t>(frame + *l_.frame_is_entry).value_or(0) != 0;
    f.line = Line(frame, *code).value_or(0);
    return f;
  }

  std::optional<int> Line(uint64_t frame, uint64_t code) {
    auto first = mem_.Get<int32_t>(code + l_.code_firstlineno);
    auto units = mem_.Get<int64_t>(code + 16);  // ob_size: the code units
    auto instr = mem_.Get<uint64_t>(frame + l_.frame_instr);
    auto table = mem_.Pointer(code + l_.code_linetable);
    if (!first || !units || !instr || !table || *units <= 0 || *units > (1 << 24)) return std::nullopt;
    uint64_t start = code + l_.code_adaptive;
    // 3.11 and 3.12 point one unit before the code before the first instruction runs.
    if (*instr + 2 == start) return *first;
    if (*instr < start || (*instr - start) / 2 >= static_cast<uint64_t>(*units)) return std::nullopt;
    // A deep recursion runs one instruction of one code object in thousands
    // of frames: its line is decoded once.
    uint64_t unit = (*instr - start) / 2;
    auto key = std::make_pair(code, unit);
    if (auto hit = lines_.find(key); hit != lines_.end()) return hit->second;
    auto line = DecodeLine(*table, *first, unit);
    if (lines_.size() < kMaxPythonFrames) lines_.emplace(key, line);
    return line;
  }

  std::optional<int> DecodeLine(uint64_t table, int first, uint64_t unit) {
    if (mem_.Get<uint64_t>(table + 8) != in_.bytes_type) return std::nullopt;
    auto size = mem_.Get<int64_t>(table + 16);
    if (!size || *size <= 0 || *size > static_cast<int64_t>(kMaxLineTable)) return std::nullopt;
    // Read as far as the instruction's entry: a module's table can be long,
    // and an instruction early in it needs only its start. All the tables
    // of one core together are decoded for at most kMaxLineTableWork bytes.
    std::vector<uint8_t> bytes;
    for (size_t want = 64;; want *= 4) {
      want = std::min(want, static_cast<size_t>(*size));
      if (line_table_bytes_ + want > kMaxLineTableWork) {
        line_budget_spent_ = true;
        return std::nullopt;
      }
      line_table_bytes_ += want;
      bytes.resize(want);
      if (!mem_.Read(table + 32, std::as_writable_bytes(std::span(bytes)))) return std::nullopt;
      bool ran_out = false;
      auto line = LineOfInstruction(bytes, first, unit, &ran_out);
      if (!ran_out || want == static_cast<size_t>(*size)) return line;
    }
  }

  // A str object as UTF-8: compact strings only (every name and file of a
  // code object is one), at most kMaxPythonString bytes.
  std::optional<std::string> String(uint64_t obj) {
    if (obj == 0 || (obj & 7) != 0 || mem_.Get<uint64_t>(obj + 8) != in_.unicode_type) return std::nullopt;
    auto length = mem_.Get<int64_t>(obj + 16);
    auto state = mem_.Get<uint32_t>(obj + 32);
    if (!length || !state || *length < 0) return std::nullopt;
    unsigned kind = (*state >> 2) & 7;
    bool compact = (*state >> 5) & 1, ascii = (*state >> 6) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4)) return std::nullopt;
    uint64_t data = obj + (ascii ? l_.ascii_size : l_.compact_size);
    size_t n = static_cast<size_t>(std::min<int64_t>(*length, kMaxPythonString));
    std::vector<std::byte> raw(n * kind);
    if (!mem_.Read(data, raw)) return std::nullopt;
    std::string out;
    for (size_t i = 0; i < n && out.size() < kMaxPythonString; ++i) {
      uint32_t c = 0;
      std::memcpy(&c, raw.data() + i * kind, kind);
      AppendUtf8(out, c);
    }
    if (static_cast<size_t>(*length) > n) out += "...";
    return out;
  }

  static void AppendUtf8(std::string& out, uint32_t c) {
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) c = 0xfffd;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }

  ProcessBytes& mem_;
  const Interpreter& in_;
  const InterpreterLayout& l_;
  std::optional<uint64_t> only_tid_;
  size_t frames_read_ = 0;
  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& p) const { return std::hash<uint64_t>()(p.first * 31 + p.second); }
  };
  std::unordered_map<std::pair<uint64_t, uint64_t>, std::optional<int>, PairHash> lines_;  // (code, unit) -> line
  uint64_t line_table_bytes_ = 0;
  bool line_budget_spent_ = false;
};

}  // namespace

std::optional<PythonState> ReadPythonState(const ModuleMap& modules, const Memory& memory,
                                           std::optional<uint64_t> only_tid) {
  Interpreter in;
  for (const auto& m : modules.modules()) {
    if (!MayHoldInterpreter(m)) continue;
    if (auto runtime = RuntimeSymbol(m, "_PyRuntime")) {
      in.module = &m;
      in.runtime = *runtime;
      break;
    }
  }
  if (!in.module) return std::nullopt;
  PythonState state;
  state.module = in.module->module->path;
  state.runtime = in.runtime;
  ProcessBytes mem(modules, memory, in.module->module->arch);
  auto code_type = RuntimeSymbol(*in.module, "PyCode_Type");
  auto unicode_type = RuntimeSymbol(*in.module, "PyUnicode_Type");
  auto bytes_type = RuntimeSymbol(*in.module, "PyBytes_Type");
  auto version_at = RuntimeSymbol(*in.module, "Py_Version");
  auto version = version_at ? mem.Get<uint64_t>(*version_at) : std::nullopt;
  if (!code_type || !unicode_type || !bytes_type || !version) {
    state.error = "the interpreter does not export Py_Version and its type objects (CPython before 3.11?)";
    return state;
  }
  in.code_type = *code_type;
  in.unicode_type = *unicode_type;
  in.bytes_type = *bytes_type;
  auto name = [](uint64_t hex) {
    return std::to_string(hex >> 24) + "." + std::to_string((hex >> 16) & 0xff) + "." + std::to_string((hex >> 8) & 0xff);
  };
  state.version = name(*version);
  int minor = static_cast<int>((*version >> 16) & 0xff);
  std::optional<InterpreterLayout> layout;
  if ((*version >> 24) == 3 && minor >= 13) {
    std::array<std::byte, kDebugOffsetsSize> offsets;
    if (!mem.Read(in.runtime, offsets)) {
      state.error = "CPython's debug offsets are not in the core";
      return state;
    }
    auto d = LayoutFromDebugOffsets(offsets, state.error);
    if (!d) return state;
    layout = d->layout;
  } else if ((*version >> 24) == 3) {
    layout = KnownLayout(minor);
  }
  if (!layout) {
    state.error = "CPython " + state.version + ": its frame layout is not known (3.11 and later are read)";
    return state;
  }
  StateReader reader(mem, in, *layout, only_tid);
  reader.Read(state);
  state.line_table_bytes = reader.line_table_bytes();
  if (reader.line_budget_spent() && state.error.empty())
    state.error = "the location tables' decoding budget (" + std::to_string(kMaxLineTableWork >> 20) +
                  " MiB for the core) was spent: later frames have no line";
  if (mem.left_behind() > 0) {
    state.error = std::to_string(mem.left_behind()) +
                  " reads of the interpreter's memory lie behind what the compressed stream's decoder holds and "
                  "were not decoded again (each would decode the stream from its start): decompress the core for "
                  "every Python frame";
  }
  return state;
}

bool IsEvalFrame(const Frame& f) {
  static const std::string kEval = "_PyEval_EvalFrameDefault";
  return !f.inlined && f.trust != FrameTrust::kPython && f.function.rfind(kEval, 0) == 0 &&
         (f.function.size() == kEval.size() || f.function[kEval.size()] == '.');
}

void InterleavePythonFrames(Backtrace& bt, const PythonThread& thread) {
  if (thread.frames.empty()) return;
  std::vector<Frame> out;
  out.reserve(bt.frames.size() + thread.frames.size());
  size_t next = 0;  // the next Python frame to place
  auto python_frame = [](const PythonFrame& p, const Frame& at) {
    Frame f;
    f.pc = at.pc;
    f.pc_kind = at.pc_kind;
    f.sp = at.sp;
    f.cfa = at.cfa;
    f.physical = at.physical;
    f.trust = FrameTrust::kPython;
    f.function = p.function;
    f.file = p.file;
    f.line = p.line;
    return f;
  };
  for (const Frame& native : bt.frames) {
    if (IsEvalFrame(native)) {
      while (next < thread.frames.size()) {
        const PythonFrame& p = thread.frames[next++];
        out.push_back(python_frame(p, native));
        if (p.entry) break;
      }
    }
    out.push_back(native);
  }
  if (next < thread.frames.size() && !out.empty()) {
    Frame last = out.back();
    while (next < thread.frames.size()) out.push_back(python_frame(thread.frames[next++], last));
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].index = i;
  bt.frames = std::move(out);
}

}  // namespace coroner
