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

}  // namespace

Expected<MergeSummary> MergeDatasets(const std::string& out, const std::vector<std::string>& shards) {
  // The schema of a dataset as this version creates it, to hold shards to.
  std::vector<std::string> expected;
  {
    auto reference = Dataset::Open(":memory:", true);
    if (!reference.ok()) return reference.error();
    auto objects = SchemaObjects(*reference);
    if (!objects.ok()) return objects.error();
    expected = std::move(*objects);
    std::sort(expected.begin(), expected.end());
  }
  for (const auto& s : shards) {  // every shard is checked before anything is written
    auto ds = Dataset::OpenReadOnly(s);
    if (!ds.ok()) return ds.error();
    if (auto r = CheckShardSchema(s, *ds, expected); !r.ok()) return r.error();
  }
  auto ds = Dataset::Open(out, true);
  if (!ds.ok()) return ds.error();
  MergeSummary summary;
  auto run = [&](const std::string& sql) -> Status {
    auto r = ds->Query(sql);
    if (!r.ok()) return r.error();
    return Ok{};
  };
  auto count = [&](const std::string& sql) -> size_t {
    auto r = ds->Query(sql);
    return r.ok() && !r->rows.empty() ? static_cast<size_t>(r->rows[0][0].integer) : 0;
  };
  auto cores = Columns(*ds, "cores", true);
  if (!cores.ok()) return cores.error();
  // Integrity holds by construction (children are deleted with their core
  // and copied under its new id), so the per-row foreign-key checks, which
  // were most of the cost of a large merge, are off while merging.
  // A rollback journal holds only the pages a merge changes, while WAL would
  // write every appended page twice; the dataset returns to WAL afterwards.
  auto setup = [&]() -> Status {
    // Temporary files on disk, as SQLite's default: a merge's statements
    // are large, and the scan's in-memory setting would hold their journals in RAM.
    for (const char* sql : {"PRAGMA foreign_keys = OFF", "PRAGMA journal_mode = DELETE", "PRAGMA cache_size = -262144",
                            "PRAGMA temp_store = DEFAULT"})
      if (auto r = run(sql); !r.ok()) return r.error();
    return Ok{};
  };
  if (auto r = setup(); !r.ok()) return r.error();
  std::vector<std::pair<std::string, std::string>> children;  // table, its columns after `core`
  for (const char* table : {"attributes", "threads", "frames", "modules"}) {
    auto cols = Columns(*ds, table, false);
    if (!cols.ok()) return cols.error();
    std::string rest = *cols;
    rest.erase(0, rest.find(',') + 1);  // every child table starts with `core`
    children.emplace_back(table, rest);
  }
  size_t first = 0;
  if (!shards.empty() && count("SELECT count(*) FROM main.cores") == 0) {
    // Into an empty dataset the first shard is copied page by page, which is
    // several times faster than inserting its rows.
    auto source = Dataset::OpenReadOnly(shards[0]);
    if (!source.ok()) return source.error();
    sqlite3_backup* backup = sqlite3_backup_init(ds->handle(), "main", source->handle(), "main");
    int rc = backup ? sqlite3_backup_step(backup, -1) : SQLITE_ERROR;
    if (backup) sqlite3_backup_finish(backup);
    if (rc != SQLITE_DONE)
      return MakeError(ErrorKind::kIo, shards[0] + ": copy failed: " + sqlite3_errmsg(ds->handle()));
    if (auto r = setup(); !r.ok()) return r.error();  // the copy brought the shard's settings
    summary.added = count("SELECT count(*) FROM main.cores");
    summary.shards = first = 1;
  }
  for (size_t i = first; i < shards.size(); ++i) {
    const std::string& shard = shards[i];
    if (auto r = run("ATTACH DATABASE " + Quote(shard) + " AS shard"); !r.ok()) return r.error();
    bool ok = true;
    Error error{ErrorKind::kIo, ""};
    auto run_all = [&](const std::vector<std::string>& steps) {
      for (const auto& sql : steps) {
        if (!ok) return;
        if (auto r = run(sql); !r.ok()) {
          ok = false;
          error = r.error();
        }
      }
    };
    run_all({
        "BEGIN IMMEDIATE",
        // The shard's cores that are new here, or newer than what is here.
        "CREATE TEMP TABLE pick AS SELECT s.id AS old, c.id AS replaced "
        "FROM shard.cores s LEFT JOIN main.cores c ON c.path = s.path "
        "WHERE c.id IS NULL OR s.scanned_at > c.scanned_at OR c.size IS NOT s.size OR c.mtime_ns IS NOT s.mtime_ns",
    });
    // The picked ids are most often one run without gaps (a shard new here,
    // every core picked): its rows are then a range of the children's keys,
    // read without a lookup in `pick` per row (an eighth of a merge's time).
    std::string picked_rows = "core IN (SELECT old FROM pick)";
    if (ok && count("SELECT count(*) > 0 AND count(*) = max(old) - min(old) + 1 FROM pick") == 1)
      picked_rows = "core BETWEEN (SELECT min(old) FROM pick) AND (SELECT max(old) FROM pick)";
    std::vector<std::string> steps;
    for (const auto& [table, rest] : children)
      steps.push_back("DELETE FROM main." + table + " WHERE core IN (SELECT replaced FROM pick WHERE replaced IS NOT NULL)");
    steps.push_back("DELETE FROM main.cores WHERE id IN (SELECT replaced FROM pick WHERE replaced IS NOT NULL)");
    // Rows keep their order and move by one offset past the ids here, so the
    // children need no id map and are appended in key order.
    steps.push_back("CREATE TEMP TABLE shift AS SELECT ifnull((SELECT max(id) FROM main.cores), 0) + 1 - "
                    "ifnull((SELECT min(old) FROM pick), 0) AS by");
    steps.push_back("INSERT INTO main.cores(id, " + *cores + ") SELECT id + (SELECT by FROM shift), " + *cores +
                    " FROM shard.cores WHERE id IN (SELECT old FROM pick) ORDER BY id");
    for (const auto& [table, rest] : children)
      steps.push_back("INSERT INTO main." + table + " SELECT core + (SELECT by FROM shift)," + rest + " FROM shard." +
                      table + " WHERE " + picked_rows);
    run_all(steps);
    if (ok) {
      size_t picked = count("SELECT count(*) FROM pick");
      size_t replaced = count("SELECT count(*) FROM pick WHERE replaced IS NOT NULL");
      size_t total = count("SELECT count(*) FROM shard.cores");
      summary.added += picked - replaced;
      summary.replaced += replaced;
      summary.unchanged += total - picked;
      if (auto r = run("COMMIT"); !r.ok()) {
        ok = false;
        error = r.error();
      }
    }
    // Clean-up, best effort: a shard's own error is the one reported.
    if (!ok) (void)run("ROLLBACK");
    (void)run("DROP TABLE IF EXISTS temp.pick");
    (void)run("DROP TABLE IF EXISTS temp.shift");
    (void)run("DETACH DATABASE shard");
    if (!ok) return MakeError(error.kind, shard + ": " + error.message);
    ++summary.shards;
  }
  // The writer's journal back to WAL; a refusal leaves a working dataset.
  (void)run("PRAGMA journal_mode = WAL");
  return summary;
}

}  // namespace coroner
