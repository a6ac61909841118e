#include "dataset/inputs.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "source/byte_source.h"

namespace coroner {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxListDepth = 4;  // @lists naming @lists

bool IsSidecar(const std::string& p) { return p.size() >= 5 && p.compare(p.size() - 5, 5, ".json") == 0; }

std::string Absolute(const std::string& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

class Expander {
 public:
  explicit Expander(const std::vector<std::string>& exclude) {
    for (const auto& e : exclude) {
      std::string a = Absolute(e);
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) exclude_.insert(a + suffix);
    }
  }

  void Add(const std::string& arg, int depth) {
    if (arg.empty()) return;
    if (IsUrl(arg)) {
      Push(arg);
      return;
    }
    if (arg[0] == '@') {
      AddList(arg.substr(1), depth);
      return;
    }
    std::error_code ec;
    fs::file_status st = fs::status(arg, ec);
    if (!ec && fs::is_directory(st)) {
      AddDirectory(arg);
      return;
    }
    if (ec && arg.find_first_of("*?[") != std::string::npos) {
      AddGlob(arg);
      return;
    }
    Push(Absolute(arg));  // a file, or one that is missing: its row will say so
  }

  InputList Finish() {
    std::sort(out_.inputs.begin(), out_.inputs.end());
    return std::move(out_);
  }

 private:
  void Push(const std::string& p) {
    if (exclude_.count(p) || !seen_.insert(p).second) return;
    out_.inputs.push_back(p);
  }

  void AddDirectory(const std::string& dir) {
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) {
      out_.warnings.push_back(dir + ": " + ec.message());
      return;
    }
    for (; it != end; it.increment(ec)) {
      if (ec) {
        out_.warnings.push_back(dir + ": " + ec.message());
        break;
      }
      std::error_code fe;
      if (!it->is_regular_file(fe)) continue;  // symlinks to files count; to directories are not followed
      std::string p = it->path().string();
      if (IsSidecar(p)) continue;
      Push(Absolute(p));
    }
  }

  void AddGlob(const std::string& pattern) {
    glob_t g{};
    int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g);
    if (rc == GLOB_NOMATCH || g.gl_pathc == 0) {
      out_.warnings.push_back(pattern + ": no match");
    } else if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        std::string p = g.gl_pathv[i];
        std::error_code ec;
        if (fs::is_directory(p, ec)) AddDirectory(p);
        else if (!IsSidecar(p)) Push(Absolute(p));
      }
    } else {
      out_.warnings.push_back(pattern + ": glob failed");
    }
    globfree(&g);
  }

  void AddList(const std::string& path, int depth) {
    if (depth >= kMaxListDepth) {
      out_.warnings.push_back("@" + path + ": lists nested too deep");
      return;
    }
    std::ifstream in(path);
    if (!in) {
      out_.warnings.push_back("@" + path + ": cannot open");
      return;
    }
    std::string line;
    while (std::getline(in, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      size_t start = line.find_first_not_of(" \t");
      if (start == std::string::npos || line[start] == '#') continue;
      Add(line.substr(start), depth + 1);
    }
  }

  std::set<std::string> exclude_, seen_;
  InputList out_;
};

}  // namespace

std::vector<std::string> SelectShard(const std::vector<std::string>& inputs, int index, int count) {
  std::vector<std::pair<uint64_t, const std::string*>> sized;
  for (const auto& in : inputs) {
    uint64_t size = 1 << 20;
    struct stat st {};
    if (!IsUrl(in) && ::stat(in.c_str(), &st) == 0) size = static_cast<uint64_t>(st.st_size);
    sized.emplace_back(size, &in);
  }
  std::sort(sized.begin(), sized.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  std::vector<uint64_t> load(static_cast<size_t>(count), 0);
  std::vector<std::string> out;
  for (const auto& [size, path] : sized) {
    size_t least = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[least] += size + 1;  // +1: empty files still count
    if (static_cast<int>(least) == index) out.push_back(*path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

InputList ExpandInputs(const std::vector<std::string>& args, const std::vector<std::string>& exclude) {
  Expander e(exclude);
  for (const auto& a : args) e.Add(a, 0);
  return e.Finish();
}

}  // namespace coroner
