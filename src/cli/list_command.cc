#include "cli/list_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "core/signals.h"
#include "dataset/dataset.h"
#include "dataset/journal_metadata.h"
#include "dataset/timestamps.h"

namespace coroner {
namespace {

QueryValue Text(std::string s) {
  QueryValue v;
  v.type = s.empty() ? QueryValue::Type::kNull : QueryValue::Type::kText;
  v.text = std::move(s);
  return v;
}

QueryValue Integer(const std::string* s) {
  if (!s || s->empty() || s->size() > 18 || !std::all_of(s->begin(), s->end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return Text(s ? *s : std::string());
  QueryValue v;
  v.type = QueryValue::Type::kInteger;
  v.integer = std::stoll(*s);
  return v;
}

// A signal as coredumpctl shows it: SIGSEGV, or the number it does not know.
QueryValue Signal(std::optional<int64_t> signo) {
  if (!signo) return Text("");
  return Text(SignalName(static_cast<int>(*signo)));
}

const std::vector<std::string> kColumns = {"time", "host", "pid", "uid", "signal", "exe", "version", "core", "signature"};

// The crashes of a dataset: every row, its time, host, process, signal,
// executable, package version, how much of it was read and its signature.
Expected<QueryResult> FromDataset(const std::string& db, size_t limit) {
  auto ds = Dataset::OpenReadOnly(db);
  if (!ds.ok()) return ds.error();
  auto attribute = [](const char* key) {
    return std::string("(SELECT value FROM attributes WHERE core = c.id AND key = '") + key + "')";
  };
  std::string sql = "SELECT c.time, " + attribute("host") + ", c.pid, " + attribute("uid") + ", c.signal, c.exe, " +
                    attribute("package_version") + ", c.status, c.signature, c.source FROM cores c " +
                    "ORDER BY c.time IS NULL, c.time DESC, c.id DESC" + (limit ? " LIMIT " + std::to_string(limit) : "");
  auto q = ds->Query(sql);
  if (!q.ok()) return q.error();
  QueryResult out;
  out.columns = kColumns;
  for (auto& row : q->rows) {
    // `core`: the analysis a row holds (ok, partial, error), or a log line's.
    std::string core = row[9].text == "log" ? "log line" : row[7].text;
    out.rows.push_back({row[0], row[1], row[2], row[3],
                        Signal(row[4].type == QueryValue::Type::kInteger ? std::optional<int64_t>(row[4].integer)
                                                                          : std::nullopt),
                        row[5], row[6], Text(core), row[8]});
  }
  return out;
}

// The journal's crashes, without a dataset: what each entry says, and
// where its core is, in coredumpctl's words: present, truncated (present,
// cut short), journal (stored in the entry), missing, none.
Expected<QueryResult> FromJournal(const JournalSelection& selection, size_t limit, std::vector<std::string>& problems) {
  auto read = ReadCoredumpEntries(selection);
  if (!read.ok()) return read.error();
  problems = read->problems;
  QueryResult out;
  out.columns.assign(kColumns.begin(), kColumns.end() - 1);  // no signature without an analysis
  for (auto e = read->entries.rbegin(); e != read->entries.rend(); ++e) {
    if (limit && out.rows.size() >= limit) break;
    Metadata md = JournalMetadata(*e);
    const std::string* file = e->Get("COREDUMP_FILENAME");
    struct stat st {};
    const std::string* truncated = md.Get("truncated");
    std::string core = e->core_stored                                               ? "journal"
                       : file && !file->empty() && ::stat(file->c_str(), &st) == 0 ? (truncated && *truncated == "1" ? "truncated" : "present")
                       : file && !file->empty()                                     ? "missing"
                                                                                    : "none";
    const std::string* signal = md.Get("signal");
    QueryValue signo = Integer(signal);
    out.rows.push_back({Text(md.time ? FormatIso8601(*md.time) : std::string()), Text(md.Get("host") ? *md.Get("host") : ""),
                        Integer(md.Get("pid")), Integer(md.Get("uid")),
                        signo.type == QueryValue::Type::kInteger ? Signal(signo.integer) : signo,
                        Text(md.Get("exe") ? *md.Get("exe") : ""),
                        Text(md.Get("package_version") ? *md.Get("package_version") : ""), Text(core)});
  }
  return out;
}

// This machine's boot id, as the journal spells it (no dashes).
std::string ThisBoot() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  std::erase(id, '-');
  return id;
}

}  // namespace

bool MakeJournalSelection(const JournalFlags& flags, JournalSelection& out) {
  out.paths = flags.paths;
  std::erase(out.paths, std::string());
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  for (const auto& [text, bound] : {std::pair{&flags.since, &out.since_us}, std::pair{&flags.until, &out.until_us}}) {
    if (text->empty()) continue;
    auto t = ParseTimeArgument(*text, now);
    if (!t) {
      std::fprintf(stderr, "coroner: not a time: %s (2026-12-07, \"2026-12-07 10:00\", -2h, yesterday, @SECONDS)\n",
                   text->substr(0, 64).c_str());
      return false;
    }
    *bound = *t * 1000000;
  }
  if (flags.boot) {
    std::string id = flags.boot->empty() ? ThisBoot() : *flags.boot;
    std::erase(id, '-');
    std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
    if (id.size() != 32 || !std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isxdigit(c); })) {
      std::fprintf(stderr, "coroner: --boot wants a boot id (32 hex digits), not %s\n", flags.boot->substr(0, 64).c_str());
      return false;
    }
    out.boot_id = id;
  }
  return true;
}

int RunListCommand(const ListCommandOptions& options) {
  std::vector<std::string> problems;
  auto result = options.journal ? FromJournal(*options.journal, options.limit, problems) : FromDataset(options.db, options.limit);
  if (!result.ok()) {
    std::fprintf(stderr, "coroner: %s\n", result.error().message.c_str());
    return 1;
  }
  for (const auto& p : problems) std::fprintf(stderr, "coroner: journal: %s\n", p.c_str());
  std::string out = options.json ? QueryResultToJson(*result) : QueryResultToTable(*result);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace coroner
