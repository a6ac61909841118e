// Crash signatures: the syndrome and the top frames of the crashing thread
// that are the program's own, as crash-reporting services bucket crashes.
// "null-deref | walk | main". Frames of the signal, abort, assert,
// terminate and unwinder machinery are skipped (a skip-list of function
// names and prefixes); frames found only by stack scanning are used only
// when nothing better is there. In a thread with Python frames, the native
// frames of the interpreter and its runtime (CPython, its lib-dynload
// modules, libffi, the C library) are skipped too, so that a crash under
// Python code is named by that code: "null-deref | compare | Trainer.step".
#pragma once

#include <string>
#include <vector>

#include "unwind/unwinder.h"

namespace coroner {

struct SignatureFrame {
  std::string function;  // demangled, no parameters; empty when unknown
  std::string module;    // path; used when the function is unknown
  bool scanned = false;  // found by stack scan
  bool python = false;   // a Python function (trust python), named by its qualified name
};

// A frame of the crashing thread with what a dataset row keeps of it: the
// processor and epi (re-signing with a rules file's skip-list) make a
// signature from the same facts.
struct StoredFrame {
  std::string function;  // empty when unknown
  std::string module;    // path; empty when none
  FrameTrust trust = FrameTrust::kCfi;
};

// The frames a signature is made from, in the unwinder's order: when a
// handler re-raised the fault (`reraised`: the processor recovered the real
// fault's context from a signal frame), from the first frame found through
// a signal frame on, where the fault happened; never a signal trampoline
// or a tail call's frame (it names a function that jumped on, not one on
// the stack).
std::vector<SignatureFrame> SignatureFrames(const std::vector<StoredFrame>& frames, bool reraised);

struct SkipList {
  std::vector<std::string> exact;
  std::vector<std::string> prefixes;
  static const SkipList& Default();
  bool Skips(const std::string& function) const;
};

// The function users know behind one of glibc's IFUNC variants of a string
// or memory function: __strlen_evex, __strlen_avx2 and __strlen_sse2 are
// strlen, __memmove_avx_unaligned_erms is memmove, __memcpy_chk_evex is
// __memcpy_chk. Which variant runs depends on the CPU, so a signature names
// the function (the frame keeps the variant): a fleet of mixed CPUs does
// not split one bug by CPU model. Any other name is returned as it is.
std::string IfuncVariantBase(const std::string& function);

constexpr size_t kSignatureFrames = 3;

std::string MakeSignature(const std::string& syndrome, const std::vector<SignatureFrame>& frames,
                          const SkipList& skip = SkipList::Default(), size_t depth = kSignatureFrames);

}  // namespace coroner
