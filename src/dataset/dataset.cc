#include "dataset/dataset.h"

#include <algorithm>
#include <cstring>
#include <chrono>
#include <string>
#include <thread>
#include <nlohmann/json.hpp>

#include "core/byte_view.h"
#include "core/signals.h"
#include "dataset/record_columns.h"
#include "dataset/timestamps.h"
#include "text/text.h"

namespace coroner {
namespace {

// Visits the columns of a table's rows, without a row at hand.
template <typename Row, typename F>
void EachColumn(F&& f) {
  static const Row row{};
  if constexpr (std::is_same_v<Row, CoreRecord>) CoreColumns(row, f);
  else RowColumns(row, f);
}

// A column's name as SQL takes it: quoted where it is a keyword ("index").
std::string SqlName(const char* name) {
  std::string n(name);
  return sqlite3_keyword_check(n.data(), static_cast<int>(n.size())) ? "\"" + n + "\"" : n;
}

// The first word of a column's definition: its name.
std::string ColumnName(const char* definition) { return std::string(definition, std::strcspn(definition, " ")); }

// Version 1. The tables are generated from the rows' one definition
// (dataset/record_columns.h); docs/dataset.md describes every column.
template <typename Row>
std::string TableSql(const TableShape& t) {
  std::string sql = std::string("CREATE TABLE IF NOT EXISTS ") + t.name + "(\n  " + t.leading;
  EachColumn<Row>([&](const Column& c, const auto&) { sql += ",\n  " + SqlName(c.name) + " " + c.sql; });
  if (t.trailing) sql += std::string(",\n  ") + t.trailing;
  return sql + (*t.options ? t.options : ")") + ";\n";
}

// cores_with_attributes: one row per core, its columns and one column per
// common attribute (NULL where the core has none), so that a newcomer's
// `SELECT host, count(*) FROM cores_with_attributes GROUP BY host` works.
// Attributes named as a column of cores (pid, comm, exe, signal) are the
// columns'.
constexpr const char* kViewKeys[] = {
    "host", "host_source", "machine", "release", "version", "build", "image", "commit", "package", "package_version",
    "kernel", "os", "driver", "firmware", "launcher", "job_id", "job_step", "job_restart", "rank", "world_size",
    "local_rank", "job_node", "gpus", "unit", "user_unit", "slice", "container", "container_runtime", "pod",
    "boot_id", "machine_id", "uid", "owner_uid"};
std::string ViewSql() {
  std::string sql = "CREATE VIEW IF NOT EXISTS cores_with_attributes AS SELECT c.*";
  for (const char* key : kViewKeys)
    sql += std::string(", (SELECT value FROM attributes WHERE core = c.id AND key = '") + key + "') AS " + SqlName(key);
  return sql + " FROM cores c;\n";
}

std::string SchemaSql() {
  return "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n" +
         TableSql<CoreRecord>(kCoresTable) + TableSql<AttributeRow>(kAttributesTable) +
         TableSql<ThreadRow>(kThreadsTable) + TableSql<FrameRow>(kFramesTable) + TableSql<ModuleRow>(kModulesTable) +
         ViewSql();
}

// The secondary indexes, apart from the tables. A bulk load drops the ones
// whose keys arrive in no order and builds them again at its end
// (Dataset::SuspendIndexes); modules_core stays, as a bulk load appends
// its rows in the order of their cores and the index only grows at its end
// (rebuilding it was a sixth of the rebuild: bench/measurements.md).
struct Index {
  const char* name;
  const char* create;
  bool suspended;  // during a bulk load
};
constexpr Index kIndexes[] = {
    {"cores_signature", "CREATE INDEX IF NOT EXISTS cores_signature ON cores(signature)", true},
    {"cores_time", "CREATE INDEX IF NOT EXISTS cores_time ON cores(time)", true},
    {"attributes_key", "CREATE INDEX IF NOT EXISTS attributes_key ON attributes(key, value)", true},
    {"frames_function", "CREATE INDEX IF NOT EXISTS frames_function ON frames(function)", true},
    {"modules_core", "CREATE INDEX IF NOT EXISTS modules_core ON modules(core)", false},
};

// A writable connection's temporary storage and page cache (OpenWith says why).
constexpr const char* kWriterSettings = "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536;";

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

