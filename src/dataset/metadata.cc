#include "dataset/metadata.h"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "dataset/timestamps.h"
#include "source/byte_source.h"
#include "text/text.h"

namespace coroner {
namespace {

constexpr size_t kMaxSidecarBytes = 1 << 20;
constexpr size_t kMaxSidecarDepth = 32;  // objects and arrays inside each other
constexpr size_t kMaxAttributeBytes = 4096;  // per value; longer values are cut
constexpr size_t kMaxAttributes = 256;
constexpr size_t kMaxInventoryBytes = 256 << 20;

// A file's or URL's name: a URL's query is not part of it.
std::string InputName(const std::string& input) { return Basename(std::string_view(input).substr(0, input.find('?'))); }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The directory that holds `path`, resolved; empty when it does not resolve.
std::string RealDirectory(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (!real) return {};
  std::string out = real;
  std::free(real);
  return out;
}

// Whether a local sidecar may be read: a regular file, reached directly or
// through symbolic links that stay in the core's directory tree (a link to
// a credentials file elsewhere would put that file into the dataset). Never
// opens the file, so a FIFO cannot block the reader. Empty when it may; the
// reason when not; nullopt when there is no sidecar.
std::optional<std::string> SidecarRefusal(const std::string& core, const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  if (S_ISLNK(st.st_mode)) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) return std::nullopt;  // a dangling link: no sidecar
    std::string target = real;
    std::free(real);
    std::string tree = RealDirectory(core);
    if (tree.empty() || target.compare(0, tree.size() + 1, tree + "/") != 0) {
      return "a symbolic link out of the core's directory; not read";
    }
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) return "not a regular file; not read";
  return std::string();
}

// The deepest nesting of arrays and objects in JSON text, counted without
// parsing (strings skipped), so that a hostile sidecar nested 100,000 deep is
// refused before a recursive walk of it could exhaust the stack.
size_t JsonDepth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Reads a whole small input (a sidecar) through the same sources as cores.
// nullopt when there is none; an error when there is one that cannot be read.
Expected<std::optional<std::string>> ReadSmall(const std::string& core, const std::string& path) {
  if (!IsUrl(path)) {
    auto refusal = SidecarRefusal(core, path);
    if (!refusal) return std::optional<std::string>();
    if (!refusal->empty()) return MakeError(ErrorKind::kIo, *refusal);
  }
  RemoteFileInfo remote;
  auto src = IsUrl(path) ? OpenHttpSource(path, DefaultHttpOptions(), &remote) : OpenFileSource(path);
  if (!src.ok()) {
    if (remote.http_status == 404) return std::optional<std::string>();  // no sidecar
    return src.error();
  }
  auto size = (*src)->Size();
  if (size && *size > kMaxSidecarBytes) {
    return MakeError(ErrorKind::kMalformed, "larger than " + std::to_string(kMaxSidecarBytes) + " bytes");
  }
  std::string text(static_cast<size_t>(size.value_or(kMaxSidecarBytes)), '\0');
  auto n = (*src)->ReadUpTo(0, std::as_writable_bytes(std::span<char>(text)));
  if (!n.ok()) return n.error();
  text.resize(*n);
  return std::optional<std::string>(std::move(text));
}

std::string ScalarText(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return JsonText(v);
}

void ReadSidecar(const std::string& input, Metadata& md) {
  std::vector<std::string> candidates{input + ".json"};
  for (const char* ext : {".zst", ".lz4", ".xz"}) {
    if (EndsWith(input, ext)) candidates.push_back(input.substr(0, input.size() - std::strlen(ext)) + ".json");
  }
  if (IsUrl(input) && input.find('?') != std::string::npos) return;  // a signed URL names no sidecar
  for (const auto& path : candidates) {
    auto text = ReadSmall(input, path);
    if (!text.ok()) {
      md.warnings.push_back("sidecar " + InputName(path) + ": " + text.error().message);
      return;
    }
    if (!*text) continue;
    if (JsonDepth(**text) > kMaxSidecarDepth) {
      md.warnings.push_back("sidecar " + InputName(path) + ": nested deeper than " + std::to_string(kMaxSidecarDepth) +
                            " levels; not read");
      return;
    }
    auto j = nlohmann::json::parse(**text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      md.warnings.push_back("sidecar " + InputName(path) + ": not a JSON object");
      return;
    }
    for (const auto& [key, value] : j.items()) {
      if (key.empty() || key.size() > 128) continue;
      std::string v = ScalarText(value);
      if (key == "time" || key == "boot_time") {
        auto t = ParseIso8601(v);
        if (!t) {
          md.warnings.push_back("sidecar " + key + " is not an ISO-8601 time: " + v.substr(0, 64));
          continue;
        }
        if (key == "time") {
          md.time = t;
          md.time_source = "sidecar";
        } else {
          md.boot_time = t;
        }
        continue;
      }
      md.Add(key, v);
    }
    return;
  }
}

