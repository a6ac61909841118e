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

namespace coroner {

struct SignatureFrame {
  std::string function;  // demangled, no parameters; empty when unknown
  std::string module;    // path; used when the function is unknown
  bool scanned = false;  // found by stack scan
  bool python = false;   // a Python function (trust python), named by its qualified name
};

struct SkipList {
  std::vector<std::string> exact;
  std::vector<std::string> prefixes;
  static const SkipList& Default();
  bool Skips(const std::string& function) const;
};

constexpr size_t kSignatureFrames = 3;

std::string MakeSignature(const std::string& syndrome, const std::vector<SignatureFrame>& frames,
                          const SkipList& skip = SkipList::Default(), size_t depth = kSignatureFrames);

}  // namespace coroner