  // Every parameter is bound again before the next step, so the bindings
  // need no clearing.
  void Reset() {
    sqlite3_reset(stmt_);
    next_ = 1;
  }
  Statement& Bind(const std::string& s) {
    // SQLITE_STATIC: the caller keeps the string alive until Step(), which
    // saves SQLite a copy of every value.
    sqlite3_bind_text(stmt_, next_++, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& Bind(int64_t v) {
    sqlite3_bind_int64(stmt_, next_++, v);
    return *this;
  }
  Status Step() {
    // A parameter left unbound would keep the last value, whose string may
    // be gone (SQLITE_STATIC).
    if (next_ - 1 != sqlite3_bind_parameter_count(stmt_)) {
      Reset();
      return MakeError(ErrorKind::kIo, "write failed: a parameter was not bound");
    }
    int rc = sqlite3_step(stmt_);
    Reset();
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqlError(db_, "write failed");
    return Ok{};
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
  int next_ = 1;
};

// Rows of one table gathered over a Write's records, then inserted up to
// kRowsPerInsert at a time by one multi-row INSERT: a statement's fixed
// cost (starting, halting, resetting) is about that of a row, and a core
// has a dozen frame and module rows. Text is copied into an arena, so the
// values outlive the records' temporaries.
class RowBuffer {
 public:
  static constexpr size_t kRowsPerInsert = 32;

  // `head`: "INSERT INTO t(a, b)"; the VALUES clause is added here.
  RowBuffer(sqlite3* db, std::string head, int columns) : db_(db), head_(std::move(head)), columns_(columns) {}

  RowBuffer& Int(int64_t v) {
    values_.push_back({Value::kInt, v, 0, 0, 0});
    return *this;
  }
  RowBuffer& Real(double v) {
    values_.push_back({Value::kReal, 0, v, 0, 0});
    return *this;
  }
  RowBuffer& Null() {
    values_.push_back({Value::kNull, 0, 0, 0, 0});
    return *this;
  }
  RowBuffer& Text(std::string_view s) {
    values_.push_back({Value::kText, 0, 0, arena_.size(), s.size()});
    arena_.append(s);
    return *this;
  }
  RowBuffer& TextOrNull(std::string_view s) { return s.empty() ? Null() : Text(s); }
  template <typename T>
  RowBuffer& Opt(const std::optional<T>& v) {
    if (!v) return Null();
    if constexpr (std::is_floating_point_v<T>) return Real(static_cast<double>(*v));
    else return Int(static_cast<int64_t>(*v));
  }

  Status Flush() {
    size_t rows = values_.size() / static_cast<size_t>(columns_);
    size_t at = 0;
    for (size_t done = 0; done < rows;) {
      size_t n = std::min(kRowsPerInsert, rows - done);
      sqlite3_stmt* stmt = Prepared(n);
      if (!stmt) return SqlError(db_, "prepare");
      int param = 1;
      for (size_t i = 0; i < n * static_cast<size_t>(columns_); ++i, ++at) {
        const Value& v = values_[at];
        switch (v.type) {
          case Value::kInt: sqlite3_bind_int64(stmt, param++, v.integer); break;
          case Value::kReal: sqlite3_bind_double(stmt, param++, v.real); break;
          case Value::kNull: sqlite3_bind_null(stmt, param++); break;
          case Value::kText:
            sqlite3_bind_text(stmt, param++, arena_.data() + v.offset, static_cast<int>(v.length), SQLITE_STATIC);
            break;
        }
      }
      int rc = sqlite3_step(stmt);
      sqlite3_reset(stmt);
      if (rc != SQLITE_DONE) return SqlError(db_, "write failed");
      done += n;
    }
    Clear();
    return Ok{};
  }

  void Clear() {
    values_.clear();
    arena_.clear();
  }

 private:
  struct Value {
    enum Type { kInt, kReal, kNull, kText } type;
    int64_t integer;
    double real;
    size_t offset, length;  // in arena_
  };

  // The INSERT for n rows, prepared on first use.
  sqlite3_stmt* Prepared(size_t n) {
    auto& slot = statements_[n];
    if (!slot) {
      std::string row = "(";
      for (int c = 0; c < columns_; ++c) row += c ? ",?" : "?";
      row += ")";
      std::string sql = head_ + " VALUES ";
      for (size_t i = 0; i < n; ++i) sql += (i ? "," : "") + row;
      slot = std::make_unique<Statement>(db_, sql.c_str());
    }
    return slot->ok() ? slot->get() : nullptr;
  }

  sqlite3* db_;
  std::string head_;
  int columns_;
  std::vector<Value> values_;
  std::string arena_;
  std::map<size_t, std::unique_ptr<Statement>> statements_;
};

std::string JoinLines(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += '\n';
    out += s;
  }
  return out;
}

// A field as its column holds it (ColumnForm).
template <typename T>
void Put(RowBuffer& b, ColumnForm form, const T& v) {
  using enum ColumnForm;
  if constexpr (requires { v.has_value(); }) {
    if (v) Put(b, form, *v);
    else b.Null();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (form == kOrNull) b.TextOrNull(v);
    else b.Text(v);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    b.TextOrNull(JoinLines(v));
  } else if constexpr (std::is_same_v<T, RowStatus>) {
    b.Text(RowStatusName(v));
  } else if constexpr (std::is_same_v<T, StoredWord>) {
    b.Text(v.hidden ? std::string(kHiddenEnvironment) : Hex(v.value));
  } else if constexpr (std::is_floating_point_v<T>) {
    b.Real(v);
  } else if (form == kHex) {
    b.Text(Hex(static_cast<uint64_t>(v)));
  } else if (form == kIso8601) {
    b.TextOrNull(FormatIso8601(static_cast<int64_t>(v)));
  } else if (form == kSignalName) {
    b.TextOrNull(SignalName(static_cast<int>(v)));
  } else if (form == kOrNull && v == 0) {
    b.Null();
  } else {
    b.Int(static_cast<int64_t>(v));
  }
}

// A child table's rows, each after its core's id.
template <typename Row>
void AddRows(RowBuffer& b, int64_t core, const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    b.Int(core);
    RowColumns(row, [&](const Column& c, const auto& v) { Put(b, c.form, v); });
  }
}

// The multi-row insert into a table: its leading key, the row's fields,
// the column the writer fills.
template <typename Row>
RowBuffer InsertInto(sqlite3* db, const char* verb, const TableShape& t) {
  std::string head = std::string(verb) + " INTO " + t.name + "(" + ColumnName(t.leading);
  int columns = 1;
  EachColumn<Row>([&](const Column& c, const auto&) {
    head += ", " + SqlName(c.name);
    ++columns;
  });
  if (t.trailing) {
    head += ", " + ColumnName(t.trailing);
    ++columns;
  }
  return RowBuffer(db, head + ")", columns);
}

}  // namespace

Dataset::Dataset(sqlite3* db) : db_(db) {}
Dataset::Dataset(Dataset&& other) noexcept : db_(other.db_), writer_(std::move(other.writer_)) { other.db_ = nullptr; }
Dataset& Dataset::operator=(Dataset&& other) noexcept {
  std::swap(db_, other.db_);
  std::swap(writer_, other.writer_);
  return *this;
}
Dataset::~Dataset() {
  writer_.reset();  // its statements first
  if (db_) sqlite3_close_v2(db_);
}

Status Dataset::Exec(const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return MakeError(ErrorKind::kIo, m);
  }
  return Ok{};
}