void ReadXattrs(const std::string& input, Metadata& md) {
  if (IsUrl(input)) return;
  char names[16384];
  ssize_t len = ::listxattr(input.c_str(), names, sizeof names);
  if (len <= 0) return;
  const std::string prefix = "user.coredump.";
  for (ssize_t at = 0; at < len;) {
    std::string name(names + at);
    at += static_cast<ssize_t>(name.size()) + 1;
    if (name.rfind(prefix, 0) != 0) continue;
    char value[kMaxAttributeBytes];
    ssize_t n = ::getxattr(input.c_str(), name.c_str(), value, sizeof value);
    if (n < 0) continue;
    std::string key = name.substr(prefix.size()), v(value, static_cast<size_t>(n));
    if (key == "timestamp") {  // microseconds since the epoch
      char* end = nullptr;
      unsigned long long us = std::strtoull(v.c_str(), &end, 10);
      if (end && *end == '\0' && !v.empty() && !md.time) {
        md.time = static_cast<int64_t>(us / 1000000);
        md.time_source = "xattr";
      }
      continue;
    }
    if (key == "hostname" && !md.Get("host")) {
      md.Add("host", v);
      md.Add("host_source", "xattr");
    }
    md.Add(key, v);
  }
}

}  // namespace

const std::string* Metadata::Get(const std::string& key) const {
  for (const auto& [k, v] : attributes) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Metadata::Add(const std::string& key, const std::string& value) {
  if (Get(key) || attributes.size() >= kMaxAttributes) return;
  attributes.emplace_back(key, value.substr(0, kMaxAttributeBytes));
}

std::optional<int64_t> Metadata::Uptime() const {
  if (!time || !boot_time || *time < *boot_time) return std::nullopt;
  return *time - *boot_time;
}

// The longest dump whose creation time is taken for its crash's: longer,
// and the file is more likely an older core the kernel wrote over.
constexpr int64_t kMaxDumpNs = int64_t{600} * 1000000000;

bool ParseCoredumpFileName(const std::string& basename, Metadata& md) {
  // core.COMM.UID.BOOTID.PID.USEC, then an optional compression suffix.
  static const std::regex kName(R"(^core\.(.+)\.(\d+)\.([0-9a-f]{32})\.(\d+)\.(\d{10,20})(\.(zst|lz4|xz))?$)");
  std::smatch m;
  if (basename.size() > 512 || !std::regex_match(basename, m, kName)) return false;
  // Twenty digits can exceed 64 bits: such a name was not written by
  // systemd-coredump, so none of it is taken.
  uint64_t usec = 0;
  const char* first = basename.data() + m.position(5);
  const char* last = first + m.length(5);
  if (auto [end, ec] = std::from_chars(first, last, usec); ec != std::errc() || end != last) return false;
  md.Add("comm", m[1]);
  md.Add("uid", m[2]);
  md.Add("boot_id", m[3]);
  md.Add("pid", m[4]);
  if (!md.time) {
    md.time = static_cast<int64_t>(usec / 1000000);
    md.time_source = "filename";
  }
  return true;
}

Metadata ReadMetadata(const std::string& input, std::optional<int64_t> mtime_ns, std::optional<int64_t> btime_ns,
                      const Metadata* journal) {
  Metadata md;
  ReadSidecar(input, md);
  if (journal) {
    for (const auto& [k, v] : journal->attributes) md.Add(k, v);
    if (!md.time && journal->time) {
      md.time = journal->time;
      md.time_source = journal->time_source;
    }
  }
  ReadXattrs(input, md);
  ParseCoredumpFileName(InputName(input), md);
  // The kernel creates the core file when the dump begins and last writes
  // it when the dump ends: a big process's dump ends long after its crash
  // (and after its peers' small ones). The creation time is the crash's,
  // unless the file was copied (created after its mtime) or the kernel
  // wrote over an older core of the same name (created long before).
  if (!md.time && btime_ns && mtime_ns && *btime_ns <= *mtime_ns && *mtime_ns - *btime_ns <= kMaxDumpNs) {
    md.time = *btime_ns / 1000000000;
    md.time_source = "btime";
  }
  if (!md.time && mtime_ns) {
    md.time = *mtime_ns / 1000000000;
    md.time_source = "mtime";
  }
  return md;
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

Expected<Inventory> Inventory::Load(const std::string& path) {
  // The size is checked before anything is read, and the text read once.
  auto src = OpenFileSource(path);
  if (!src.ok()) return MakeError(ErrorKind::kIo, "inventory " + path + ": " + src.error().message);
  uint64_t size = (*src)->Size().value_or(0);
  if (size > kMaxInventoryBytes) {
    return MakeError(ErrorKind::kMalformed, "inventory " + path + ": larger than " +
                                                std::to_string(kMaxInventoryBytes >> 20) + " MiB");
  }
  std::string text(static_cast<size_t>(size), '\0');
  auto n = (*src)->ReadUpTo(0, std::as_writable_bytes(std::span<char>(text)));
  if (!n.ok()) return MakeError(ErrorKind::kIo, "inventory " + path + ": " + n.error().message);
  text.resize(*n);
  auto inv = Parse(text);
  if (!inv.ok()) return MakeError(inv.error().kind, "inventory " + path + ": " + inv.error().message);
  return inv;
}

Expected<Inventory> Inventory::Parse(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  Inventory inv;
  int host = -1, from = -1, to = -1;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    auto fields = SplitCsvLine(line);
    if (header.empty()) {
      header = fields;
      for (size_t i = 0; i < header.size(); ++i) {
        if (header[i] == "host") host = static_cast<int>(i);
        if (header[i] == "valid_from") from = static_cast<int>(i);
        if (header[i] == "valid_to") to = static_cast<int>(i);
      }
      if (host < 0) return MakeError(ErrorKind::kMalformed, "the header has no `host` column");
      inv.names_ = std::make_shared<const std::vector<std::string>>(header);
      continue;
    }
    if (fields.size() != header.size()) {
      return MakeError(ErrorKind::kMalformed, "line " + std::to_string(line_no) + " has " +
                                                  std::to_string(fields.size()) + " fields, the header " +
                                                  std::to_string(header.size()));
    }
    Row row;
    row.host = fields[static_cast<size_t>(host)];
    for (auto [col, bound] : {std::pair{from, &row.valid_from}, std::pair{to, &row.valid_to}}) {
      if (col < 0 || fields[static_cast<size_t>(col)].empty()) continue;
      *bound = ParseIso8601(fields[static_cast<size_t>(col)]);
      if (!*bound) {
        return MakeError(ErrorKind::kMalformed, "line " + std::to_string(line_no) + ": " +
                                                    header[static_cast<size_t>(col)] + " is not an ISO-8601 time");
      }
    }
    for (size_t i = 0; i < header.size(); ++i) {
      if (static_cast<int>(i) == host || static_cast<int>(i) == from || static_cast<int>(i) == to) continue;
      if (fields[i].empty()) continue;  // no value (and 2,000 empty columns cost nothing)
      row.columns.emplace_back((*inv.names_)[i], std::move(fields[i]));
    }
    inv.rows_.push_back(std::move(row));
  }
  if (header.empty()) return MakeError(ErrorKind::kMalformed, "empty");
  return inv;
}

void Inventory::Join(Metadata& md) const {
  const std::string* host = md.Get("host");
  if (!host) return;
  for (const auto& row : rows_) {
    if (row.host != *host) continue;
    if ((row.valid_from || row.valid_to) && !md.time) continue;
    if (row.valid_from && *md.time < *row.valid_from) continue;
    if (row.valid_to && *md.time >= *row.valid_to) continue;
    for (const auto& [k, v] : row.columns) md.Add(std::string(k), v);
    return;
  }
}

}  // namespace coroner
