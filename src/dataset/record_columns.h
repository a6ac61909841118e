// The one definition of the dataset's rows: each field of a CoreRecord and
// of its child rows, with the column it is stored in. The SQL schema, the
// writer's inserts (dataset.cc) and the named JSON the scan's workers send
// the writer (core_record.cc) are all generated from these lists, so a
// field added here is created, written, sent and read back everywhere.
// docs/dataset.md describes every column (a test checks that it names each).
//
// Addresses (pc, sp, base, offset, fault addresses) are stored as hex text,
// as gdb prints them: SQLite's integers are signed 64-bit, so an address
// at or above 2^63 (a kernel address, a pointer with a high bit flipped)
// would come back negative, and `0x7f3a...` is what an engineer greps for.
#pragma once

#include "dataset/core_record.h"

namespace coroner {

// How a field becomes an SQL value.
enum class ColumnForm {
  kValue,       // as it is: an integer, a real, a text (a string stays text even when empty)
  kOrNull,      // as it is, but an empty string or a zero integer is NULL
  kHex,         // an address: hex text, NULL when absent
  kIso8601,     // seconds since the epoch: ISO 8601 UTC text, NULL when absent
  kLines,       // strings joined one per line, NULL when there are none
  kSignalName,  // a signal number's name (SIGSEGV): derived, so never sent as JSON
};

struct Column {
  const char* name;  // the SQL column, and the field's key in the workers' JSON
  const char* sql;   // its type and constraints
  ColumnForm form = ColumnForm::kValue;
};

// A column only the database holds: it is computed from another field.
constexpr bool Derived(const Column& c) { return c.form == ColumnForm::kSignalName; }

// A table: its key columns ahead of the row's fields, the columns the
// writer fills itself after them, and its constraints.
struct TableShape {
  const char* name;
  const char* leading;   // "id INTEGER PRIMARY KEY", or the reference to the core
  const char* trailing;  // a column the writer fills (scanned_at), or nullptr
  const char* options;   // constraints and table options after the columns, or ""
};

inline constexpr TableShape kCoresTable{"cores", "id INTEGER PRIMARY KEY", "scanned_at TEXT NOT NULL", ""};
inline constexpr const char* kCoreReference = "core INTEGER NOT NULL REFERENCES cores(id) ON DELETE CASCADE";
inline constexpr TableShape kAttributesTable{"attributes", kCoreReference, nullptr,
                                             ",\n  PRIMARY KEY (core, key)) WITHOUT ROWID"};
inline constexpr TableShape kThreadsTable{"threads", kCoreReference, nullptr,
                                          ",\n  PRIMARY KEY (core, thread)) WITHOUT ROWID"};
inline constexpr TableShape kFramesTable{"frames", kCoreReference, nullptr,
                                         ",\n  PRIMARY KEY (core, thread, \"index\")) WITHOUT ROWID"};
inline constexpr TableShape kModulesTable{"modules", kCoreReference, nullptr, ""};

// The `cores` row: f(Column, field) for each column in the table's order.
template <typename R, typename F>
void CoreColumns(R& r, F&& f) {
  using enum ColumnForm;
  f(Column{"path", "TEXT NOT NULL UNIQUE"}, r.path);
  f(Column{"source", "TEXT NOT NULL"}, r.source);
  f(Column{"size", "INTEGER"}, r.size);
  f(Column{"mtime_ns", "INTEGER"}, r.mtime_ns);
  f(Column{"bytes_read", "INTEGER NOT NULL"}, r.bytes_read);
  f(Column{"status", "TEXT NOT NULL CHECK (status IN ('ok', 'partial', 'error'))"}, r.status);
  f(Column{"error", "TEXT", kOrNull}, r.error);
  f(Column{"warnings", "TEXT", kLines}, r.warnings);
  f(Column{"time", "TEXT", kIso8601}, r.time);
  f(Column{"time_source", "TEXT", kOrNull}, r.time_source);
  f(Column{"uptime", "INTEGER"}, r.uptime);
  f(Column{"pid", "INTEGER"}, r.pid);
  f(Column{"comm", "TEXT", kOrNull}, r.comm);
  f(Column{"signal", "INTEGER"}, r.signal);
  f(Column{"signal_name", "TEXT", kSignalName}, r.signal);
  f(Column{"si_code", "INTEGER"}, r.si_code);
  f(Column{"fault_address", "TEXT", kHex}, r.fault_address);
  f(Column{"real_signal", "INTEGER"}, r.real_signal);
  f(Column{"real_si_code", "INTEGER"}, r.real_si_code);
  f(Column{"real_fault_address", "TEXT", kHex}, r.real_fault_address);
  f(Column{"syndrome", "TEXT", kOrNull}, r.syndrome);
  f(Column{"context", "TEXT", kOrNull}, r.context);
  f(Column{"signature", "TEXT", kOrNull}, r.signature);
  f(Column{"crashing_tid", "INTEGER"}, r.crashing_tid);
  f(Column{"exe", "TEXT", kOrNull}, r.exe);
  f(Column{"build_id", "TEXT", kOrNull}, r.build_id);
  f(Column{"truncated", "INTEGER NOT NULL"}, r.truncated);
  f(Column{"cpu_time", "REAL"}, r.cpu_seconds);
  f(Column{"analysis_ms", "REAL"}, r.analysis_ms);
}

// The child rows, each after its table's key column `core`.
template <typename R, typename F>
void RowColumns(R& t, F&& f) {
  using enum ColumnForm;
  using Row = std::remove_const_t<R>;
  if constexpr (std::is_same_v<Row, AttributeRow>) {
    f(Column{"key", "TEXT NOT NULL"}, t.key);
    f(Column{"value", "TEXT"}, t.value);
  } else if constexpr (std::is_same_v<Row, ThreadRow>) {
    f(Column{"thread", "INTEGER NOT NULL"}, t.index);
    f(Column{"tid", "INTEGER"}, t.tid);
    f(Column{"crashing", "INTEGER NOT NULL"}, t.crashing);
    f(Column{"pc", "TEXT", kHex}, t.pc);
    f(Column{"sp", "TEXT", kHex}, t.sp);
    f(Column{"cpu_time", "REAL"}, t.cpu_seconds);
    f(Column{"registers", "TEXT"}, t.registers);
  } else if constexpr (std::is_same_v<Row, FrameRow>) {
    f(Column{"thread", "INTEGER NOT NULL"}, t.thread);
    f(Column{"index", "INTEGER NOT NULL"}, t.index);
    f(Column{"pc", "TEXT NOT NULL", kHex}, t.pc);
    f(Column{"module", "TEXT", kOrNull}, t.module);
    f(Column{"build_id", "TEXT", kOrNull}, t.build_id);
    f(Column{"offset", "TEXT", kHex}, t.offset);
    f(Column{"function", "TEXT", kOrNull}, t.function);
    f(Column{"file", "TEXT", kOrNull}, t.file);
    f(Column{"line", "INTEGER", kOrNull}, t.line);
    f(Column{"trust", "TEXT NOT NULL"}, t.trust);
    f(Column{"inlined", "INTEGER NOT NULL"}, t.inlined);
  } else {
    static_assert(std::is_same_v<Row, ModuleRow>);
    f(Column{"path", "TEXT NOT NULL"}, t.path);
    f(Column{"base", "TEXT NOT NULL", kHex}, t.base);
    f(Column{"size", "INTEGER"}, t.size);
    f(Column{"build_id", "TEXT", kOrNull}, t.build_id);
    f(Column{"status", "TEXT", kOrNull}, t.status);
  }
}

}  // namespace coroner