Status Dataset::CheckSchema(bool create, bool writable) {
  // A file that is not SQLite fails here, on the first read.
  auto r = Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (!r.ok()) return r.error();
  if (r->rows.empty()) {
    auto any = Query("SELECT count(*) FROM sqlite_master");
    if (!any.ok()) return any.error();
    if (!create || any->rows[0][0].integer != 0) {
      return MakeError(ErrorKind::kUnsupported, "not a coroner dataset (no meta table)");
    }
    if (auto e = Exec("BEGIN;" + SchemaSql() + "INSERT INTO meta VALUES ('schema_version', '" +
                      std::to_string(kDatasetSchemaVersion) + "'); COMMIT;");
        !e.ok()) {
      return e.error();
    }
    return Ok{};
  }
  auto v = Query("SELECT value FROM meta WHERE key = 'schema_version'");
  if (!v.ok()) return v.error();
  std::string version = v->rows.empty() ? "none" : v->rows[0][0].text;
  if (version == "1") {
    // Version 1 differs only in the statuses its CHECK allows: read as it
    // is, and widened in place by a writer (SQLite's documented way to
    // relax a CHECK constraint: every row stays valid).
    return writable ? UpgradeFromVersion1() : Ok{};
  }
  if (version != std::to_string(kDatasetSchemaVersion)) {
    return MakeError(ErrorKind::kUnsupported, "dataset schema version " + version + ", this coroner reads version " +
                                                  std::to_string(kDatasetSchemaVersion));
  }
  // A dataset made before the view gets it from its next writer.
  if (writable)
    if (auto e = Exec(ViewSql()); !e.ok()) return e.error();
  return Ok{};
}

