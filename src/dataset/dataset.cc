#include "dataset/dataset.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "core/byte_view.h"
#include "core/signals.h"
#include "dataset/timestamps.h"

namespace coroner {
namespace {

// Version 1. docs/dataset.md describes every column.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cores(
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  source TEXT NOT NULL,
  size INTEGER,
  mtime_ns INTEGER,
  bytes_read INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
  error TEXT,
  warnings TEXT,
  time TEXT,
  time_source TEXT,
  uptime INTEGER,
  pid INTEGER,
  comm TEXT,
  signal INTEGER,
  signal_name TEXT,
  si_code INTEGER,
  fault_address TEXT,
  real_signal INTEGER,
  real_si_code INTEGER,
  real_fault_address TEXT,
  syndrome TEXT,
  context TEXT,
  signature TEXT,
  crashing_tid INTEGER,
  exe TEXT,
  build_id TEXT,
  truncated INTEGER NOT NULL,
  cpu_time REAL,
  analysis_ms REAL,
  scanned_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS cores_signature ON cores(signature);
CREATE INDEX IF NOT EXISTS cores_time ON cores(time);
CREATE TABLE IF NOT EXISTS attributes(
  core INTEGER NOT NULL REFERENCES cores(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT,
  PRIMARY KEY (core, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS attributes_key ON attributes(key, value);
CREATE TABLE IF NOT EXISTS threads(
  core INTEGER NOT NULL REFERENCES cores(id) ON DELETE CASCADE,
  thread INTEGER NOT NULL,
  tid INTEGER,
  crashing INTEGER NOT NULL,
  pc TEXT,
  sp TEXT,
  cpu_time REAL,
  registers TEXT,
  PRIMARY KEY (core, thread)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS frames(
  core INTEGER NOT NULL REFERENCES cores(id) ON DELETE CASCADE,
  thread INTEGER NOT NULL,
  "index" INTEGER NOT NULL,
  pc TEXT NOT NULL,
  module TEXT,
  build_id TEXT,
  offset TEXT,
  function TEXT,
  file TEXT,
  line INTEGER,
  trust TEXT NOT NULL,
  inlined INTEGER NOT NULL,
  PRIMARY KEY (core, thread, "index")) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS frames_function ON frames(function);
CREATE TABLE IF NOT EXISTS modules(
  core INTEGER NOT NULL REFERENCES cores(id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  base TEXT NOT NULL,
  size INTEGER,
  build_id TEXT,
  status TEXT);
CREATE INDEX IF NOT EXISTS modules_core ON modules(core);
)sql";

Error SqlError(sqlite3* db, const std::string& what) {
  return MakeError(ErrorKind::kIo, what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

// A prepared statement, finalized on destruction.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK && stmt_; }
  sqlite3_stmt* get() { return stmt_; }

  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    next_ = 1;
  }
  Statement& Bind(const std::string& s) {
    sqlite3_bind_text(stmt_, next_++, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& BindOrNull(const std::string& s) {
    if (s.empty()) return Null();
    return Bind(s);
  }
  Statement& Bind(int64_t v) {
    sqlite3_bind_int64(stmt_, next_++, v);
    return *this;
  }
  Statement& Bind(double v) {
    sqlite3_bind_double(stmt_, next_++, v);
    return *this;
  }
  Statement& Null() {
    sqlite3_bind_null(stmt_, next_++);
    return *this;
  }
  template <typename T>
  Statement& Bind(const std::optional<T>& v) {
    if (!v) return Null();
    if constexpr (std::is_floating_point_v<T>) return Bind(static_cast<double>(*v));
    else return Bind(static_cast<int64_t>(*v));
  }
  Expected<bool> Step() {
    int rc = sqlite3_step(stmt_);
    Reset();
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqlError(db_, "write failed");
    return true;
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
  int next_ = 1;
};

std::string HexOrEmpty(const std::optional<uint64_t>& v) { return v ? Hex(*v) : std::string(); }

std::string JoinLines(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += '\n';
    out += s;
  }
  return out;
}

}  // namespace

Dataset::Dataset(Dataset&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
Dataset& Dataset::operator=(Dataset&& other) noexcept {
  std::swap(db_, other.db_);
  return *this;
}
Dataset::~Dataset() {
  if (db_) sqlite3_close_v2(db_);
}

Expected<bool> Dataset::Exec(const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return MakeError(ErrorKind::kIo, m);
  }
  return true;
}

Expected<bool> Dataset::CheckSchema(bool create) {
  // A file that is not SQLite fails here, on the first read.
  auto r = Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (!r.ok()) return r.error();
  if (r->rows.empty()) {
    auto any = Query("SELECT count(*) FROM sqlite_master");
    if (!any.ok()) return any.error();
    if (!create || any->rows[0][0].integer != 0) {
      return MakeError(ErrorKind::kUnsupported, "not a coroner dataset (no meta table)");
    }
    if (auto e = Exec(std::string("BEGIN;") + kSchema + "INSERT INTO meta VALUES ('schema_version', '" +
                      std::to_string(kDatasetSchemaVersion) + "'); COMMIT;");
        !e.ok()) {
      return e.error();
    }
    return true;
  }
  auto v = Query("SELECT value FROM meta WHERE key = 'schema_version'");
  if (!v.ok()) return v.error();
  std::string version = v->rows.empty() ? "none" : v->rows[0][0].text;
  if (version != std::to_string(kDatasetSchemaVersion)) {
    return MakeError(ErrorKind::kUnsupported, "dataset schema version " + version + ", this coroner reads version " +
                                                  std::to_string(kDatasetSchemaVersion));
  }
  return true;
}

Expected<Dataset> Dataset::OpenWith(const std::string& path, int flags, bool create) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    Error e = SqlError(db, path);
    sqlite3_close_v2(db);
    return e;
  }
  Dataset ds(db);
  sqlite3_busy_timeout(db, 10000);
  if (!(flags & SQLITE_OPEN_READONLY)) {
    auto r = ds.Exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
    if (!r.ok()) return MakeError(ErrorKind::kUnsupported, path + ": " + r.error().message);
  }
  if (auto r = ds.CheckSchema(create); !r.ok()) return MakeError(r.error().kind, path + ": " + r.error().message);
  return ds;
}

Expected<Dataset> Dataset::Open(const std::string& path, bool create) {
  return OpenWith(path, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), create);
}

Expected<Dataset> Dataset::OpenReadOnly(const std::string& path) { return OpenWith(path, SQLITE_OPEN_READONLY, false); }

std::map<std::string, KnownInput> Dataset::KnownInputs() {
  std::map<std::string, KnownInput> out;
  Statement s(db_, "SELECT path, size, mtime_ns FROM cores");
  if (!s.ok()) return out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) {
    KnownInput k;
    if (sqlite3_column_type(s.get(), 1) != SQLITE_NULL) k.size = static_cast<uint64_t>(sqlite3_column_int64(s.get(), 1));
    if (sqlite3_column_type(s.get(), 2) != SQLITE_NULL) k.mtime_ns = sqlite3_column_int64(s.get(), 2);
    out[reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0))] = k;
  }
  return out;
}

Expected<bool> Dataset::Write(const std::vector<CoreRecord>& records) {
  if (records.empty()) return true;
  if (auto r = Exec("BEGIN IMMEDIATE"); !r.ok()) return r.error();
  auto fail = [this](const Error& e) -> Expected<bool> {
    Exec("ROLLBACK");
    return e;
  };
  Statement del(db_, "DELETE FROM cores WHERE path = ?");
  Statement core(db_,
                 "INSERT INTO cores(path, source, size, mtime_ns, bytes_read, status, error, warnings, time, "
                 "time_source, uptime, pid, comm, signal, signal_name, si_code, fault_address, real_signal, real_si_code, "
                 "real_fault_address, syndrome, context, "
                 "signature, crashing_tid, exe, build_id, truncated, cpu_time, analysis_ms, scanned_at) VALUES "
                 "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Statement attr(db_, "INSERT OR REPLACE INTO attributes(core, key, value) VALUES (?,?,?)");
  Statement thread(db_,
                   "INSERT OR REPLACE INTO threads(core, thread, tid, crashing, pc, sp, cpu_time, registers) VALUES "
                   "(?,?,?,?,?,?,?,?)");
  Statement frame(db_,
                  "INSERT OR REPLACE INTO frames(core, thread, \"index\", pc, module, build_id, offset, function, "
                  "file, line, trust, inlined) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  Statement module(db_, "INSERT INTO modules(core, path, base, size, build_id, status) VALUES (?,?,?,?,?,?)");
  for (Statement* s : {&del, &core, &attr, &thread, &frame, &module}) {
    if (!s->ok()) return fail(SqlError(db_, "prepare"));
  }
  std::string now = FormatIso8601(std::chrono::duration_cast<std::chrono::seconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
  for (const auto& r : records) {
    if (auto e = del.Bind(r.path).Step(); !e.ok()) return fail(e.error());
    core.Bind(r.path).Bind(r.source).Bind(r.size).Bind(r.mtime_ns).Bind(static_cast<int64_t>(r.bytes_read));
    core.Bind(r.status).BindOrNull(r.error).BindOrNull(JoinLines(r.warnings));
    core.BindOrNull(r.time ? FormatIso8601(*r.time) : std::string()).BindOrNull(r.time_source).Bind(r.uptime);
    core.Bind(r.pid).BindOrNull(r.comm).Bind(r.signal).BindOrNull(r.signal ? SignalName(*r.signal) : std::string());
    core.Bind(r.si_code).BindOrNull(HexOrEmpty(r.fault_address));
    core.Bind(r.real_signal).Bind(r.real_si_code).BindOrNull(HexOrEmpty(r.real_fault_address));
    core.BindOrNull(r.syndrome).BindOrNull(r.context);
    core.BindOrNull(r.signature).Bind(r.crashing_tid).BindOrNull(r.exe).BindOrNull(r.build_id);
    core.Bind(static_cast<int64_t>(r.truncated)).Bind(r.cpu_seconds).Bind(r.analysis_ms).Bind(now);
    if (auto e = core.Step(); !e.ok()) return fail(e.error());
    int64_t id = sqlite3_last_insert_rowid(db_);
    for (const auto& [k, v] : r.attributes) {
      if (auto e = attr.Bind(id).Bind(k).Bind(v).Step(); !e.ok()) return fail(e.error());
    }
    for (const auto& t : r.threads) {
      thread.Bind(id).Bind(int64_t{t.index}).Bind(int64_t{t.tid}).Bind(int64_t{t.crashing});
      thread.Bind(Hex(t.pc)).Bind(Hex(t.sp)).Bind(t.cpu_seconds).Bind(t.registers);
      if (auto e = thread.Step(); !e.ok()) return fail(e.error());
    }
    for (const auto& f : r.frames) {
      frame.Bind(id).Bind(int64_t{f.thread}).Bind(int64_t{f.index}).Bind(Hex(f.pc)).BindOrNull(f.module);
      frame.BindOrNull(f.build_id).BindOrNull(HexOrEmpty(f.offset)).BindOrNull(f.function).BindOrNull(f.file);
      if (f.line > 0) frame.Bind(int64_t{f.line});
      else frame.Null();
      frame.Bind(f.trust).Bind(int64_t{f.inlined});
      if (auto e = frame.Step(); !e.ok()) return fail(e.error());
    }
    for (const auto& m : r.modules) {
      module.Bind(id).Bind(m.path).Bind(Hex(m.base)).Bind(static_cast<int64_t>(m.end - m.base));
      module.BindOrNull(m.build_id).BindOrNull(m.status);
      if (auto e = module.Step(); !e.ok()) return fail(e.error());
    }
  }
  if (auto r = Exec("COMMIT"); !r.ok()) return fail(r.error());
  return true;
}

std::string_view QueryRow::Text(int i) const {
  const unsigned char* t = sqlite3_column_text(stmt_, i);
  if (!t) return {};
  return {reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(stmt_, i))};
}

QueryValue QueryRow::Value(int i) const {
  QueryValue v;
  switch (sqlite3_column_type(stmt_, i)) {
    case SQLITE_INTEGER:
      v.type = QueryValue::Type::kInteger;
      v.integer = Integer(i);
      break;
    case SQLITE_FLOAT:
      v.type = QueryValue::Type::kReal;
      v.real = Real(i);
      break;
    case SQLITE_NULL: break;
    default:
      v.type = QueryValue::Type::kText;
      v.text = std::string(Text(i));
  }
  return v;
}

Expected<size_t> Dataset::ForEachRow(const std::string& sql, const std::function<bool(const QueryRow&)>& row,
                                     std::vector<std::string>* columns) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) return SqlError(db_, "query");
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(stmt, sqlite3_finalize);
  if (!stmt) return MakeError(ErrorKind::kMalformed, "query: empty statement");
  if (columns)
    for (int i = 0; i < sqlite3_column_count(stmt); ++i) columns->push_back(sqlite3_column_name(stmt, i));
  size_t seen = 0;
  for (;;) {
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return SqlError(db_, "query");
    ++seen;
    if (!row(QueryRow(stmt))) break;
  }
  return seen;
}

Expected<QueryResult> Dataset::Query(const std::string& sql) {
  QueryResult out;
  auto seen = ForEachRow(
      sql,
      [&](const QueryRow& r) {
        std::vector<QueryValue> values(static_cast<size_t>(r.size()));
    for (int i = 0; i < r.size(); ++i) values[static_cast<size_t>(i)] = r.Value(i);
        out.rows.push_back(std::move(values));
        return true;
      },
      &out.columns);
  if (!seen.ok()) return seen.error();
  return out;
}

namespace {

std::string ValueText(const QueryValue& v) {
  switch (v.type) {
    case QueryValue::Type::kNull: return "NULL";
    case QueryValue::Type::kInteger: return std::to_string(v.integer);
    case QueryValue::Type::kReal: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.6g", v.real);
      return buf;
    }
    case QueryValue::Type::kText: return v.text;
  }
  return "";
}

}  // namespace

