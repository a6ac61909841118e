#include "dataset/merge.h"

#include <algorithm>

#include "dataset/dataset.h"

namespace coroner {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

// The columns of a table but the row id, comma-separated and quoted.
Expected<std::string> Columns(Dataset& ds, const std::string& table, bool skip_id) {
  auto q = ds.Query("SELECT name FROM pragma_table_info(" + Quote(table) + ")");
  if (!q.ok()) return q.error();
  std::string cols;
  for (const auto& row : q->rows) {
    if (skip_id && row[0].text == "id") continue;
    if (!cols.empty()) cols += ", ";
    cols += "\"" + row[0].text + "\"";
  }
  return cols;
}

// The schema objects of a dataset (tables, indexes, triggers, views), each
// as "type name: SQL", in name order.
Expected<std::vector<std::string>> SchemaObjects(Dataset& ds) {
  auto q = ds.Query("SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name");
  if (!q.ok()) return q.error();
  std::vector<std::string> out;
  for (const auto& row : q->rows) out.push_back(row[0].text + " " + row[1].text + ": " + row[2].text);
  return out;
}

// A shard is a file from elsewhere, and merging copies its schema and runs
// SQL over it: a trigger or view in it would run inside the merge (a trigger
// that deletes the next shard's rows). Only a shard each of whose schema
// objects is one of a fresh dataset's, with the same SQL, is merged.
Status CheckShardSchema(const std::string& path, Dataset& shard, const std::vector<std::string>& expected) {
  auto objects = SchemaObjects(shard);
  if (!objects.ok()) return objects.error();
  for (const auto& o : *objects) {
    if (!std::binary_search(expected.begin(), expected.end(), o)) {
      return MakeError(ErrorKind::kMalformed,
                       path + ": not merged: its schema has an object a coroner dataset does not (" + o.substr(0, 120) + ")");
    }
  }
  // Fewer objects are harmless: a bulk load that was killed leaves its
  // indexes dropped, and a missing table fails the merge's own SQL.
  return Ok{};
}

// The schema of a dataset as this version creates it, to hold shards to.
Expected<std::vector<std::string>> ExpectedSchema() {
  auto reference = Dataset::Open(":memory:", true);
  if (!reference.ok()) return reference.error();
  auto objects = SchemaObjects(*reference);
  if (!objects.ok()) return objects.error();
  std::sort(objects->begin(), objects->end());
  return std::move(*objects);
}

// One merge into an opened dataset: its SQL, shard by shard.
class Merger {
 public:
  explicit Merger(Dataset& ds) : ds_(ds) {}

  Status Run(const std::string& sql) {
    auto r = ds_.Query(sql);
    if (!r.ok()) return r.error();
    return Ok{};
  }
  size_t Count(const std::string& sql) {
    auto r = ds_.Query(sql);
    return r.ok() && !r->rows.empty() ? static_cast<size_t>(r->rows[0][0].integer) : 0;
  }

  // Integrity holds by construction (children are deleted with their core
  // and copied under its new id), so the per-row foreign-key checks, which
  // were most of the cost of a large merge, are off while merging.
  // A rollback journal holds only the pages a merge changes, while WAL would
  // write every appended page twice; the dataset returns to WAL afterwards.
  // Temporary files on disk, as SQLite's default: a merge's statements are
  // large, and the scan's in-memory setting would hold their journals in RAM.
  Status Setup() {
    for (const char* sql : {"PRAGMA foreign_keys = OFF", "PRAGMA journal_mode = DELETE", "PRAGMA cache_size = -262144",
                            "PRAGMA temp_store = DEFAULT"})
      if (auto r = Run(sql); !r.ok()) return r.error();
    return Ok{};
  }

  // The columns of `cores` and of each child table after `core`.
  Status ReadColumns() {
    auto cores = Columns(ds_, "cores", true);
    if (!cores.ok()) return cores.error();
    cores_ = *cores;
    for (const char* table : {"attributes", "threads", "frames", "modules"}) {
      auto cols = Columns(ds_, table, false);
      if (!cols.ok()) return cols.error();
      std::string rest = *cols;
      rest.erase(0, rest.find(',') + 1);  // every child table starts with `core`
      children_.emplace_back(table, rest);
    }
    return Ok{};
  }

  // Into an empty dataset the first shard is copied page by page, which is
  // several times faster than inserting its rows.
  Status CopyWhole(const std::string& shard, MergeSummary& summary) {
    auto source = Dataset::OpenReadOnly(shard);
    if (!source.ok()) return source.error();
    sqlite3_backup* backup = sqlite3_backup_init(ds_.handle(), "main", source->handle(), "main");
    int rc = backup ? sqlite3_backup_step(backup, -1) : SQLITE_ERROR;
    if (backup) sqlite3_backup_finish(backup);
    if (rc != SQLITE_DONE) return MakeError(ErrorKind::kIo, shard + ": copy failed: " + sqlite3_errmsg(ds_.handle()));
    if (auto r = Setup(); !r.ok()) return r.error();  // the copy brought the shard's settings
    summary.added = Count("SELECT count(*) FROM main.cores");
    summary.shards = 1;
    return Ok{};
  }

