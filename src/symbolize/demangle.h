// Function names as a backtrace shows them: demangled, without the parameter
// list ("Registry::~Registry", "std::terminate", "walk").
#pragma once

#include <string>
#include <string_view>

namespace coroner {

// Demangles an Itanium C++ ABI name (`_ZN8RegistryD2Ev`); other names come
// back unchanged.
std::string Demangle(const std::string& name);

// Drops a trailing parameter list and its qualifiers: "f(int) const" -> "f",
// "std::vector<int>::push_back(int const&)" -> "std::vector<int>::push_back".
// Parentheses inside template arguments or "(anonymous namespace)" stay.
std::string StripParameters(std::string_view name);

// Demangle, then StripParameters.
std::string DisplayName(const std::string& name);

}  // namespace coroner
