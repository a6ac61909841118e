#include "zoo/scan_rows.h"

#include <gtest/gtest.h>

#include "dataset/dataset.h"

namespace coroner::testing {

std::map<std::string, Row> LoadRows(const std::string& db, const std::string& strip) {
  std::map<std::string, Row> out;
  auto ds = Dataset::OpenReadOnly(db);
  EXPECT_TRUE(ds.ok()) << (ds.ok() ? "" : ds.error().message);
  if (!ds.ok()) return out;
  auto q = ds->Query(R"sql(
    SELECT c.path, c.status, c.error, c.warnings, c.time, c.time_source, c.uptime, c.pid, c.comm,
           c.signal, c.signal_name, c.si_code, c.fault_address, c.real_signal, c.real_si_code,
           c.real_fault_address, c.syndrome, c.context, c.signature, c.crashing_tid, c.exe, c.build_id,
           c.truncated, c.cpu_time, c.size,
           (SELECT count(*) FROM threads t WHERE t.core = c.id) AS threads,
           (SELECT group_concat(tid || ' ' || pc || ' ' || registers, ';')
              FROM (SELECT * FROM threads t WHERE t.core = c.id ORDER BY thread)) AS thread_rows,
           (SELECT count(*) FROM frames f WHERE f.core = c.id) AS frames,
           (SELECT group_concat(pc || ' ' || ifnull(function, '?') || ' ' || ifnull(file, '') || ':' ||
                                ifnull(line, 0) || ' ' || trust, ';')
              FROM (SELECT * FROM frames f WHERE f.core = c.id ORDER BY thread, "index")) AS frame_rows,
           (SELECT count(*) FROM modules m WHERE m.core = c.id) AS modules,
           (SELECT group_concat(path || ' ' || base || ' ' || ifnull(build_id, '') || ' ' || status, ';')
              FROM (SELECT * FROM modules m WHERE m.core = c.id ORDER BY base, path)) AS module_rows,
           (SELECT group_concat(key || '=' || value, ';')
              FROM (SELECT * FROM attributes a WHERE a.core = c.id ORDER BY key)) AS attributes
    FROM cores c)sql");
  EXPECT_TRUE(q.ok()) << (q.ok() ? "" : q.error().message);
  if (!q.ok()) return out;
  for (const auto& row : q->rows) {
    Row r;
    for (size_t i = 0; i < row.size(); ++i) {
      const QueryValue& v = row[i];
      std::string text = v.type == QueryValue::Type::kNull      ? "NULL"
                         : v.type == QueryValue::Type::kInteger ? std::to_string(v.integer)
                         : v.type == QueryValue::Type::kReal    ? std::to_string(v.real)
                                                                : v.text;
      r[q->columns[i]] = text;
    }
    if (r["attributes"] != "NULL") r["attributes"] += ";";
    std::string path = r["path"];
    if (!strip.empty() && path.rfind(strip, 0) == 0) path = path.substr(strip.size());
    r.erase("path");
    out[path] = std::move(r);
  }
  return out;
}

void ExpectSameRows(const std::map<std::string, Row>& got, const std::map<std::string, Row>& want) {
  EXPECT_EQ(got.size(), want.size());
  int reported = 0;
  for (const auto& [path, row] : want) {
    if (reported >= 5) break;
    auto it = got.find(path);
    if (it == got.end()) {
      ADD_FAILURE() << "missing row " << path;
      ++reported;
      continue;
    }
    for (const auto& [column, value] : row) {
      auto v = it->second.find(column);
      if (v == it->second.end() || v->second != value) {
        ADD_FAILURE() << path << ": " << column << " is " << (v == it->second.end() ? "absent" : v->second)
                      << ", want " << value;
        ++reported;
        break;
      }
    }
  }
  for (const auto& [path, row] : got) {
    if (!want.count(path) && reported++ < 5) ADD_FAILURE() << "unexpected row " << path;
  }
}

}  // namespace coroner::testing