Status Dataset::UpgradeFromVersion1() {
  auto version = Query("PRAGMA schema_version");
  if (!version.ok()) return version.error();
  int64_t next = version->rows[0][0].integer + 1;
  auto r = Exec(
      "BEGIN IMMEDIATE; PRAGMA writable_schema = ON; "
      "UPDATE sqlite_master SET sql = replace(sql, 'CHECK (status IN (''ok'', ''error''))', "
      "'CHECK (status IN (''ok'', ''partial'', ''error''))') WHERE type = 'table' AND name = 'cores'; "
      "PRAGMA schema_version = " + std::to_string(next) + "; PRAGMA writable_schema = OFF; "
      "UPDATE meta SET value = '" + std::to_string(kDatasetSchemaVersion) + "' WHERE key = 'schema_version'; COMMIT;");
  if (!r.ok()) {
    (void)Exec("ROLLBACK");  // best effort: the upgrade's own error is reported
    return MakeError(r.error().kind, "upgrading the dataset from schema version 1: " + r.error().message);
  }
  return Ok{};
}

Expected<Dataset> Dataset::OpenWith(const std::string& path, int flags, bool create, bool* hot_journal) {
  // SQLite's allocation statistics take a global lock on every malloc; no
  // one reads them. This must precede SQLite's initialization.
  static const int configured = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)configured;
  sqlite3* db = nullptr;
  // A connection is used by one thread at a time: SQLite's own locking of
  // every call would be pure cost.
  flags |= SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    Error e = SqlError(db, path);
    sqlite3_close_v2(db);
    return e;
  }
  Dataset ds(db);
  sqlite3_busy_timeout(db, 10000);
  if (!(flags & SQLITE_OPEN_READONLY)) {
    // 16 KiB pages for a new dataset (an existing one keeps its own): a
    // third less system time and about a tenth less wall time writing
    // 100,000 log lines, no change for epi or a scan of cores.
    // Foreign keys are not enforced: Write deletes a replaced core's rows
    // itself. Temporary storage in memory: SQLite spilled the statement
    // journals of the multi-row inserts to a temporary file, five writes in
    // six of a scan (the inserts now need none: OR ROLLBACK). A 64 MiB page
    // cache instead of 2: the unique index on paths takes rows in no order,
    // and with the small cache 100,000 log lines re-read 8,000 pages.
    auto r = ds.Exec(
        "PRAGMA page_size = 16384; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF; " +
        std::string(kWriterSettings));
    if (!r.ok()) return MakeError(ErrorKind::kUnsupported, path + ": " + r.error().message);
  }
  if (auto r = ds.CheckSchema(create, !(flags & SQLITE_OPEN_READONLY)); !r.ok()) {
    if (hot_journal) *hot_journal = sqlite3_extended_errcode(db) == SQLITE_READONLY_ROLLBACK;
    return MakeError(r.error().kind, path + ": " + r.error().message);
  }
  if (!(flags & SQLITE_OPEN_READONLY)) {
    // Indexes a killed bulk load left dropped come back here.
    if (auto r = ds.RestoreIndexes(); !r.ok()) return MakeError(r.error().kind, path + ": " + r.error().message);
  }
  return ds;
}

