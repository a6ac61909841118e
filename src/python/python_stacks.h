// Python stacks from a core of a CPython 3.11+ process, without CPython's
// debug information: the interpreter is found by its `_PyRuntime` symbol
// (exported by the executable or libpython), its layout by version (see
// interpreter_layout.h), and every thread state's frame chain is read from
// the core. Each Python frame is then placed at the native
// `_PyEval_EvalFrameDefault` frame that runs it.
//
// Everything here is read from an untrusted core: each pointer is checked
// (non-null, aligned, present), each chain and string is bounded, and an
// object whose type is not the one expected ends its chain with a reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "symbolize/module_map.h"
#include "unwind/backtrace.h"
#include "core/memory.h"

namespace coroner {

struct PythonFrame {
  std::string function;  // the code object's qualified name ("Model.train_step")
  std::string file;      // co_filename as the interpreter has it
  int line = 0;          // 0 when the location table gives none
  // The first frame its _PyEval_EvalFrameDefault call ran: the frames from
  // the innermost to this one run in one native eval frame.
  bool entry = false;
  uint64_t address = 0;  // the _PyInterpreterFrame
  uint64_t code = 0;     // its code object
};

struct PythonThread {
  uint64_t tid = 0;                 // the thread's native id (its LWP, as in the core)
  uint64_t thread_state = 0;        // its PyThreadState
  std::vector<PythonFrame> frames;  // innermost first
  bool holds_gil = false;
  std::string stop_reason;          // why the chain was cut; empty when read to its end
};

struct PythonState {
  std::string version;  // "3.11.2"
  std::string module;   // the object defining _PyRuntime
  uint64_t runtime = 0;  // &_PyRuntime
  std::vector<PythonThread> threads;
  // Why the threads could not be read (or not all of them); empty when all were.
  std::string error;
  // Bytes of location tables decoded for the frames' lines (each (code
  // object, instruction) once; at most kMaxLineTableWork).
  uint64_t line_table_bytes = 0;
};

// Limits on what one core may make the reader do.
constexpr size_t kMaxPythonInterpreters = 64;
constexpr size_t kMaxPythonThreads = 4096;
constexpr size_t kMaxPythonFramesPerThread = 4096;
constexpr size_t kMaxPythonFrames = 65536;  // all threads together
constexpr size_t kMaxPythonString = 1024;   // bytes of a name or a file
constexpr size_t kMaxLineTable = 1 << 20;
constexpr uint64_t kMaxLineTableWork = 64ull << 20;  // all the tables decoded for one core

// nullopt when no module of the process defines _PyRuntime (not a CPython
// process); otherwise what could be read, with the reason for what could not.
// With `only_tid`, the frames of that thread alone are read (the others are
// listed without frames).
std::optional<PythonState> ReadPythonState(const ModuleMap& modules, const Memory& memory,
                                           std::optional<uint64_t> only_tid = std::nullopt);

// A mapped file that may hold CPython: python3.X or libpython3.X.so.
bool IsPythonInterpreterPath(std::string_view path);

// The native frame that runs Python frames.
bool IsEvalFrame(const Frame& f);

// Inserts `thread`'s frames into `bt`: each group (innermost to its entry
// frame) just inside the next _PyEval_EvalFrameDefault frame, sharing its
// physical frame and pc, trust kPython. Groups left over when the native
// stack has no more eval frames (an unwind cut short) go at its end. Frames
// are renumbered.
void InterleavePythonFrames(Backtrace& bt, const PythonThread& thread);

}  // namespace coroner
