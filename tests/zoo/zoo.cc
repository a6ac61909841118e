#include "zoo/zoo.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace coroner::testing {

std::vector<std::vector<std::string>> ReadTsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string col;
    while (std::getline(ss, col, '\t')) cols.push_back(col);
    rows.push_back(cols);
  }
  return rows;
}

std::string GdbInstructionText(const std::string& line) {
  // x86's comment is "# 0x... <sym>", aarch64's "// #139"; an aarch64
  // immediate ("#8") is no comment.
  std::string text = line.substr(0, std::min(line.find(" # "), line.find(" //")));
  if (size_t sym = text.find(" <"); sym != std::string::npos) text.erase(sym, text.find('>', sym) + 1 - sym);
  std::string out;
  for (char c : text) {
    bool space = c == ' ' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string ZooDir() {
  const char* z = std::getenv("CORONER_ZOO");
  if (!z) throw std::runtime_error("CORONER_ZOO is not set (run the tests through ctest)");
  return z;
}

namespace {
std::vector<ZooCore> LoadManifest(const std::string& path) {
  std::vector<ZooCore> zoo;
  for (const auto& r : ReadTsv(path)) {
    if (r.size() < 5) continue;
    zoo.push_back({r[0], r[1], r[2], r[3], r[4]});
  }
  return zoo;
}
}  // namespace

std::vector<ZooCore> LoadZoo() { return LoadManifest(ZooDir() + "/manifest.tsv"); }
std::vector<ZooCore> LoadA64Zoo() { return LoadManifest(ZooDir() + "/a64/manifest.tsv"); }

namespace {
// The aarch64 zoo's libraries (lib*.so*) in its binaries' directory.
std::vector<std::string> A64Libraries() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ZooDir() + "/a64/bin", ec))
    if (e.path().filename().string().rfind("lib", 0) == 0) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

std::vector<std::string> A64ExeFiles(const ZooCore& z) {
  std::vector<std::string> out = {z.binary};
  for (auto& lib : A64Libraries()) out.push_back(std::move(lib));
  return out;
}

std::string MakeA64Root(const std::string& dir, const std::vector<std::string>& also) {
  namespace fs = std::filesystem;
  fs::path root = dir;
  fs::create_directories(root / "lib");
  auto place = [](const fs::path& from, const fs::path& to) {
    std::error_code linked;
    fs::create_hard_link(from, to, linked);
    if (linked) fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  };
  for (const char* lib : {"ld-linux-aarch64.so.1", "libc.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libm.so.6"})
    place(fs::path(kA64Sysroot) / "lib" / lib, root / "lib" / lib);
  std::vector<std::string> files = also;
  for (const auto& z : LoadA64Zoo()) files.push_back(z.binary);
  for (auto& lib : A64Libraries()) files.push_back(std::move(lib));
  for (const auto& file : files) {
    fs::path at = root / fs::path(file).relative_path();
    fs::create_directories(at.parent_path());
    place(file, at);
  }
  return dir;
}

std::map<std::string, Expectation> LoadExpectations() {
  const char* src = std::getenv("CORONER_SOURCE_DIR");
  if (!src) throw std::runtime_error("CORONER_SOURCE_DIR is not set");
  std::map<std::string, Expectation> m;
  for (const auto& r : ReadTsv(std::string(src) + "/tests/crashers/expected.tsv")) {
    if (r.size() < 7) continue;
    m[r[0]] = {r[1], r[2], r[3], std::stoi(r[4]), r[5], r[6]};
  }
  return m;
}

GdbOracle ParseGdbOracle(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  GdbOracle o;
  static const std::regex kTerminated(R"(^Program terminated with signal (SIG[A-Z0-9]+),)");
  static const std::regex kThreadRow(R"(^[* ] +\d+ +(Thread|LWP|process) )");
  static const std::regex kThreadHead(R"(^Thread \d+ \(.*\b(?:LWP|process) (\d+)\)\)?:)");
  static const std::regex kReg(R"(^([a-z0-9_]+) +(0x[0-9a-f]+)\b)");
  static const std::regex kMap(R"(^ +(0x[0-9a-f]+) +(0x[0-9a-f]+) +0x[0-9a-f]+ +(0x[0-9a-f]+) +(\S.*)$)");
  static const std::regex kInsn(R"(^(?:=>)?\s+(0x[0-9a-f]+)(?: <[^>]*>)?:\t(.*)$)");
  static const std::regex kFrame(R"(^frame \d+ (0x[0-9a-f]+) (\w+) (.*)\t(.*)\t(\d+)$)");
  std::string section, line;
  std::smatch m;
  int frames_tid = 0;
  while (std::getline(in, line)) {
    if (line.rfind("@@", 0) == 0) {
      section = line.substr(2);
      continue;
    }
    if (section.empty()) {
      if (std::regex_search(line, m, kTerminated)) o.signal_name = m[1];
    } else if (section == "threads") {
      if (std::regex_search(line, m, kThreadRow)) ++o.thread_count;
    } else if (section == "registers") {
      if (std::regex_search(line, m, kThreadHead)) {
        o.threads.push_back({std::stoi(m[1]), {}});
      } else if (!o.threads.empty() && std::regex_search(line, m, kReg)) {
        o.threads.back().registers[m[1]] = std::stoull(m[2], nullptr, 16);
      }
    } else if (section == "siginfo") {
      std::istringstream ss(line);
      std::string key, value;
      ss >> key >> value;
      try {
        if (key == "si_signo") o.sig_signo = std::stoi(value);
        if (key == "si_code") o.sig_code = std::stoi(value);
        if (key == "si_addr") o.sig_addr = std::stoull(value, nullptr, 16);
      } catch (const std::exception&) {
        // gdb printed an error instead of a value: leave it unset
      }
    } else if (section == "insn") {
      if (line.find("Cannot access memory") == std::string::npos && std::regex_search(line, m, kInsn)) {
        o.instructions.push_back({std::stoull(m[1], nullptr, 16), GdbInstructionText(m[2])});
      }
    } else if (section == "frames") {
      if (line.rfind("@thread ", 0) == 0) {
        frames_tid = std::stoi(line.substr(8));
        o.frames[frames_tid];
      } else if (line.rfind("sigctx ", 0) == 0) {
        if (o.signal_context.count(frames_tid)) continue;
        std::istringstream ss(line.substr(7));
        std::string kv;
        auto& regs = o.signal_context[frames_tid];
        while (ss >> kv) {
          auto eq = kv.find('=');
          if (eq != std::string::npos) regs[kv.substr(0, eq)] = std::stoull(kv.substr(eq + 1), nullptr, 16);
        }
      } else if (line.rfind("var ", 0) == 0) {
        // "var LEVEL arg|local NAME<TAB>VALUE", split by hand: a value can
        // be tens of kilobytes (node's structures), too long for std::regex's
        // recursion under a sanitizer's stack.
        size_t tab = line.find('\t');
        std::istringstream head(line.substr(0, tab));
        std::string word, kind, name;
        int level = 0;
        if (tab != std::string::npos && head >> word >> level >> kind >> name && (kind == "arg" || kind == "local"))
          o.variables.push_back({level, kind == "arg", name, line.substr(tab + 1)});
      } else if (std::regex_search(line, m, kFrame)) {
        o.frames[frames_tid].push_back({std::stoull(m[1], nullptr, 16), m[2], m[3], m[4], std::stoi(m[5])});
      }
    } else if (section == "mappings") {
      if (std::regex_search(line, m, kMap)) {
        o.mappings.push_back({std::stoull(m[1], nullptr, 16), std::stoull(m[2], nullptr, 16),
                              std::stoull(m[3], nullptr, 16), m[4]});
      }
    }
  }
  return o;
}

}  // namespace coroner::testing