Expected<Dataset> Dataset::Open(const std::string& path, bool create) {
  return OpenWith(path, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), create);
}

Expected<Dataset> Dataset::OpenReadOnly(const std::string& path) {
  bool hot_journal = false;
  auto ds = OpenWith(path, SQLITE_OPEN_READONLY, false, &hot_journal);
  if (ds.ok() || !hot_journal) return ds;
  // The writable open rolls the journal back, and returns the dataset to WAL.
  if (auto writable = Open(path, false); !writable.ok()) {
    std::string why = writable.error().message;
    if (why.rfind(path + ": ", 0) == 0) why.erase(0, path.size() + 2);
    return MakeError(ErrorKind::kIo, path + ": an interrupted write left " + path +
                                         "-journal, which only a writable open can roll back (" + why + ")");
  }
  return OpenWith(path, SQLITE_OPEN_READONLY, false);
}

Status Dataset::SuspendIndexes() {
  std::string sql = "BEGIN IMMEDIATE;";
  for (const auto& index : kIndexes)
    if (index.suspended) sql += std::string("DROP INDEX IF EXISTS ") + index.name + ";";
  if (auto r = Exec(sql + "COMMIT;"); !r.ok()) {
    (void)Exec("ROLLBACK");  // best effort: the error returned is the one that matters
    return r.error();
  }
  return Ok{};
}

Status Dataset::RestoreIndexes() {
  auto present = Query("SELECT name FROM sqlite_master WHERE type = 'index'");
  if (!present.ok()) return present.error();
  std::string missing;
  for (const auto& index : kIndexes) {
    bool found = std::any_of(present->rows.begin(), present->rows.end(),
                             [&](const auto& row) { return row[0].text == index.name; });
    if (!found) missing += std::string(index.create) + ";";
  }
  if (missing.empty()) return Ok{};  // no write lock for nothing
  auto build = [&] {
    auto r = Exec("BEGIN IMMEDIATE;" + missing + "COMMIT;");
    if (!r.ok()) (void)Exec("ROLLBACK");  // best effort, as above
    return r;
  };
  // Each index is a sort of its keys. With temporary files and a small
  // page cache SQLite sorts them in pieces, on helper threads, which is
  // faster (bench/measurements.md). Where no
  // temporary directory can be written, they are sorted again in memory,
  // as a writer's settings (restored afterwards) say.
  int helpers = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u)) - 1;
  // Settings only: a pragma SQLite refuses leaves the sort slower, not wrong.
  (void)Exec("PRAGMA threads = " + std::to_string(helpers) + "; PRAGMA temp_store = FILE; PRAGMA cache_size = -512;");
  auto r = build();
  (void)Exec(std::string("PRAGMA threads = 0;") + kWriterSettings);
  if (!r.ok()) r = build();
  return r;
}