std::string QueryResultToTable(const QueryResult& result, size_t width) {
  std::vector<size_t> widths;
  for (const auto& c : result.columns) widths.push_back(std::min(c.size(), width));
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : result.rows) {
    std::vector<std::string> line;
    for (size_t i = 0; i < row.size(); ++i) {
      std::string t = ValueText(row[i]);
      for (char& ch : t) {
        if (ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
      }
      if (t.size() > width) t = t.substr(0, width - 1) + "~";
      widths[i] = std::max(widths[i], t.size());
      line.push_back(std::move(t));
    }
    cells.push_back(std::move(line));
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& line, const std::vector<QueryValue>* values) {
    for (size_t i = 0; i < line.size(); ++i) {
      bool number = values && ((*values)[i].type == QueryValue::Type::kInteger || (*values)[i].type == QueryValue::Type::kReal);
      std::string pad(widths[i] - std::min(widths[i], line[i].size()), ' ');
      if (i) out += "  ";
      out += number ? pad + line[i] : line[i] + (i + 1 < line.size() ? pad : "");
    }
    out += '\n';
  };
  std::vector<std::string> header;
  for (const auto& c : result.columns) header.push_back(c.substr(0, width));
  emit(header, nullptr);
  std::vector<std::string> rule;
  for (size_t w : widths) rule.push_back(std::string(w, '-'));
  emit(rule, nullptr);
  for (size_t r = 0; r < cells.size(); ++r) emit(cells[r], &result.rows[r]);
  out += "(" + std::to_string(result.rows.size()) + (result.rows.size() == 1 ? " row)\n" : " rows)\n");
  return out;
}

std::string QueryResultToJson(const QueryResult& result) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : result.rows) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (size_t i = 0; i < row.size(); ++i) {
      const QueryValue& v = row[i];
      switch (v.type) {
        case QueryValue::Type::kNull: o[result.columns[i]] = nullptr; break;
        case QueryValue::Type::kInteger: o[result.columns[i]] = v.integer; break;
        case QueryValue::Type::kReal: o[result.columns[i]] = v.real; break;
        case QueryValue::Type::kText: o[result.columns[i]] = v.text; break;
      }
    }
    rows.push_back(std::move(o));
  }
  return rows.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace coroner
