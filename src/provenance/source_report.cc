#include "provenance/source_report.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>

namespace coroner {

std::vector<SourceLine> ReadSourceLines(const std::string& path, int line, int context) {
  std::vector<SourceLine> out;
  struct stat st;
  if (line <= 0 || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (16 << 20)) return out;
  std::ifstream in(path);
  std::string text;
  for (int n = 1; std::getline(in, text) && n <= line + context; ++n) {
    if (n < line - context) continue;
    if (text.size() > 512) text.resize(512);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    out.push_back({n, text, n == line});
  }
  if (out.empty() || out.back().number < line) out.clear();  // the file is shorter: another version
  return out;
}

Expected<SourceOptions> MakeSourceOptions(const SourceFlags& flags) {
  SourceOptions so;
  for (const auto& root : flags.source_roots) so.map.AddRoot(root);
  for (const auto& rule : flags.source_maps) {
    if (auto r = so.map.AddRule(rule); !r.ok()) return r.error();
  }
  if (!flags.source_map_file.empty()) {
    if (auto r = so.map.AddFile(flags.source_map_file); !r.ok()) return r.error();
  }
  if (!flags.components_file.empty()) {
    if (auto r = so.components.AddFile(flags.components_file); !r.ok()) return r.error();
  }
  if (!flags.inventory_dir.empty()) {
    auto inv = PackageInventory::Load(flags.inventory_dir);
    if (!inv.ok()) return inv.error();
    so.inventory = std::move(*inv);
  }
  if (flags.check_fix.empty() != flags.repo.empty()) {
    return MakeError(ErrorKind::kMalformed, "--check-fix COMMIT and --repo DIR go together");
  }
  so.fix_commit = flags.check_fix;
  so.fix_repo = flags.repo;
  return so;
}

namespace {

// A module's package: the captured inventory's, else the one its package
// metadata note names (a container's module whose dpkg database is not at
// hand still says which package and version it is).
std::optional<Package> PackageOf(const Module& m, const SourceOptions& options) {
  if (options.inventory)
    if (auto p = options.inventory->For(m.path)) return p;
  if (m.package && !m.package->version.empty()) return Package{m.package->name, m.package->version, "package-note"};
  return std::nullopt;
}

}  // namespace

SourceReport BuildSourceReport(const Core& core, const Backtrace& crashing,
                               const SourceOptions& options) {
  SourceReport r;
  for (const auto& m : core.modules()) {
    if (auto p = PackageOf(m, options)) r.packages[m.path] = *p;
  }
  const Module* exe = core.executable();
  std::map<const MappedModule*, size_t> module_index;
  std::map<std::string, std::optional<std::string>> head_of;  // work tree -> HEAD
  for (const auto& f : crashing.frames) {
    if (!f.module) continue;
    const Module& m = *f.module->module;
    bool is_exe = &m == exe;
    Component component = options.components.Find(m.path, is_exe);
    auto [it, added] = module_index.emplace(f.module, r.modules.size());
    if (added) {
      ModuleVersion mv;
      mv.path = m.path;
      mv.build_id = m.build_id;
      mv.component = component.name;
      mv.repository = component.repository;
      if (f.module->image && f.lookup) {
        if (auto cu = f.module->image->CompileUnitAt(*f.lookup)) {
          mv.producer = cu->producer;
          mv.comp_dir = cu->comp_dir;
        }
      }
      mv.package = PackageOf(m, options);
      r.modules.push_back(std::move(mv));
    }
    if (f.file.empty()) continue;
    SourceFrame sf;
    sf.index = f.index;
    sf.function = f.function;
    sf.module = m.path;
    sf.component = component.name;
    sf.repository = component.repository;
    sf.file = f.file;
    sf.line = f.line;
    sf.inlined = f.inlined;
    sf.resolved = options.map.Resolve(f.file);
    if (sf.repository.empty() && !sf.resolved.repository.empty()) sf.repository = sf.resolved.repository;
    if (!sf.resolved.local.empty()) {
      sf.lines = ReadSourceLines(sf.resolved.local, f.line, options.context);
      ModuleVersion& mv = r.modules[it->second];
      if (mv.checkout.empty()) {
        if (auto top = GitTopLevel(sf.resolved.local)) {
          if (!head_of.count(*top)) head_of[*top] = GitHead(*top);
          if (head_of[*top]) {
            mv.checkout = *top;
            mv.commit = *head_of[*top];
          }
        }
      }
    }
    r.frames.push_back(std::move(sf));
  }
  // What is left to check out: the repositories of frames whose files were
  // not found, at the version the inventory or the DWARF says.
  std::set<std::string> seen;
  for (const auto& sf : r.frames) {
    if (!sf.resolved.local.empty()) continue;
    const ModuleVersion& mv = r.modules[module_index.at(crashing.frames[sf.index].module)];
    std::string repo = sf.repository.empty() ? "the sources of " + mv.path.substr(mv.path.rfind('/') + 1) : sf.repository;
    std::string version = mv.package ? fmt::format("{} {} ({})", mv.package->name, mv.package->version, mv.package->manager)
                          : !mv.build_id.empty() ? "build-id " + mv.build_id
                                                 : "an unknown version";
    std::string item = repo + " at " + version;
    if (seen.insert(item).second) r.to_check_out.push_back(item);
  }
  if (!options.fix_commit.empty()) {
    r.fix_commit = options.fix_commit;
    r.fix_repo = options.fix_repo;
    r.fix = CheckFix(options.fix_repo, options.fix_commit);
  }
  return r;
}

std::string FixStatusText(const SourceReport& r) {
  if (!r.fix) return "Not checked";
  switch (r.fix->status) {
    case FixStatus::kIncluded:
      return fmt::format("Fixed: {} is in the checked-out version of {} (HEAD {})", r.fix_commit, r.fix_repo,
                         r.fix->head.substr(0, 12));
    case FixStatus::kNotIncluded:
      return fmt::format("Not fixed in this version: {} is not an ancestor of HEAD {} in {}", r.fix_commit,
                         r.fix->head.substr(0, 12), r.fix_repo);
    case FixStatus::kUnknown: break;
  }
  return "Unknown: " + r.fix->detail;
}

std::string SourceReportToText(const SourceReport& r) {
  std::string out;
  out += "frames with debug info:\n";
  if (r.frames.empty()) out += "  (none: no module in the crash chain has line information)\n";
  for (const auto& f : r.frames) {
    out += fmt::format("#{:<3} {}{} — {}{}\n", f.index, f.function.empty() ? "??" : f.function,
                       f.inlined ? " [inlined]" : "", f.component, f.repository.empty() ? "" : " (" + f.repository + ")");
    out += fmt::format("      {}:{}\n", f.file, f.line);
    if (f.resolved.local.empty()) {
      out += "      (source not found under the source roots)\n";
      continue;
    }
    out += fmt::format("      found: {} (by {})\n", f.resolved.local, f.resolved.how);
    if (f.lines.empty()) out += "      (the file has no such line: another version?)\n";
    for (const auto& l : f.lines) out += fmt::format("   {} {:>5}  {}\n", l.current ? "=>" : "  ", l.number, l.text);
  }
  out += "\nmodules in the crash chain:\n";
  for (const auto& m : r.modules) {
    out += fmt::format("  {}\n", m.path);
    out += fmt::format("    component: {}{}\n", m.component, m.repository.empty() ? "" : " (" + m.repository + ")");
    out += fmt::format("    build-id: {}\n", m.build_id.empty() ? "(none)" : m.build_id);
    if (!m.producer.empty()) out += fmt::format("    producer: {}\n", m.producer);
    if (!m.comp_dir.empty()) out += fmt::format("    compiled in: {}\n", m.comp_dir);
    if (m.package) out += fmt::format("    package: {} {} ({})\n", m.package->name, m.package->version, m.package->manager);
    if (!m.commit.empty()) out += fmt::format("    checkout: {} at {}\n", m.checkout, m.commit);
  }
  if (!r.to_check_out.empty()) {
    out += "\nto read the rest, check out:\n";
    for (const auto& c : r.to_check_out) out += "  " + c + "\n";
  }
  if (r.fix) out += "\nupstream fix: " + FixStatusText(r) + "\n";
  return out;
}

nlohmann::ordered_json SourceReportToJson(const SourceReport& r) {
  using Json = nlohmann::ordered_json;
  auto str = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  Json frames = Json::array();
  for (const auto& f : r.frames) {
    Json lines = Json::array();
    for (const auto& l : f.lines) lines.push_back({{"line", l.number}, {"text", l.text}, {"current", l.current}});
    frames.push_back({{"index", f.index}, {"function", str(f.function)}, {"module", f.module},
                      {"component", f.component}, {"repository", str(f.repository)}, {"file", f.file},
                      {"line", f.line}, {"inlined", f.inlined}, {"local", str(f.resolved.local)},
                      {"found_by", str(f.resolved.how)}, {"path_in_repository", str(f.resolved.in_repository)},
                      {"source", lines}});
  }
  Json modules = Json::array();
  for (const auto& m : r.modules) {
    Json pkg = m.package ? Json{{"name", m.package->name}, {"version", m.package->version}, {"manager", m.package->manager}}
                         : Json(nullptr);
    modules.push_back({{"path", m.path}, {"build_id", str(m.build_id)}, {"component", m.component},
                       {"repository", str(m.repository)}, {"producer", str(m.producer)}, {"comp_dir", str(m.comp_dir)},
                       {"package", pkg}, {"checkout", str(m.checkout)}, {"commit", str(m.commit)}});
  }
  Json j{{"version", kSourcesJsonVersion}, {"frames", frames}, {"modules", modules}, {"to_check_out", r.to_check_out}};
  if (r.fix) {
    const char* status = r.fix->status == FixStatus::kIncluded      ? "included"
                         : r.fix->status == FixStatus::kNotIncluded ? "not-included"
                                                                    : "unknown";
    j["fix"] = {{"commit", r.fix_commit}, {"repository", r.fix_repo}, {"status", status}, {"head", str(r.fix->head)},
                {"detail", str(r.fix->detail)}};
  }
  return j;
}

}  // namespace coroner