std::map<std::string, KnownInput> Dataset::KnownInputs() {
  std::map<std::string, KnownInput> out;
  // A core whose reads failed (an "io:" error: a server down, a read cut
  // mid-way) is not known: the next scan tries it again.
  Statement s(db_, "SELECT path, size, mtime_ns FROM cores WHERE status = 'ok' OR error NOT LIKE 'io:%'");
  if (!s.ok()) return out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) {
    KnownInput k;
    if (sqlite3_column_type(s.get(), 1) != SQLITE_NULL) k.size = static_cast<uint64_t>(sqlite3_column_int64(s.get(), 1));
    if (sqlite3_column_type(s.get(), 2) != SQLITE_NULL) k.mtime_ns = sqlite3_column_int64(s.get(), 2);
    out[reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0))] = k;
  }
  return out;
}

// The write path's statements, prepared once per connection. The inserts
// say OR ROLLBACK: a multi-row INSERT that may abort keeps a statement
// journal, a copy of every page it touches so that it can undo itself
// alone; Write rolls its whole transaction back on any failure anyway, and
// without the journals a write costs a sixth less. (attributes keeps OR
// REPLACE: a record may name a key twice, the later value wins.)
struct Dataset::Writer {
  explicit Writer(sqlite3* db)
      : find(db, "SELECT id FROM cores WHERE path = ?"),
        next_id(db, "SELECT ifnull(max(id), 0) + 1 FROM cores"),
        del_attributes(db, "DELETE FROM attributes WHERE core = ?"),
        del_threads(db, "DELETE FROM threads WHERE core = ?"),
        del_frames(db, "DELETE FROM frames WHERE core = ?"),
        del_modules(db, "DELETE FROM modules WHERE core = ?"),
        del_core(db, "DELETE FROM cores WHERE id = ?"),
        cores(InsertInto<CoreRecord>(db, "INSERT OR ROLLBACK", kCoresTable)),
        attributes(InsertInto<AttributeRow>(db, "INSERT OR REPLACE", kAttributesTable)),
        threads(InsertInto<ThreadRow>(db, "INSERT OR ROLLBACK", kThreadsTable)),
        frames(InsertInto<FrameRow>(db, "INSERT OR ROLLBACK", kFramesTable)),
        modules(InsertInto<ModuleRow>(db, "INSERT OR ROLLBACK", kModulesTable)) {}

  bool ok() {
    for (Statement* s : {&find, &next_id, &del_attributes, &del_threads, &del_frames, &del_modules, &del_core})
      if (!s->ok()) return false;
    return true;
  }

  Statement find, next_id, del_attributes, del_threads, del_frames, del_modules, del_core;
  // Each record's rows are gathered here and inserted at the end of the
  // transaction; the core's id is chosen here (max + 1) so that its rows
  // need not wait for its insert.
  RowBuffer cores, attributes, threads, frames, modules;
};

