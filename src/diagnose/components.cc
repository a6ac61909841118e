#include "diagnose/components.h"

#include <fstream>

namespace coroner {

ComponentMap::ComponentMap() {
  builtin_ = {
      {"libamdhip64", "HIP runtime (ROCm CLR)"},
      {"libhsa-runtime64", "ROCr (HSA runtime)"},
      {"librocprofiler-sdk", "rocprofiler-sdk"},
      {"libroctracer", "roctracer"},
      {"librccl", "RCCL"},
      {"libhipblaslt", "hipBLASLt"},
      {"librocblas", "rocBLAS"},
      {"libMIOpen", "MIOpen"},
      {"libcudart", "CUDA runtime"},
      {"libcuda.so", "CUDA driver"},
      {"libcublas", "cuBLAS"},
      {"libcudnn", "cuDNN"},
      {"libnccl", "NCCL"},
      {"xla_rocm_plugin", "XLA ROCm plugin (PJRT)"},
      {"xla_cuda_plugin", "XLA CUDA plugin (PJRT)"},
      {"pjrt", "XLA PJRT plugin"},
      {"xla_extension", "XLA (jaxlib)"},
      {"libtensorflow", "TensorFlow"},
      {"libtorch", "PyTorch"},
      {"libpython", "CPython"},
      {"libunwind", "GNU libunwind"},
      {"libgcc_s", "libgcc (unwinder)"},
      {"libstdc++", "libstdc++"},
      {"libc++", "libc++"},
      {"ld-linux", "glibc dynamic loader"},
      {"libc.so", "glibc"},
      {"libm.so", "glibc (libm)"},
      {"libpthread", "glibc (pthread)"},
      {"[vdso]", "kernel vDSO"},
  };
}

Expected<bool> ComponentMap::AddFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorKind::kIo, "cannot read component map " + path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    if (tab == std::string::npos || tab == 0 || tab + 1 >= line.size()) {
      return MakeError(ErrorKind::kMalformed, path + ":" + std::to_string(n) + ": expected `pattern<TAB>component`");
    }
    user_.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return true;
}

std::string ComponentMap::For(const std::string& module_path, bool executable) const {
  std::string base = module_path.substr(module_path.rfind('/') + 1);
  for (const auto* rules : {&user_, &builtin_}) {
    for (const auto& [pattern, component] : *rules) {
      if (base.find(pattern) != std::string::npos) return component;
    }
  }
  return executable ? "application" : "unknown (" + base + ")";
}

}  // namespace coroner
