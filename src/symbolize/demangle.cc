#include "symbolize/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace coroner {

std::string Demangle(const std::string& name) {
  if (name.size() < 3 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string result(out);
  std::free(out);
  return result;
}

std::string StripParameters(std::string_view name) {
  std::string_view s = name;
  // GCC's clone suffixes: "f(int) [clone .cold]", "g() [clone .isra.0]".
  while (s.ends_with("]")) {
    size_t at = s.rfind(" [clone ");
    if (at == std::string_view::npos) break;
    s = s.substr(0, at);
  }
  name = s;
  // Trailing qualifiers after the parameter list.
  for (bool again = true; again;) {
    again = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
      if (s.size() > q.size() && s.substr(s.size() - q.size()) == q) {
        s.remove_suffix(q.size());
        again = true;
      }
    }
  }
  if (s.empty() || s.back() != ')') return std::string(name);
  // Find the '(' matching the final ')', outside template brackets.
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    char c = s[i];
    if (c == ')') ++depth;
    else if (c == '(') {
      if (--depth == 0) {
        if (i == 0) return std::string(name);
        std::string_view head = s.substr(0, i);
        // "(anonymous namespace)" or an operator name like "operator()" is not a parameter list.
        if (head.ends_with("operator")) return std::string(s);
        return std::string(head);
      }
    }
  }
  return std::string(name);
}

std::string DisplayName(const std::string& name) { return StripParameters(Demangle(name)); }

}  // namespace coroner
