#include "provenance/inventory.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace coroner {
namespace {

constexpr off_t kMaxFile = 64 << 20;

std::string Normalize(std::string name) {
  for (auto& c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c == '-' || c == '.') c = '_';
  }
  return name;
}

std::string WithoutArch(const std::string& pkg) { return pkg.substr(0, pkg.find(':')); }

std::optional<std::string> ReadSmallFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxFile) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// One line of `rpm -qa`: NAME-VERSION-RELEASE.ARCH, e.g.
// glibc-2.34-100.el9.x86_64 -> {glibc, 2.34-100.el9}.
std::optional<std::pair<std::string, std::string>> ParseRpmLine(std::string line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  if (line.empty() || line.find(' ') != std::string::npos) return std::nullopt;
  auto dot = line.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  std::string arch = line.substr(dot + 1);
  static const char* const kArches[] = {"x86_64", "noarch", "i686", "aarch64", "ppc64le", "s390x"};
  if (std::find(std::begin(kArches), std::end(kArches), arch) == std::end(kArches)) return std::nullopt;
  std::string nvr = line.substr(0, dot);
  auto release = nvr.rfind('-');
  if (release == std::string::npos || release == 0) return std::nullopt;
  auto version = nvr.rfind('-', release - 1);
  if (version == std::string::npos || version == 0) return std::nullopt;
  return std::make_pair(nvr.substr(0, version), nvr.substr(version + 1));
}

}  // namespace

Expected<PackageInventory> PackageInventory::Load(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return MakeError(ErrorKind::kIo, "inventory directory " + dir + " cannot be read");
  }
  PackageInventory inv;
  // A dpkg database copy: status (and info/*.list) at the top or under var/lib/dpkg.
  for (const std::string& db : {dir, dir + "/var/lib/dpkg", dir + "/dpkg"}) {
    auto status = ReadSmallFile(db + "/status");
    if (!status) continue;
    inv.sources_.push_back(db + "/status");
    std::istringstream in(*status);
    std::string line, pkg, version;
    bool installed = false;
    auto flush = [&] {
      if (!pkg.empty() && !version.empty() && installed) inv.dpkg_[pkg] = version;
      pkg.clear();
      version.clear();
      installed = false;
    };
    while (std::getline(in, line)) {
      if (line.empty()) flush();
      else if (line.rfind("Package: ", 0) == 0) pkg = line.substr(9);
      else if (line.rfind("Version: ", 0) == 0) version = line.substr(9);
      else if (line.rfind("Status: ", 0) == 0) installed = line.find(" installed") != std::string::npos;
    }
    flush();
    for (const auto& name : ListDir(db + "/info")) {
      if (name.size() < 6 || name.compare(name.size() - 5, 5, ".list") != 0) continue;
      auto list = ReadSmallFile(db + "/info/" + name);
      if (!list) continue;
      std::string owner = WithoutArch(name.substr(0, name.size() - 5));
      std::istringstream files(*list);
      while (std::getline(files, line)) {
        if (line.find(".so") != std::string::npos) inv.owner_[line] = owner;
      }
    }
  }
  for (const auto& name : ListDir(dir)) {
    auto text = ReadSmallFile(dir + "/" + name);
    if (!text || name == "status") continue;
    inv.AddCapture(dir + "/" + name, *text);
  }
  return inv;
}

void PackageInventory::AddCapture(const std::string& name, const std::string& text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  bool any = false;
  if (first != std::string::npos && text[first] == '[') {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_array()) {
      for (const auto& e : j) {
        if (!e.is_object() || !e.contains("name") || !e.contains("version") || !e["name"].is_string() ||
            !e["version"].is_string()) {
          continue;
        }
        std::string n = e["name"].get<std::string>();
        pip_[Normalize(n)] = e["version"].get<std::string>();
        pip_names_[Normalize(n)] = n;
        any = true;
      }
    }
  } else {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("ii ", 0) == 0) {
        std::istringstream fields(line.substr(3));
        std::string pkg, version;
        if (fields >> pkg >> version) {
          dpkg_[WithoutArch(pkg)] = version;
          any = true;
        }
      } else if (auto rpm = ParseRpmLine(line)) {
        rpm_[rpm->first] = rpm->second;
        any = true;
      }
    }
  }
  (any ? sources_ : skipped_).push_back(name);
}

std::optional<Package> PackageInventory::For(const std::string& module_path) const {
  if (auto it = owner_.find(module_path); it != owner_.end()) {
    auto v = dpkg_.find(it->second);
    if (v != dpkg_.end()) return Package{it->second, v->second, "dpkg"};
  }
  // Under site-packages (or dist-packages): the Python package directory.
  for (const char* marker : {"/site-packages/", "/dist-packages/"}) {
    auto at = module_path.find(marker);
    if (at == std::string::npos) continue;
    std::string rest = module_path.substr(at + std::string(marker).size());
    std::string dir = rest.substr(0, rest.find('/'));
    if (dir.size() > 5 && dir.compare(dir.size() - 5, 5, ".libs") == 0) dir.resize(dir.size() - 5);
    auto it = pip_.find(Normalize(dir));
    if (it != pip_.end()) return Package{pip_names_.at(it->first), it->second, "pip"};
  }
  // A shared object's Debian package name: the soname with its major
  // version appended (libc.so.6 -> libc6; libfoo-1.so.2 -> libfoo-1-2).
  std::string base = module_path.substr(module_path.rfind('/') + 1);
  auto so = base.find(".so");
  if (so == std::string::npos) return std::nullopt;
  std::string stem = base.substr(0, so);
  std::string major = base.size() > so + 4 ? base.substr(so + 4) : "";
  major = major.substr(0, major.find('.'));
  std::replace(stem.begin(), stem.end(), '_', '-');
  std::string lower = stem;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> names;
  if (lower.rfind("ld-linux", 0) == 0) names.push_back("libc6");
  if (!major.empty()) {
    bool digit_end = std::isdigit(static_cast<unsigned char>(lower.back()));
    names.push_back(lower + (digit_end ? "-" : "") + major);
  }
  names.push_back(lower);
  for (const auto& n : names) {
    if (auto it = dpkg_.find(n); it != dpkg_.end()) return Package{n, it->second, "dpkg"};
  }
  // rpm names libraries without their major version, and glibc's by glibc.
  static const char* const kGlibc[] = {"libc", "ld-linux-x86-64", "libm", "libpthread", "libdl", "librt"};
  std::vector<std::string> rpm_names = {lower};
  if (std::find(std::begin(kGlibc), std::end(kGlibc), lower) != std::end(kGlibc)) rpm_names.insert(rpm_names.begin(), "glibc");
  for (const auto& n : rpm_names) {
    if (auto it = rpm_.find(n); it != rpm_.end()) return Package{n, it->second, "rpm"};
  }
  return std::nullopt;
}

}  // namespace coroner
