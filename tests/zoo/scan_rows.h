// A dataset's rows as the tests compare them: one map of column to text
// per core, keyed by path, with the counts and contents of its threads,
// frames, modules and attributes folded in. Columns that depend on the run
// (id, scan time, analysis time, bytes read, mtime) are left out.
#pragma once

#include <map>
#include <string>

namespace coroner::testing {

using Row = std::map<std::string, std::string>;

// `strip` is removed from the front of each path (to compare a dataset of
// URLs with one of files).
std::map<std::string, Row> LoadRows(const std::string& db, const std::string& strip = "");

// EXPECTs that both hold the same paths with the same values, naming the
// first few differences only.
void ExpectSameRows(const std::map<std::string, Row>& got, const std::map<std::string, Row>& want);

}  // namespace coroner::testing
