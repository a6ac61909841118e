#include "dataset/journal_metadata.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace coroner {
namespace {

bool IsHexId(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// "PREFIX<64 hex>SUFFIX" -> the id's first 12 digits, or empty.
std::string IdBetween(std::string_view part, std::string_view prefix, std::string_view suffix) {
  if (!part.starts_with(prefix) || !part.ends_with(suffix) || part.size() < prefix.size() + suffix.size()) return {};
  std::string_view id = part.substr(prefix.size(), part.size() - prefix.size() - suffix.size());
  return IsHexId(id) ? std::string(id.substr(0, 12)) : std::string();
}

// systemd's unit-name escaping undone: "\x2d" is '-'. Other bytes as they are.
std::string Unescaped(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned value = 0;
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
      auto [end, ec] = std::from_chars(s.data() + i + 2, s.data() + i + 4, value, 16);
      if (ec == std::errc() && end == s.data() + i + 4) {
        out += static_cast<char>(value);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// A Kubernetes pod's UID from its cgroup: "kubepods-besteffort-pod<UID>.slice"
// (systemd driver, '-' written '_') or "pod<UID>" (cgroupfs driver).
std::string PodUid(std::string_view part) {
  size_t at = part.rfind("pod");
  if (at == std::string_view::npos) return {};
  std::string_view uid = part.substr(at + 3);
  if (part.starts_with("kubepods") && part.ends_with(".slice")) {
    uid.remove_suffix(6);
  } else if (at != 0) {
    return {};
  }
  if (uid.size() != 36) return {};
  std::string out(uid);
  std::replace(out.begin(), out.end(), '_', '-');
  bool ok = std::all_of(out.begin(), out.end(), [](char c) { return c == '-' || std::isxdigit(static_cast<unsigned char>(c)); });
  return ok ? out : std::string();
}

}  // namespace

CgroupContainer ContainerOfCgroup(std::string_view cgroup) {
  std::vector<std::string_view> parts;
  for (size_t at = 0; at <= cgroup.size();) {
    size_t slash = std::min(cgroup.find('/', at), cgroup.size());
    if (slash > at) parts.push_back(cgroup.substr(at, slash - at));
    at = slash + 1;
  }
  CgroupContainer c;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string_view part = parts[i];
    if (std::string pod = PodUid(part); !pod.empty()) {
      c.pod = pod;
      if (c.runtime.empty()) c.runtime = "kubernetes";
      continue;
    }
    struct Scope {
      std::string_view prefix, runtime;
    };
    for (const Scope& s : {Scope{"docker-", "docker"}, Scope{"libpod-", "podman"},
                           Scope{"cri-containerd-", "containerd"}, Scope{"crio-", "cri-o"}}) {
      if (std::string id = IdBetween(part, s.prefix, ".scope"); !id.empty()) {
        c.container = id;
        c.runtime = s.runtime;
      }
    }
    // The cgroupfs drivers: /docker/ID, /kubepods/…/pod<UID>/ID.
    if (IsHexId(part) && i > 0) {
      c.container = std::string(part.substr(0, 12));
      if (parts[i - 1] == "docker") c.runtime = "docker";
    }
    if (part.starts_with("machine-") && part.ends_with(".scope") && c.container.empty()) {
      c.container = Unescaped(part.substr(8, part.size() - 8 - 6));
      c.runtime = "systemd-nspawn";
    }
    if (part.starts_with("systemd-nspawn@") && part.ends_with(".service")) {
      c.container = Unescaped(part.substr(15, part.size() - 15 - 8));
      c.runtime = "systemd-nspawn";
    }
  }
  if (c.container.empty() && c.pod.empty()) c.runtime.clear();
  return c;
}

uint64_t CrashTimeUs(const CoredumpEntry& entry) {
  if (const std::string* t = entry.Get("COREDUMP_TIMESTAMP")) {
    uint64_t parsed = 0;
    auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), parsed);
    if (ec == std::errc() && end == t->data() + t->size() && parsed > 0) return parsed;
  }
  return entry.realtime_us;
}

Metadata JournalMetadata(const CoredumpEntry& entry) {
  // The journal's field and the attribute it becomes; the names are
  // systemd-coredump's own xattrs' where it writes one (pid, uid, signal…).
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"_HOSTNAME", "host"},
      {"_BOOT_ID", "boot_id"},
      {"_MACHINE_ID", "machine_id"},
      {"COREDUMP_PID", "pid"},
      {"COREDUMP_TID", "tid"},
      {"COREDUMP_UID", "uid"},
      {"COREDUMP_GID", "gid"},
      {"COREDUMP_SIGNAL", "signal"},
      {"COREDUMP_COMM", "comm"},
      {"COREDUMP_EXE", "exe"},
      {"COREDUMP_THREAD_NAME", "thread_name"},
      {"COREDUMP_UNIT", "unit"},
      {"COREDUMP_USER_UNIT", "user_unit"},
      {"COREDUMP_SLICE", "slice"},
      {"COREDUMP_CGROUP", "cgroup"},
      {"COREDUMP_OWNER_UID", "owner_uid"},
      {"COREDUMP_PACKAGE_NAME", "package"},
      {"COREDUMP_PACKAGE_VERSION", "package_version"},
      {"COREDUMP_TRUNCATED", "truncated"},
  };
  Metadata md;
  for (const auto& [field, key] : kNames) {
    const std::string* v = entry.Get(field);
    if (!v || v->empty()) continue;
    md.Add(std::string(key), *v);
    if (key == "host") md.Add("host_source", "journal");
    if (key == "cgroup") {
      CgroupContainer c = ContainerOfCgroup(*v);
      if (!c.container.empty()) md.Add("container", c.container);
      if (!c.pod.empty()) md.Add("pod", c.pod);
      if (!c.runtime.empty()) md.Add("container_runtime", c.runtime);
    }
  }
  if (uint64_t usec = CrashTimeUs(entry)) {
    md.time = static_cast<int64_t>(usec / 1000000);
    md.time_source = "journal";
  }
  return md;
}

}  // namespace coroner