  // A shard's cores that are new here, or newer than what is here, replace
  // what is here, in one transaction; the shard's error is the one reported.
  Status MergeShard(const std::string& shard, MergeSummary& summary) {
    if (auto r = Run("ATTACH DATABASE " + Quote(shard) + " AS shard"); !r.ok()) return r.error();
    Status merged = InsertPicked(summary);
    // Clean-up, best effort.
    if (!merged.ok()) (void)Run("ROLLBACK");
    (void)Run("DROP TABLE IF EXISTS temp.pick");
    (void)Run("DROP TABLE IF EXISTS temp.shift");
    (void)Run("DETACH DATABASE shard");
    if (!merged.ok()) return MakeError(merged.error().kind, shard + ": " + merged.error().message);
    ++summary.shards;
    return Ok{};
  }

 private:
  Status RunAll(const std::vector<std::string>& steps) {
    for (const auto& sql : steps)
      if (auto r = Run(sql); !r.ok()) return r.error();
    return Ok{};
  }

  Status InsertPicked(MergeSummary& summary) {
    if (auto r = RunAll({
            "BEGIN IMMEDIATE",
            // The shard's cores that are new here, or newer than what is here.
            "CREATE TEMP TABLE pick AS SELECT s.id AS old, c.id AS replaced "
            "FROM shard.cores s LEFT JOIN main.cores c ON c.path = s.path "
            "WHERE c.id IS NULL OR s.scanned_at > c.scanned_at OR c.size IS NOT s.size OR c.mtime_ns IS NOT s.mtime_ns",
        });
        !r.ok())
      return r.error();
    // The picked ids are most often one run without gaps (a shard new here,
    // every core picked): its rows are then a range of the children's keys,
    // read without a lookup in `pick` per row (an eighth of a merge's time).
    std::string picked_rows = "core IN (SELECT old FROM pick)";
    if (Count("SELECT count(*) > 0 AND count(*) = max(old) - min(old) + 1 FROM pick") == 1)
      picked_rows = "core BETWEEN (SELECT min(old) FROM pick) AND (SELECT max(old) FROM pick)";
    std::vector<std::string> steps;
    for (const auto& [table, rest] : children_)
      steps.push_back("DELETE FROM main." + table + " WHERE core IN (SELECT replaced FROM pick WHERE replaced IS NOT NULL)");
    steps.push_back("DELETE FROM main.cores WHERE id IN (SELECT replaced FROM pick WHERE replaced IS NOT NULL)");
    // Rows keep their order and move by one offset past the ids here, so the
    // children need no id map and are appended in key order.
    steps.push_back("CREATE TEMP TABLE shift AS SELECT ifnull((SELECT max(id) FROM main.cores), 0) + 1 - "
                    "ifnull((SELECT min(old) FROM pick), 0) AS by");
    steps.push_back("INSERT INTO main.cores(id, " + cores_ + ") SELECT id + (SELECT by FROM shift), " + cores_ +
                    " FROM shard.cores WHERE id IN (SELECT old FROM pick) ORDER BY id");
    for (const auto& [table, rest] : children_)
      steps.push_back("INSERT INTO main." + table + " SELECT core + (SELECT by FROM shift)," + rest + " FROM shard." +
                      table + " WHERE " + picked_rows);
    if (auto r = RunAll(steps); !r.ok()) return r.error();
    size_t picked = Count("SELECT count(*) FROM pick");
    size_t replaced = Count("SELECT count(*) FROM pick WHERE replaced IS NOT NULL");
    size_t total = Count("SELECT count(*) FROM shard.cores");
    summary.added += picked - replaced;
    summary.replaced += replaced;
    summary.unchanged += total - picked;
    return Run("COMMIT");
  }

  Dataset& ds_;
  std::string cores_;
  std::vector<std::pair<std::string, std::string>> children_;  // table, its columns after `core`
};

}  // namespace

Expected<MergeSummary> MergeDatasets(const std::string& out, const std::vector<std::string>& shards) {
  auto expected = ExpectedSchema();
  if (!expected.ok()) return expected.error();
  for (const auto& s : shards) {  // every shard is checked before anything is written
    auto ds = Dataset::OpenReadOnly(s);
    if (!ds.ok()) return ds.error();
    if (auto r = CheckShardSchema(s, *ds, *expected); !r.ok()) return r.error();
  }
  auto ds = Dataset::Open(out, true);
  if (!ds.ok()) return ds.error();
  Merger merger(*ds);
  MergeSummary summary;
  if (auto r = merger.ReadColumns(); !r.ok()) return r.error();
  if (auto r = merger.Setup(); !r.ok()) return r.error();
  size_t first = 0;
  if (!shards.empty() && merger.Count("SELECT count(*) FROM main.cores") == 0) {
    if (auto r = merger.CopyWhole(shards[0], summary); !r.ok()) return r.error();
    first = 1;
  }
  for (size_t i = first; i < shards.size(); ++i)
    if (auto r = merger.MergeShard(shards[i], summary); !r.ok()) return r.error();
  // The writer's journal back to WAL; a refusal leaves a working dataset.
  (void)merger.Run("PRAGMA journal_mode = WAL");
  return summary;
}

}  // namespace coroner
