#include "provenance/components.h"

#include <fstream>

namespace coroner {

ComponentMap::ComponentMap() {
  builtin_ = {
      {"libamdhip64", {"HIP runtime (ROCm CLR)", "ROCm/rocm-systems", "projects/clr"}},
      {"libhsa-runtime64", {"ROCr (HSA runtime)", "ROCm/rocm-systems", "projects/rocr-runtime"}},
      {"librocprofiler-sdk", {"rocprofiler-sdk", "ROCm/rocm-systems", "projects/rocprofiler-sdk"}},
      {"libroctracer", {"roctracer", "ROCm/rocm-systems", "projects/roctracer"}},
      {"librccl", {"RCCL", "ROCm/rccl", ""}},
      {"libhipblaslt", {"hipBLASLt", "ROCm/rocm-libraries", "projects/hipblaslt"}},
      {"librocblas", {"rocBLAS", "ROCm/rocm-libraries", "projects/rocblas"}},
      {"libMIOpen", {"MIOpen", "ROCm/rocm-libraries", "projects/miopen"}},
      {"libcudart", {"CUDA runtime", "", ""}},
      {"libcuda.so", {"CUDA driver", "", ""}},
      {"libcublas", {"cuBLAS", "", ""}},
      {"libcudnn", {"cuDNN", "", ""}},
      {"libnccl", {"NCCL", "NVIDIA/nccl", ""}},
      {"xla_rocm_plugin", {"XLA ROCm plugin (PJRT)", "ROCm/xla", ""}},
      {"xla_cuda_plugin", {"XLA CUDA plugin (PJRT)", "openxla/xla", ""}},
      {"pjrt", {"XLA PJRT plugin", "openxla/xla", ""}},
      {"xla_extension", {"XLA (jaxlib)", "openxla/xla", ""}},
      {"libtensorflow", {"TensorFlow", "tensorflow/tensorflow", ""}},
      {"libtorch", {"PyTorch", "pytorch/pytorch", ""}},
      {"libpython", {"CPython", "python/cpython", ""}},
      {"python3", {"CPython", "python/cpython", ""}},  // the interpreter executable, CPython linked in
      {"libunwind", {"GNU libunwind", "libunwind/libunwind", ""}},
      {"libgcc_s", {"libgcc (unwinder)", "gcc-mirror/gcc", "libgcc"}},
      {"libstdc++", {"libstdc++", "gcc-mirror/gcc", "libstdc++-v3"}},
      {"libc++", {"libc++", "llvm/llvm-project", "libcxx"}},
      {"ld-linux", {"glibc dynamic loader", "bminor/glibc", "elf"}},
      {"libc.so", {"glibc", "bminor/glibc", ""}},
      {"libm.so", {"glibc (libm)", "bminor/glibc", "math"}},
      {"libpthread", {"glibc (pthread)", "bminor/glibc", "nptl"}},
      {"[vdso]", {"kernel vDSO", "", ""}},
  };
}

Status ComponentMap::AddFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorKind::kIo, "cannot read component map " + path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    for (size_t from = 0;;) {
      size_t tab = line.find('\t', from);
      fields.push_back(line.substr(from, tab == std::string::npos ? std::string::npos : tab - from));
      if (tab == std::string::npos) break;
      from = tab + 1;
    }
    if (fields.size() < 2 || fields.size() > 4 || fields[0].empty() || fields[1].empty()) {
      return MakeError(ErrorKind::kMalformed, path + ":" + std::to_string(n) +
                                                  ": expected `pattern<TAB>component[<TAB>repository[<TAB>path]]`");
    }
    fields.resize(4);
    user_.emplace_back(fields[0], Component{fields[1], fields[2], fields[3]});
  }
  return Ok{};
}

Component ComponentMap::Find(const std::string& module_path, bool executable) const {
  std::string base = module_path.substr(module_path.rfind('/') + 1);
  for (const auto* rules : {&user_, &builtin_}) {
    for (const auto& [pattern, component] : *rules) {
      if (base.find(pattern) != std::string::npos) return component;
    }
  }
  return {executable ? "application" : "unknown (" + base + ")", "", ""};
}

std::string ComponentMap::ForPython(const std::string& file) {
  bool installed = file.find("-packages/") != std::string::npos;
  size_t lib = file.find("/lib/python3.");
  if (!installed && lib != std::string::npos && file.find('/', lib + 13) != std::string::npos) {
    return "Python standard library";
  }
  return "application (Python)";
}

std::string ComponentMap::For(const std::string& module_path, bool executable) const {
  return Find(module_path, executable).name;
}

}  // namespace coroner
