#include "provenance/source_map.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "text/text.h"

namespace coroner {
namespace {

bool IsFile(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// True when a path from DWARF, put under a directory the user named, stays
// there: it has no ".." component. The path is the module's, so hostile.
bool StaysInside(const std::string& rest) {
  for (size_t from = 0; from <= rest.size();) {
    size_t slash = std::min(rest.find('/', from), rest.size());
    if (rest.compare(from, slash - from, "..") == 0) return false;
    from = slash + 1;
  }
  return true;
}

// `rest` under `dir`; empty (no file) when `rest` would leave it.
std::string Join(const std::string& dir, const std::string& rest) {
  if (!StaysInside(rest)) return std::string();
  if (rest.empty()) return dir;
  if (!dir.empty() && dir.back() == '/') return dir + rest;
  return dir + "/" + rest;
}

// True when `path` starts with `prefix` on a component boundary.
bool HasPrefix(const std::string& path, const std::string& prefix) {
  if (prefix.empty() || path.compare(0, prefix.size(), prefix) != 0) return false;
  return path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/';
}

}  // namespace

Status SourceMap::AddRule(const std::string& rule) {
  auto eq = rule.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == rule.size()) {
    return MakeError(ErrorKind::kMalformed, "a source map rule is OLD=NEW, not `" + rule + "`");
  }
  std::string from = rule.substr(0, eq), to = rule.substr(eq + 1);
  while (from.size() > 1 && from.back() == '/') from.pop_back();
  while (to.size() > 1 && to.back() == '/') to.pop_back();
  rules_.emplace_back(from, to);
  // Longest OLD first, so that a more specific rule wins.
  std::stable_sort(rules_.begin(), rules_.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return Ok{};
}

Status SourceMap::AddFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorKind::kIo, "cannot read source map " + path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    if (auto r = AddRule(line); !r.ok()) return MakeError(ErrorKind::kMalformed, path + ":" + std::to_string(n) + ": " + r.error().message);
  }
  return Ok{};
}

void SourceMap::AddRoot(const std::string& dir) {
  if (!dir.empty()) roots_.push_back(dir);
}

ResolvedSource SourceMap::Resolve(const std::string& dwarf_path) const {
  ResolvedSource r;
  if (dwarf_path.empty()) return r;
  for (const auto& [from, to] : rules_) {
    if (!HasPrefix(dwarf_path, from)) continue;
    std::string rest = dwarf_path.substr(from.size());
    if (!rest.empty() && rest[0] == '/') rest.erase(0, 1);
    std::string candidate = Join(to, rest);
    if (IsFile(candidate)) {
      r.local = candidate;
      r.how = "source map";
      return r;
    }
  }
  if (auto at = dwarf_path.find(kPackagingPrefix); at != std::string::npos) {
    std::string rest = dwarf_path.substr(at + std::string(kPackagingPrefix).size());
    if (rest.rfind("src/", 0) == 0) rest.erase(0, 4);
    auto slash = rest.find('/');
    if (slash != std::string::npos) {
      r.repository = rest.substr(0, slash);
      r.in_repository = rest.substr(slash + 1);
      for (const auto& root : roots_) {
        std::string candidate = Basename(root) == r.repository ? Join(root, r.in_repository) : Join(root, rest);
        if (IsFile(candidate)) {
          r.local = candidate;
          r.how = "packaging prefix";
          return r;
        }
      }
    }
  }
  // The path's trailing components under each root, longest first: a root
  // that is the checkout of the build's tree finds `src/x/y.cc` whatever
  // directory the build ran in. Bounded by the number of components.
  std::vector<size_t> starts;
  for (size_t i = 0; i < dwarf_path.size(); ++i) {
    if (dwarf_path[i] == '/' && i + 1 < dwarf_path.size()) starts.push_back(i + 1);
  }
  if (dwarf_path[0] != '/') starts.insert(starts.begin(), 0);
  if (starts.size() > 32) starts.erase(starts.begin(), starts.end() - 32);
  for (size_t s : starts) {
    std::string tail = dwarf_path.substr(s);
    if (tail.rfind("./", 0) == 0) continue;
    for (const auto& root : roots_) {
      std::string candidate = Join(root, tail);
      if (IsFile(candidate)) {
        r.local = candidate;
        r.how = "source root";
        return r;
      }
    }
  }
  // A DWARF path is never read as it stands: the module names it, so a
  // program built with `#line 1 "/etc/shadow"` would otherwise put a local
  // file into the report. Only the directories the user named are read.
  return r;
}

}  // namespace coroner
