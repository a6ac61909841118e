// The dataset's rows, from their one definition (dataset/record_columns.h)
// to the tables: each column documented, each field stored as
// docs/dataset.md says, and the workers' JSON carrying every field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "dataset/dataset.h"

namespace coroner {
namespace {

namespace fs = std::filesystem;

class DatasetRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("coroner-rows-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Dataset Open() {
    auto ds = Dataset::Open((dir_ / "rows.db").string(), true);
    EXPECT_TRUE(ds.ok()) << ds.error().message;
    return std::move(*ds);
  }

  fs::path dir_;
};

// A record with every field set to a value whose stored form is known from
// docs/dataset.md, not from the writer.
CoreRecord EveryFieldSet() {
  CoreRecord r;
  r.path = "/cores/core.prog.4242";
  r.source = "core";
  r.size = 4096;
  r.mtime_ns = 1791947520123456789;
  r.bytes_read = 512;
  r.warnings = {"notes cut short", "no sidecar"};
  r.time = 1791947520;  // `date -u -d @1791947520`: 2026-10-14T03:12:00Z
  r.time_source = "sidecar";
  r.uptime = 77;
  r.pid = 4242;
  r.comm = "prog";
  r.signal = 11;
  r.si_code = 1;
  r.fault_address = 0xffffffffff600000;  // above 2^63: an SQL integer would be negative
  r.real_signal = 7;
  r.real_si_code = 2;
  r.real_fault_address = 0x10;
  r.syndrome = "null-deref";
  r.signature = "null-deref | walk | main";
  r.crashing_tid = 4243;
  r.exe = "/usr/bin/prog";
  r.build_id = "0123abcd";
  r.truncated = true;
  r.cpu_seconds = 1.5;
  r.analysis_ms = 2.25;
  r.attributes = {{"host", "node-7"}, {"rack", ""}};
  r.threads = {{1, 4243, true, 0x401136, 0x7ffc0000e0f0, R"({"rax":"0x0"})", 0.25}};
  FrameRow inlined;
  inlined.thread = 1;
  inlined.index = 0;
  inlined.pc = 0x401136;
  inlined.module = "/usr/bin/prog";
  inlined.build_id = "0123abcd";
  inlined.offset = 0x1136;
  inlined.function = "walk";
  inlined.file = "walk.c";
  inlined.line = 13;
  inlined.trust = "context";
  inlined.inlined = true;
  FrameRow unknown;  // found by scanning, in no module
  unknown.thread = 1;
  unknown.index = 1;
  unknown.pc = 0xdeadbeef;
  unknown.trust = "scan";
  r.frames = {inlined, unknown};
  r.modules = {{"/usr/bin/prog", 0x400000, 0x5000, "0123abcd", "ok"}};
  return r;
}

std::string Text(const QueryValue &v) { return v.type == QueryValue::Type::kText ? v.text : "<not text>"; }
bool IsNull(const QueryValue &v) { return v.type == QueryValue::Type::kNull; }

// The one row a query returns, by column name.
std::map<std::string, QueryValue> OneRow(Dataset &ds, const std::string &sql) {
  auto q = ds.Query(sql);
  EXPECT_TRUE(q.ok()) << sql;
  std::map<std::string, QueryValue> out;
  if (!q.ok() || q->rows.size() != 1) {
    ADD_FAILURE() << sql << ": not one row";
    return out;
  }
  for (size_t i = 0; i < q->columns.size(); ++i) out[q->columns[i]] = q->rows[0][i];
  return out;
}

TEST_F(DatasetRowsTest, EveryColumnIsDescribedInTheDocs) {
  Dataset ds = Open();
  std::ifstream in(std::string(std::getenv("CORONER_SOURCE_DIR")) + "/docs/dataset.md");
  std::stringstream docs;
  docs << in.rdbuf();
  const std::string text = docs.str();
  for (const char *table : {"cores", "attributes", "threads", "frames", "modules"}) {
    size_t at = text.find(std::string("## `") + table + "`");
    ASSERT_NE(at, std::string::npos) << "docs/dataset.md has no section for " << table;
    size_t end = text.find("\n## ", at + 1);
    const std::string section = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const std::string heading = section.substr(0, section.find('\n'));
    auto columns = ds.Query(std::string("SELECT name FROM pragma_table_info('") + table + "')");
    ASSERT_TRUE(columns.ok());
    ASSERT_GT(columns->rows.size(), 2u) << table;
    for (const auto &row : columns->rows) {
      const std::string &name = row[0].text;
      bool named = section.find("`" + name + "`") != std::string::npos ||
                   section.find("`\"" + name + "\"`") != std::string::npos || heading.find(name) != std::string::npos;
      EXPECT_TRUE(named) << table << "." << name << " is not described in docs/dataset.md";
    }
  }
}

TEST_F(DatasetRowsTest, EachFieldIsStoredAsTheDocsSay) {
  Dataset ds = Open();
  ASSERT_TRUE(ds.Write({EveryFieldSet()}).ok());

  auto c = OneRow(ds, "SELECT * FROM cores");
  EXPECT_EQ(Text(c["path"]), "/cores/core.prog.4242");
  EXPECT_EQ(c["size"].integer, 4096);
  EXPECT_EQ(c["mtime_ns"].integer, 1791947520123456789);
  EXPECT_EQ(c["bytes_read"].integer, 512);
  EXPECT_EQ(Text(c["status"]), "ok");
  EXPECT_TRUE(IsNull(c["error"])) << "an empty error is NULL";
  EXPECT_EQ(Text(c["warnings"]), "notes cut short\nno sidecar") << "one warning per line";
  EXPECT_EQ(Text(c["time"]), "2026-10-14T03:12:00Z");
  EXPECT_EQ(Text(c["time_source"]), "sidecar");
  EXPECT_EQ(c["uptime"].integer, 77);
  EXPECT_EQ(c["pid"].integer, 4242);
  EXPECT_EQ(Text(c["comm"]), "prog");
  EXPECT_EQ(c["signal"].integer, 11);
  EXPECT_EQ(Text(c["signal_name"]), "SIGSEGV");
  EXPECT_EQ(c["si_code"].integer, 1);
  EXPECT_EQ(Text(c["fault_address"]), "0xffffffffff600000");
  EXPECT_EQ(c["real_signal"].integer, 7);
  EXPECT_EQ(c["real_si_code"].integer, 2);
  EXPECT_EQ(Text(c["real_fault_address"]), "0x10");
  EXPECT_EQ(Text(c["syndrome"]), "null-deref");
  EXPECT_TRUE(IsNull(c["context"]));
  EXPECT_EQ(Text(c["signature"]), "null-deref | walk | main");
  EXPECT_EQ(c["crashing_tid"].integer, 4243);
  EXPECT_EQ(Text(c["exe"]), "/usr/bin/prog");
  EXPECT_EQ(Text(c["build_id"]), "0123abcd");
  EXPECT_EQ(c["truncated"].integer, 1);
  EXPECT_DOUBLE_EQ(c["cpu_time"].real, 1.5);
  EXPECT_DOUBLE_EQ(c["analysis_ms"].real, 2.25);
  EXPECT_FALSE(IsNull(c["scanned_at"]));
  const int64_t id = c["id"].integer;

  auto attrs = ds.Query("SELECT key, value FROM attributes WHERE core = " + std::to_string(id) + " ORDER BY key");
  ASSERT_TRUE(attrs.ok());
  ASSERT_EQ(attrs->rows.size(), 2u);
  EXPECT_EQ(Text(attrs->rows[0][0]), "host");
  EXPECT_EQ(Text(attrs->rows[0][1]), "node-7");
  EXPECT_EQ(Text(attrs->rows[1][0]), "rack");
  EXPECT_EQ(Text(attrs->rows[1][1]), "") << "an attribute's empty value is kept, not NULL";

  auto t = OneRow(ds, "SELECT * FROM threads");
  EXPECT_EQ(t["thread"].integer, 1);
  EXPECT_EQ(t["tid"].integer, 4243);
  EXPECT_EQ(t["crashing"].integer, 1);
  EXPECT_EQ(Text(t["pc"]), "0x401136");
  EXPECT_EQ(Text(t["sp"]), "0x7ffc0000e0f0");
  EXPECT_DOUBLE_EQ(t["cpu_time"].real, 0.25);
  EXPECT_EQ(Text(t["registers"]), R"({"rax":"0x0"})");

  auto f0 = OneRow(ds, "SELECT * FROM frames WHERE \"index\" = 0");
  EXPECT_EQ(f0["thread"].integer, 1);
  EXPECT_EQ(Text(f0["pc"]), "0x401136");
  EXPECT_EQ(Text(f0["module"]), "/usr/bin/prog");
  EXPECT_EQ(Text(f0["offset"]), "0x1136");
  EXPECT_EQ(Text(f0["function"]), "walk");
  EXPECT_EQ(Text(f0["file"]), "walk.c");
  EXPECT_EQ(f0["line"].integer, 13);
  EXPECT_EQ(Text(f0["trust"]), "context");
  EXPECT_EQ(f0["inlined"].integer, 1);
  auto f1 = OneRow(ds, "SELECT * FROM frames WHERE \"index\" = 1");
  EXPECT_EQ(Text(f1["pc"]), "0xdeadbeef");
  for (const char *absent : {"module", "build_id", "offset", "function", "file", "line"})
    EXPECT_TRUE(IsNull(f1[absent])) << absent << " of a frame in no module is NULL";
  EXPECT_EQ(f1["inlined"].integer, 0);

  auto m = OneRow(ds, "SELECT * FROM modules");
  EXPECT_EQ(Text(m["path"]), "/usr/bin/prog");
  EXPECT_EQ(Text(m["base"]), "0x400000");
  EXPECT_EQ(m["size"].integer, 0x5000);
  EXPECT_EQ(Text(m["status"]), "ok");
}

// The workers send records to the writer as JSON: every field survives,
// and a record missing one is refused, naming it.
TEST_F(DatasetRowsTest, TheWorkersJsonCarriesEveryField) {
  const CoreRecord r = EveryFieldSet();
  const nlohmann::json j = RecordToJson(r);
  auto back = RecordFromJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(RecordToJson(*back), j);

  // Written after the round trip, the rows are those of the record itself.
  Dataset ds = Open();
  CoreRecord sent = *back;
  sent.path += ".sent";
  ASSERT_TRUE(ds.Write({r, sent}).ok());
  for (const char *table : {"cores", "attributes", "threads", "frames", "modules"}) {
    std::string key = std::string(table) == "cores" ? "id" : "core";
    auto q = ds.Query(std::string("SELECT * FROM ") + table + " ORDER BY " + key);
    ASSERT_TRUE(q.ok());
    ASSERT_EQ(q->rows.size() % 2, 0u) << table;
    const size_t half = q->rows.size() / 2;
    for (size_t i = 0; i < half; ++i) {
      for (size_t c = 0; c < q->columns.size(); ++c) {
        const std::string &col = q->columns[c];
        if (col == key || (col == "path" && key == "id") || col == "scanned_at") continue;
        const QueryValue &a = q->rows[i][c], &b = q->rows[half + i][c];
        EXPECT_TRUE(a.type == b.type && a.integer == b.integer && a.real == b.real && a.text == b.text)
            << table << "." << col << " differs after the JSON";
      }
    }
  }

  nlohmann::json missing = j;
  missing["frames"][1].erase("trust");
  auto refused = RecordFromJson(missing);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("trust"), std::string::npos) << refused.error().message;
  nlohmann::json not_rows = j;
  not_rows["threads"] = "none";
  EXPECT_FALSE(RecordFromJson(not_rows).ok());
}

}  // namespace
}  // namespace coroner
