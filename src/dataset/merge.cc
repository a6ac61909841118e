#include "dataset/merge.h"

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

}  // namespace

Expected<MergeSummary> MergeDatasets(const std::string& out, const std::vector<std::string>& shards) {
  for (const auto& s : shards) {  // every shard is checked before anything is written
    auto ds = Dataset::OpenReadOnly(s);
    if (!ds.ok()) return ds.error();
  }
  auto ds = Dataset::Open(out, true);
  if (!ds.ok()) return ds.error();
  MergeSummary summary;
  auto run = [&](const std::string& sql) -> Expected<bool> {
    auto r = ds->Query(sql);
    if (!r.ok()) return r.error();
    return true;
  };
  auto count = [&](const std::string& sql) -> size_t {
    auto r = ds->Query(sql);
    return r.ok() && !r->rows.empty() ? static_cast<size_t>(r->rows[0][0].integer) : 0;
  };
  auto cores = Columns(*ds, "cores", true);
  if (!cores.ok()) return cores.error();
  for (const auto& shard : shards) {
    if (auto r = run("ATTACH DATABASE " + Quote(shard) + " AS shard"); !r.ok()) return r.error();
    std::vector<std::string> steps = {
        "BEGIN IMMEDIATE",
        // The shard's cores that are new here, or newer than what is here.
        "CREATE TEMP TABLE pick AS SELECT s.id AS old, s.path AS path, c.id IS NOT NULL AS replacing "
        "FROM shard.cores s LEFT JOIN main.cores c ON c.path = s.path "
        "WHERE c.id IS NULL OR s.scanned_at > c.scanned_at OR c.size IS NOT s.size OR c.mtime_ns IS NOT s.mtime_ns",
        "DELETE FROM main.cores WHERE path IN (SELECT path FROM pick)",
        "INSERT INTO main.cores(" + *cores + ") SELECT " + *cores + " FROM shard.cores WHERE id IN (SELECT old FROM pick)",
        "CREATE TEMP TABLE idmap AS SELECT p.old AS old, c.id AS new FROM pick p JOIN main.cores c ON c.path = p.path",
    };
    for (const char* table : {"attributes", "threads", "frames", "modules"}) {
      auto cols = Columns(*ds, table, false);
      if (!cols.ok()) return cols.error();
      std::string rest = *cols;
      rest.erase(0, rest.find(',') + 1);  // every child table starts with `core`
      steps.push_back(std::string("INSERT INTO main.") + table + "(" + *cols + ") SELECT m.new," + rest + " FROM shard." +
                      table + " t JOIN idmap m ON t.core = m.old");
    }
    bool ok = true;
    Error error{ErrorKind::kIo, ""};
    for (const auto& sql : steps) {
      if (auto r = run(sql); !r.ok()) {
        ok = false;
        error = r.error();
        break;
      }
    }
    if (ok) {
      size_t picked = count("SELECT count(*) FROM pick"), replaced = count("SELECT count(*) FROM pick WHERE replacing");
      size_t total = count("SELECT count(*) FROM shard.cores");
      summary.added += picked - replaced;
      summary.replaced += replaced;
      summary.unchanged += total - picked;
      if (auto r = run("COMMIT"); !r.ok()) {
        ok = false;
        error = r.error();
      }
    }
    if (!ok) run("ROLLBACK");
    run("DROP TABLE IF EXISTS temp.pick");
    run("DROP TABLE IF EXISTS temp.idmap");
    run("DETACH DATABASE shard");
    if (!ok) return MakeError(error.kind, shard + ": " + error.message);
    ++summary.shards;
  }
  return summary;
}

}  // namespace coroner
