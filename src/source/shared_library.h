// SharedLibrary: a dependency opened with dlopen on first use, for the
// libraries only some runs need. Linking libcurl (HTTP ranges) and
// libdebuginfod cost every run about 13 ms before main (they pull in
// gnutls, krb5, ldap and two dozen more), a tenth of a 100 GiB core's whole
// analysis and most of a small core's; a run that reads a local file now
// never maps them.
#pragma once

#include <string>

namespace coroner {

class SharedLibrary {
 public:
  // dlopen(soname, RTLD_NOW | RTLD_LOCAL); never closed (the functions
  // taken from it may be called until the process exits).
  explicit SharedLibrary(const char* soname);
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // False with the reason in error() when the library or a symbol asked
  // for with Get is missing.
  bool ok() const { return handle_ != nullptr && error_.empty(); }
  const std::string& error() const { return error_; }

  // Sets `fn` to the library's function `name`; on failure leaves it null
  // and records why.
  template <typename F>
  void Get(const char* name, F*& fn) {
    fn = reinterpret_cast<F*>(Symbol(name));
  }

 private:
  void* Symbol(const char* name);
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace coroner
