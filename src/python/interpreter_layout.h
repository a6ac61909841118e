// Where CPython keeps what a Python stack needs: the offsets of the fields
// of its runtime, interpreter, thread, frame, code and string objects. They
// change with every minor version and are not in a stripped interpreter, so
// 3.11 and 3.12 are known here (checked against the DWARF of builds with
// debug information), and 3.13 on describe themselves: _PyRuntime starts
// with _Py_DebugOffsets, which this reads from the core.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace coroner {

struct InterpreterLayout {
  int minor = 0;  // 3.<minor>
  // _PyRuntimeState
  uint64_t runtime_interpreters_head = 0;
  // PyInterpreterState
  uint64_t interp_next = 0, interp_threads_head = 0;
  // The GIL (struct _gil_runtime_state): in 3.11 inside _PyRuntime at
  // runtime_gil; from 3.12 each interpreter points to its own at interp_gil.
  std::optional<uint64_t> runtime_gil, interp_gil;
  uint64_t gil_last_holder = 0, gil_locked = 0;
  // PyThreadState; the current frame is tstate->cframe->current_frame up to
  // 3.12, tstate->current_frame from 3.13.
  uint64_t tstate_next = 0, tstate_native_thread_id = 0;
  std::optional<uint64_t> tstate_cframe;
  uint64_t current_frame = 0;  // in the _PyCFrame, or in the thread state
  // _PyInterpreterFrame
  uint64_t frame_code = 0, frame_previous = 0, frame_instr = 0, frame_owner = 0;
  std::optional<uint64_t> frame_is_entry;  // 3.11: the first frame an eval call ran
  std::optional<uint8_t> owned_by_c_stack;  // 3.12+: the shim frame an eval call starts with
  // PyCodeObject (a PyVarObject: ob_size counts the code units)
  uint64_t code_qualname = 0, code_filename = 0, code_firstlineno = 0, code_linetable = 0, code_adaptive = 0;
  // sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject)
  uint64_t ascii_size = 0, compact_size = 0;
};

// The layout of CPython 3.<minor> for 11 and 12; nullopt for others.
std::optional<InterpreterLayout> KnownLayout(int minor);

// The bytes _PyRuntime starts with, from 3.13 on.
constexpr size_t kDebugOffsetsSize = 584;

// The layout _Py_DebugOffsets describes, and the version it names
// (PY_VERSION_HEX); an error when the cookie is absent or the version is
// one whose _Py_DebugOffsets layout is not known.
struct DescribedLayout {
  InterpreterLayout layout;
  uint64_t version_hex = 0;
};
std::optional<DescribedLayout> LayoutFromDebugOffsets(std::span<const std::byte> bytes, std::string& error);

}  // namespace coroner
