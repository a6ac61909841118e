// ComponentMap: which component of a stack a module belongs to ("HIP
// runtime (CLR)", "glibc", "application"), for the report's call chain table.
//
// Rules match a substring of the module's file name; the first match wins.
// User rules (a file of `pattern<TAB>component[<TAB>repository[<TAB>path]]`
// lines, `#` comments) come before the built-in ones, which cover the GPU
// training stack (ROCm, CUDA, XLA/PJRT, NCCL/RCCL, Python) and the C/C++
// runtime. A rule may name the component's source repository and its path
// inside it (ROCm's CLR lives in rocm-systems under projects/clr), which
// `coroner sources` uses to say what to check out.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace coroner {

struct Component {
  std::string name;
  std::string repository;  // e.g. "ROCm/rocm-systems"; empty when not known
  std::string path;        // inside the repository, e.g. "projects/clr"; empty for its root
};

class ComponentMap {
 public:
  ComponentMap();  // the built-in rules
  // Adds the rules of `path` in front of the built-in ones.
  Status AddFile(const std::string& path);
  // The component for a module path; `executable` when it is the process's
  // main program.
  std::string For(const std::string& module_path, bool executable) const;
  // The whole rule: name, repository and path.
  Component Find(const std::string& module_path, bool executable) const;
  // The component of a Python frame, by its file: the interpreter's
  // standard library, or the application's Python code (which includes
  // the packages it installed).
  static std::string ForPython(const std::string& file);

 private:
  std::vector<std::pair<std::string, Component>> user_, builtin_;
};

}  // namespace coroner
