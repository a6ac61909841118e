#include "python/interpreter_layout.h"

#include <cstring>

namespace coroner {

// The offsets of CPython 3.11 and 3.12 on 64-bit Linux, each named by the
// struct and field of CPython's headers it is (Include/internal/ and
// Include/cpython/ of each release: pycore_runtime.h, pycore_interp.h,
// pycore_gil.h, cpython/pystate.h, pycore_frame.h, cpython/code.h,
// cpython/unicodeobject.h). From 3.13 the interpreter states them itself
// (LayoutFromDebugOffsets).
std::optional<InterpreterLayout> KnownLayout(int minor) {
  InterpreterLayout l;
  l.minor = minor;
  l.runtime_interpreters_head = 40;  // _PyRuntimeState.interpreters.head
  l.interp_next = 0;                 // PyInterpreterState.next
  l.gil_last_holder = 8;             // struct _gil_runtime_state: last_holder
  l.gil_locked = 16;                 // ... locked
  l.tstate_next = 8;                 // PyThreadState.next
  l.tstate_cframe = 56;              // PyThreadState.cframe
  l.frame_instr = 56;                // _PyInterpreterFrame.prev_instr: the instruction running or last run
  l.code_qualname = 128;             // PyCodeObject.co_qualname
  l.code_filename = 112;             // PyCodeObject.co_filename
  l.code_linetable = 136;            // PyCodeObject.co_linetable
  if (minor == 11) {
    l.interp_threads_head = 16;       // PyInterpreterState.threads.head
    l.runtime_gil = 360;              // _PyRuntimeState.ceval.gil: one GIL for the runtime
    l.tstate_native_thread_id = 160;  // PyThreadState.native_thread_id
    l.current_frame = 8;              // _PyCFrame.current_frame (after use_tracing)
    l.frame_code = 32;                // _PyInterpreterFrame.f_code
    l.frame_previous = 48;            // _PyInterpreterFrame.previous
    l.frame_owner = 69;               // _PyInterpreterFrame.owner
    l.frame_is_entry = 68;            // _PyInterpreterFrame.is_entry
    l.code_firstlineno = 72;          // PyCodeObject.co_firstlineno
    l.code_adaptive = 184;            // PyCodeObject.co_code_adaptive
    l.ascii_size = 48;                // sizeof(PyASCIIObject): 3.11 still has the wstr pointer
    l.compact_size = 72;              // sizeof(PyCompactUnicodeObject)
    return l;
  }
  if (minor == 12) {
    l.interp_threads_head = 72;       // PyInterpreterState.threads.head
    l.interp_gil = 384;               // PyInterpreterState.ceval.gil: a GIL per interpreter, pointed to
    l.tstate_native_thread_id = 144;  // PyThreadState.native_thread_id
    l.current_frame = 0;              // _PyCFrame.current_frame
    l.frame_code = 0;                 // _PyInterpreterFrame.f_code
    l.frame_previous = 8;             // _PyInterpreterFrame.previous
    l.frame_owner = 70;               // _PyInterpreterFrame.owner
    l.owned_by_c_stack = 3;           // enum _frameowner: FRAME_OWNED_BY_CSTACK
    l.code_firstlineno = 68;          // PyCodeObject.co_firstlineno
    l.code_adaptive = 192;            // PyCodeObject.co_code_adaptive
    l.ascii_size = 40;                // sizeof(PyASCIIObject)
    l.compact_size = 56;              // sizeof(PyCompactUnicodeObject)
    return l;
  }
  return std::nullopt;
}

namespace {

// Where each field sits in 3.13's struct _Py_DebugOffsets
// (Include/internal/pycore_runtime.h): a header (cookie, version,
// free_threaded), then a struct of offsets per CPython struct, each
// beginning with that struct's size.
namespace debug_offsets {
constexpr size_t kVersion = 8, kFreeThreaded = 16;
constexpr size_t kRuntimeSize = 24, kRuntimeInterpretersHead = 40;           // runtime_state
constexpr size_t kInterpSize = 48, kInterpNext = 64, kInterpThreadsHead = 72;  // interpreter_state
constexpr size_t kInterpCevalGil = 112, kInterpGilState = 120, kInterpGilLocked = 136, kInterpGilHolder = 144;
constexpr size_t kTstateSize = 152, kTstateNext = 168, kTstateCurrentFrame = 184,  // thread_state
    kTstateNativeThreadId = 200;
constexpr size_t kFrameSize = 224, kFramePrevious = 232, kFrameExecutable = 240,  // interpreter_frame
    kFrameInstrPtr = 248, kFrameOwner = 264;
constexpr size_t kCodeSize = 272, kCodeFilename = 280, kCodeQualname = 296, kCodeLinetable = 304,  // code_object
    kCodeFirstlineno = 312, kCodeAdaptive = 344;
constexpr size_t kUnicodeAsciiSize = 560;  // unicode_object.asciiobject_size
}  // namespace debug_offsets

}  // namespace

std::optional<DescribedLayout> LayoutFromDebugOffsets(std::span<const std::byte> bytes, std::string& error) {
  if (bytes.size() < kDebugOffsetsSize || std::memcmp(bytes.data(), "xdebugpy", 8) != 0) {
    error = "_PyRuntime does not start with CPython's debug offsets";
    return std::nullopt;
  }
  auto at = [&](size_t off) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + off, 8);
    return v;
  };
  DescribedLayout d;
  d.version_hex = at(debug_offsets::kVersion);
  int major = static_cast<int>(d.version_hex >> 24), minor = static_cast<int>((d.version_hex >> 16) & 0xff);
  // The offsets below are those of 3.13's _Py_DebugOffsets; 3.14 added
  // fields in the middle of it.
  if (major != 3 || minor != 13) {
    error = "CPython " + std::to_string(major) + "." + std::to_string(minor) +
            ": the layout of its debug offsets is not known";
    return std::nullopt;
  }
  if (at(debug_offsets::kFreeThreaded) != 0) {
    error = "a free-threaded CPython build (its frames are not read)";
    return std::nullopt;
  }
  // Every offset is bounded by its struct's size (which is there too): a
  // damaged table must not send the reader far from the object.
  InterpreterLayout& l = d.layout;
  l.minor = minor;
  uint64_t runtime_size = at(debug_offsets::kRuntimeSize);
  l.runtime_interpreters_head = at(debug_offsets::kRuntimeInterpretersHead);
  uint64_t interp_size = at(debug_offsets::kInterpSize);
  l.interp_next = at(debug_offsets::kInterpNext);
  l.interp_threads_head = at(debug_offsets::kInterpThreadsHead);
  l.interp_gil = at(debug_offsets::kInterpCevalGil);
  uint64_t gil_state = at(debug_offsets::kInterpGilState);
  uint64_t gil_locked = at(debug_offsets::kInterpGilLocked), gil_holder = at(debug_offsets::kInterpGilHolder);
  uint64_t tstate_size = at(debug_offsets::kTstateSize);
  l.tstate_next = at(debug_offsets::kTstateNext);
  l.current_frame = at(debug_offsets::kTstateCurrentFrame);
  l.tstate_native_thread_id = at(debug_offsets::kTstateNativeThreadId);
  uint64_t frame_size = at(debug_offsets::kFrameSize);
  l.frame_previous = at(debug_offsets::kFramePrevious);
  l.frame_code = at(debug_offsets::kFrameExecutable);
  l.frame_instr = at(debug_offsets::kFrameInstrPtr);
  l.frame_owner = at(debug_offsets::kFrameOwner);
  l.owned_by_c_stack = 3;  // enum _frameowner: FRAME_OWNED_BY_CSTACK
  uint64_t code_size = at(debug_offsets::kCodeSize);
  l.code_filename = at(debug_offsets::kCodeFilename);
  l.code_qualname = at(debug_offsets::kCodeQualname);
  l.code_linetable = at(debug_offsets::kCodeLinetable);
  l.code_firstlineno = at(debug_offsets::kCodeFirstlineno);
  l.code_adaptive = at(debug_offsets::kCodeAdaptive);
  l.ascii_size = at(debug_offsets::kUnicodeAsciiSize);
  l.compact_size = l.ascii_size + 16;  // then utf8_length and utf8
  auto within = [](uint64_t off, uint64_t width, uint64_t size) { return size <= (16u << 20) && off + width <= size; };
  if (!within(l.runtime_interpreters_head, 8, runtime_size) || !within(l.interp_next, 8, interp_size) || !within(l.interp_threads_head, 8, interp_size) ||
      !within(*l.interp_gil, 8, interp_size) || gil_locked < gil_state || gil_holder < gil_state ||
      !within(gil_locked, 4, interp_size) || !within(gil_holder, 8, interp_size) ||
      !within(l.tstate_next, 8, tstate_size) || !within(l.current_frame, 8, tstate_size) ||
      !within(l.tstate_native_thread_id, 8, tstate_size) || !within(l.frame_previous, 8, frame_size) ||
      !within(l.frame_code, 8, frame_size) || !within(l.frame_instr, 8, frame_size) ||
      !within(l.frame_owner, 1, frame_size) || !within(l.code_filename, 8, code_size) ||
      !within(l.code_qualname, 8, code_size) || !within(l.code_linetable, 8, code_size) ||
      !within(l.code_firstlineno, 4, code_size) || l.code_adaptive > code_size || l.ascii_size > 256) {
    error = "CPython's debug offsets are out of their structs' bounds";
    return std::nullopt;
  }
  l.gil_locked = gil_locked - gil_state;
  l.gil_last_holder = gil_holder - gil_state;
  return d;
}

}  // namespace coroner
