#include "python/interpreter_layout.h"

#include <cstring>

namespace coroner {

std::optional<InterpreterLayout> KnownLayout(int minor) {
  InterpreterLayout l;
  l.minor = minor;
  l.runtime_interpreters_head = 40;
  l.interp_next = 0;
  l.gil_last_holder = 8;
  l.gil_locked = 16;
  l.tstate_next = 8;
  l.tstate_cframe = 56;
  l.frame_instr = 56;  // prev_instr: the instruction running or last run
  l.code_qualname = 128;
  l.code_filename = 112;
  l.code_linetable = 136;
  if (minor == 11) {
    l.interp_threads_head = 16;
    l.runtime_gil = 360;
    l.tstate_native_thread_id = 160;
    l.current_frame = 8;
    l.frame_code = 32;
    l.frame_previous = 48;
    l.frame_owner = 69;
    l.frame_is_entry = 68;
    l.code_firstlineno = 72;
    l.code_adaptive = 184;
    l.ascii_size = 48;  // 3.11 still has the wstr pointer
    l.compact_size = 72;
    return l;
  }
  if (minor == 12) {
    l.interp_threads_head = 72;
    l.interp_gil = 384;
    l.tstate_native_thread_id = 144;
    l.current_frame = 0;
    l.frame_code = 0;
    l.frame_previous = 8;
    l.frame_owner = 70;
    l.owned_by_c_stack = 3;
    l.code_firstlineno = 68;
    l.code_adaptive = 192;
    l.ascii_size = 40;
    l.compact_size = 56;
    return l;
  }
  return std::nullopt;
}

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
  d.version_hex = at(8);
  int major = static_cast<int>(d.version_hex >> 24), minor = static_cast<int>((d.version_hex >> 16) & 0xff);
  // The offsets below are those of 3.13's _Py_DebugOffsets; 3.14 added
  // fields in the middle of it.
  if (major != 3 || minor != 13) {
    error = "CPython " + std::to_string(major) + "." + std::to_string(minor) +
            ": the layout of its debug offsets is not known";
    return std::nullopt;
  }
  if (at(16) != 0) {
    error = "a free-threaded CPython build (its frames are not read)";
    return std::nullopt;
  }
  // Every offset is bounded by its struct's size (which is there too): a
  // damaged table must not send the reader far from the object.
  InterpreterLayout& l = d.layout;
  l.minor = minor;
  uint64_t runtime_size = at(24);
  l.runtime_interpreters_head = at(40);
  uint64_t interp_size = at(48);
  l.interp_next = at(64);
  l.interp_threads_head = at(72);
  l.interp_gil = at(112);
  uint64_t gil_state = at(120);
  uint64_t gil_locked = at(136), gil_holder = at(144);
  uint64_t tstate_size = at(152);
  l.tstate_next = at(168);
  l.current_frame = at(184);
  l.tstate_native_thread_id = at(200);
  uint64_t frame_size = at(224);
  l.frame_previous = at(232);
  l.frame_code = at(240);
  l.frame_instr = at(248);
  l.frame_owner = at(264);
  l.owned_by_c_stack = 3;
  uint64_t code_size = at(272);
  l.code_filename = at(280);
  l.code_qualname = at(296);
  l.code_linetable = at(304);
  l.code_firstlineno = at(312);
  l.code_adaptive = at(344);
  l.ascii_size = at(560);
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
