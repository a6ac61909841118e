#include "source/shared_library.h"

#include <dlfcn.h>

namespace coroner {

SharedLibrary::SharedLibrary(const char* soname) {
  handle_ = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = ::dlerror();
    error_ = std::string("cannot load ") + soname + (why ? std::string(": ") + why : std::string());
  }
}

void* SharedLibrary::Symbol(const char* name) {
  if (!handle_) return nullptr;
  void* p = ::dlsym(handle_, name);
  if (!p && error_.empty()) error_ = std::string("no symbol ") + name + " in the library";
  return p;
}

}  // namespace coroner