Status Dataset::Write(const std::vector<CoreRecord>& records, bool all_new) {
  if (records.empty()) return Ok{};
  if (!writer_) {
    auto w = std::make_unique<Writer>(db_);
    if (!w->ok()) return SqlError(db_, "prepare");
    writer_ = std::move(w);
  }
  Writer& w = *writer_;
  if (auto r = Exec("BEGIN IMMEDIATE"); !r.ok()) return r.error();
  auto fail = [this, &w](const Error& e) -> Status {
    for (RowBuffer* b : {&w.cores, &w.attributes, &w.threads, &w.frames, &w.modules}) b->Clear();
    (void)Exec("ROLLBACK");  // best effort: `e` is what the caller hears
    return e;
  };
  if (sqlite3_step(w.next_id.get()) != SQLITE_ROW) {
    w.next_id.Reset();
    return fail(SqlError(db_, "write failed"));
  }
  int64_t id = sqlite3_column_int64(w.next_id.get(), 0);
  w.next_id.Reset();
  std::string now = FormatIso8601(std::chrono::duration_cast<std::chrono::seconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
  std::map<std::string_view, int64_t> written;  // paths of this batch: a later record replaces an earlier one
  for (const auto& r : records) {
    // A record replaces the row of the same path, and all that hangs off
    // it. The connection does not enforce the foreign keys (checking each
    // child row's parent doubled the cost of a write), so the cascade is
    // done here.
    std::optional<int64_t> old;
    if (auto it = written.find(r.path); it != written.end()) {
      // Earlier in this batch, not inserted yet: flush, then replace it.
      for (RowBuffer* b : {&w.cores, &w.attributes, &w.threads, &w.frames, &w.modules})
        if (auto e = b->Flush(); !e.ok()) return fail(e.error());
      old = it->second;
    } else if (!all_new) {
      w.find.Bind(r.path);
      if (sqlite3_step(w.find.get()) == SQLITE_ROW) old = sqlite3_column_int64(w.find.get(), 0);
      w.find.Reset();
    }
    if (old) {
      for (Statement* d : {&w.del_attributes, &w.del_threads, &w.del_frames, &w.del_modules, &w.del_core})
        if (auto e = d->Bind(*old).Step(); !e.ok()) return fail(e.error());
    }
    written[r.path] = id;
    w.cores.Int(id);
    CoreColumns(r, [&](const Column& c, const auto& v) { Put(w.cores, c.form, v); });
    w.cores.Text(now);
    AddRows(w.attributes, id, r.attributes);
    AddRows(w.threads, id, r.threads);
    AddRows(w.frames, id, r.frames);
    AddRows(w.modules, id, r.modules);
    ++id;
  }
  for (RowBuffer* b : {&w.cores, &w.attributes, &w.threads, &w.frames, &w.modules})
    if (auto e = b->Flush(); !e.ok()) return fail(e.error());
  if (auto r = Exec("COMMIT"); !r.ok()) return fail(r.error());
  return Ok{};
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
  constexpr const char* kOnlyReading = "query: only statements that read are allowed";
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    if (reading_only_ && sqlite3_errcode(db_) == SQLITE_AUTH)  // the authorizer said no
      return MakeError(ErrorKind::kMalformed, std::string(kOnlyReading) + " (" + sqlite3_errmsg(db_) + ")");
    return SqlError(db_, "query");
  }
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(stmt, sqlite3_finalize);
  if (!stmt) return MakeError(ErrorKind::kMalformed, "query: empty statement");
  if (reading_only_ && !sqlite3_stmt_readonly(stmt)) return MakeError(ErrorKind::kMalformed, kOnlyReading);
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

// What a user's statement may do: read tables, call functions, recurse,
// and ask the schema. Everything else (writes, ATTACH, VACUUM, other
// pragmas, triggers and views being made) is denied at prepare time.
int ReadOnlyAuthorizer(void*, int action, const char* arg1, const char*, const char*, const char*) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_PRAGMA: {
      std::string_view name = arg1 ? arg1 : "";
      for (std::string_view allowed : {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo",
                                       "foreign_key_list", "table_list"})
        if (name == allowed) return SQLITE_OK;
      return SQLITE_DENY;
    }
    default:
      return SQLITE_DENY;
  }
}

}  // namespace

Expected<QueryResult> Dataset::QueryUserStatement(const std::string& sql) {
  sqlite3_set_authorizer(db_, ReadOnlyAuthorizer, nullptr);
  reading_only_ = true;
  auto result = Query(sql);
  reading_only_ = false;
  sqlite3_set_authorizer(db_, nullptr, nullptr);
  return result;
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
      // One line of a terminal's text: breaks as spaces, every other
      // control character (C0, DEL, C1) escaped, cut on a character's edge.
      std::string t = ValueText(row[i]);
      for (char& ch : t) {
        if (ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
      }
      t = EscapedLine(t);
      if (t.size() > width) {
        size_t cut = width - 1;
        while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xc0) == 0x80) --cut;
        t = t.substr(0, cut) + "~";
      }
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
  return JsonText(rows) + "\n";
}

}  // namespace coroner
