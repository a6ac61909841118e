#include "epi/rules.h"

#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "processor/process_identity.h"

namespace coroner {

Expected<Rules> ParseRules(const std::string& text) {
  toml::table table;
  try {
    table = toml::parse(text);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << "rules: line " << e.source().begin.line << ": " << e.description();
    return MakeError(ErrorKind::kMalformed, msg.str());
  }
  Rules rules;
  for (auto&& [key, node] : table) {
    std::string section(key.str());
    if (section == "environment") {
      // [environment] allow = ["POD_NAME", "MY_JOB_*"]: identity variables
      // analyze and scan keep besides the built-in ones.
      // host = ["NODE_NAME"]: variables whose value is the process's host.
      const toml::table* t = node.as_table();
      if (!t) return MakeError(ErrorKind::kMalformed, "rules: [environment] must be a table");
      for (auto&& [k, v] : *t) {
        std::string name(k.str());
        const toml::array* a = v.as_array();
        if (name != "allow" && name != "host")
          return MakeError(ErrorKind::kMalformed, "rules: [environment] has two lists, allow and host, not " + name);
        if (!a) return MakeError(ErrorKind::kMalformed, "rules: [environment] " + name + " is a list of names");
        for (const auto& item : *a) {
          auto entry = item.value<std::string>();
          if (name == "allow") {
            if (!entry || entry->empty() || *entry == "*")
              return MakeError(ErrorKind::kMalformed, "rules: [environment] allow holds names or prefixes like \"POD_*\"");
            rules.environment_allow.push_back(*entry);
          } else {
            if (!entry || entry->empty() || entry->find('*') != std::string::npos || LooksSecret(*entry))
              return MakeError(ErrorKind::kMalformed, "rules: [environment] host holds variable names like \"NODE_NAME\"");
            rules.environment_host.push_back(*entry);
          }
        }
      }
      continue;
    }
    if (section == "signature") {
      const toml::table* t = node.as_table();
      if (!t) return MakeError(ErrorKind::kMalformed, "rules: [signature] must be a table");
      for (auto&& [k, v] : *t) {
        std::string name(k.str());
        auto* list = name == "skip" ? &rules.skip : name == "skip_prefixes" ? &rules.skip_prefixes : nullptr;
        const toml::array* a = v.as_array();
        if (!list || !a) return MakeError(ErrorKind::kMalformed, "rules: [signature] has skip and skip_prefixes lists");
        for (const auto& item : *a) {
          auto entry = item.value<std::string>();
          if (!entry || entry->empty())
            return MakeError(ErrorKind::kMalformed, "rules: [signature] " + name + " holds names");
          list->push_back(*entry);
        }
      }
      continue;
    }
    Rule::Kind kind;
    if (section == "exclude") kind = Rule::Kind::kExclude;
    else if (section == "label") kind = Rule::Kind::kLabel;
    else return MakeError(ErrorKind::kMalformed, "rules: unknown section " + section + " (want [[exclude]], [[label]], [signature], [environment])");
    const toml::array* list = node.as_array();
    if (!list) return MakeError(ErrorKind::kMalformed, "rules: " + section + " must be [[" + section + "]] tables");
    for (const auto& item : *list) {
      const toml::table* t = item.as_table();
      if (!t) return MakeError(ErrorKind::kMalformed, "rules: " + section + " must be [[" + section + "]] tables");
      Rule rule;
      rule.kind = kind;
      auto name = (*t)["name"].value<std::string>();
      auto where = (*t)["where"].value<std::string>();
      if (!name || name->empty() || !where || where->empty())
        return MakeError(ErrorKind::kMalformed, "rules: every [[" + section + "]] needs a name and a where");
      for (auto&& [k, v] : *t)
        if (k.str() != "name" && k.str() != "where")
          return MakeError(ErrorKind::kMalformed, "rules: " + *name + ": unknown key " + std::string(k.str()));
      rule.name = *name;
      rule.where = *where;
      rules.rules.push_back(std::move(rule));
    }
  }
  return rules;
}

Expected<Rules> LoadRules(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorKind::kIo, "rules: cannot open " + path);
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > (1u << 20)) return MakeError(ErrorKind::kMalformed, "rules: " + path + " is over 1 MiB");
  }
  return ParseRules(text);
}

}  // namespace coroner
