// Dataset: the SQLite database `coroner scan` writes and `coroner query`,
// `coroner epi` and `coroner merge` read. The schema is a contract, with a
// version number and a document (docs/dataset.md).
//
// Writes happen in transactions that hold whole records (a core row with
// all its attributes, threads, frames and modules), so a scan killed at any
// moment leaves every committed core complete and nothing half-written.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/core_record.h"
#include "base/expected.h"

namespace coroner {

// 2: a core's status may be `partial`. A version 1 dataset is read as it
// is, and made version 2 by the first writable open.
constexpr int kDatasetSchemaVersion = 2;

// What a re-scan compares to decide that an input is unchanged.
struct KnownInput {
  std::optional<uint64_t> size;
  std::optional<int64_t> mtime_ns;
};

// One value of a query's result: NULL, an integer, a real or text.
struct QueryValue {
  enum class Type { kNull, kInteger, kReal, kText } type = Type::kNull;
  int64_t integer = 0;
  double real = 0;
  std::string text;
};

struct QueryResult {
  std::vector<std::string> columns;
  std::vector<std::vector<QueryValue>> rows;
};

// One row of a streamed query, valid only inside the callback.
class QueryRow {
 public:
  explicit QueryRow(sqlite3_stmt* stmt) : stmt_(stmt) {}
  int size() const { return sqlite3_column_count(stmt_); }
  bool IsNull(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  int64_t Integer(int i) const { return sqlite3_column_int64(stmt_, i); }
  double Real(int i) const { return sqlite3_column_double(stmt_, i); }
  // Empty for NULL. The view dies with the row.
  std::string_view Text(int i) const;
  QueryValue Value(int i) const;

 private:
  sqlite3_stmt* stmt_;
};

class Dataset {
 public:
  // Opens (creating when absent and `create`) a dataset. Fails on a file that
  // is not a coroner dataset or has another schema version.
  static Expected<Dataset> Open(const std::string& path, bool create);
  // Read-only: the query cannot change the dataset. A transaction that a
  // killed writer left in a rollback journal (merge writes in that mode) is
  // rolled back first, as any writable open would: SQLite lets no read-only
  // connection read past it.
  static Expected<Dataset> OpenReadOnly(const std::string& path);

  Dataset(Dataset&& other) noexcept;
  Dataset& operator=(Dataset&& other) noexcept;
  Dataset(const Dataset&) = delete;
  ~Dataset();

  std::map<std::string, KnownInput> KnownInputs();

  // Writes the records in one transaction, each replacing any row with the
  // same path. `all_new`: the caller knows that no path is in the dataset
  // yet (a bulk load), which saves a lookup a record.
  Status Write(const std::vector<CoreRecord>& records, bool all_new = false);

  // For a bulk load: drops the secondary indexes, so that each write
  // maintains the tables alone; RestoreIndexes builds them again, a sort
  // each, which costs less than as many inserts into them. A dataset left
  // without them (a scan killed in between) answers every query, only
  // slower, and gets them back when next opened for writing.
  Status SuspendIndexes();
  Status RestoreIndexes();

  Expected<QueryResult> Query(const std::string& sql);
  // A statement a user typed (`coroner query`): reading only. An authorizer
  // allows selects, reads, functions and the schema pragmas, and the
  // statement must be read-only to SQLite too, so VACUUM INTO, ATTACH and
  // the like never write a file.
  Expected<QueryResult> QueryUserStatement(const std::string& sql);
  // Streams the rows of one statement to `row` without holding them; a
  // callback that returns false stops early. Returns the rows seen; the
  // column names go to `columns` when given.
  Expected<size_t> ForEachRow(const std::string& sql, const std::function<bool(const QueryRow&)>& row,
                              std::vector<std::string>* columns = nullptr);

  sqlite3* handle() { return db_; }

 private:
  struct Writer;
  bool reading_only_ = false;  // ForEachRow refuses statements that write
  explicit Dataset(sqlite3* db);
  // `hot_journal`, when given, is set when a read-only open failed on a
  // rollback journal that only a writer may roll back.
  static Expected<Dataset> OpenWith(const std::string& path, int flags, bool create, bool* hot_journal = nullptr);
  Status Exec(const std::string& sql);
  Status CheckSchema(bool create, bool writable);
  Status UpgradeFromVersion1();

  sqlite3* db_ = nullptr;
  std::unique_ptr<Writer> writer_;  // prepared on the first Write
};

// A result as an aligned text table (strings cut at `width` characters) or
// as JSON (an array of objects, one per row).
std::string QueryResultToTable(const QueryResult& result, size_t width = 60);
std::string QueryResultToJson(const QueryResult& result);

}  // namespace coroner
