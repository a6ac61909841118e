// Text that leaves coroner: JSON, Markdown, the dataset. Strings taken from
// a core, a module or a metadata file are bytes in no promised encoding and
// may be written by an attacker; these helpers make them safe to emit.
// Every layer may use them (they depend on nothing but nlohmann::json).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace coroner {

// `s` as valid UTF-8: every byte that does not begin a well-formed sequence
// (RFC 3629: no overlong forms, no UTF-16 surrogates, nothing past U+10FFFF)
// and every control character other than tab (C1's too) becomes U+FFFD.
std::string ValidUtf8(std::string_view s);
// The same, keeping the string itself when it is valid already.
std::string ValidUtf8(std::string&& s);
inline std::string ValidUtf8(const std::string& s) { return ValidUtf8(std::string_view(s)); }
inline std::string ValidUtf8(const char* s) { return ValidUtf8(std::string_view(s)); }

// The length of the well-formed UTF-8 sequence that begins at s[i] (1 for
// any ASCII byte), or 0 when none does: the test ValidUtf8 makes, for a
// caller that walks bytes itself.
size_t WellFormedUtf8Length(std::string_view s, size_t i);

// `s` as valid UTF-8 that keeps control characters, for a JSON string (the
// JSON writer escapes them: a newline in a process's argument stays "\n").
std::string ValidUtf8KeepingControls(std::string_view s);

// `s` for a line of text output: valid UTF-8, each control character written
// as an escape (\n, \r, \t, \x1b; C1's U+0080 to U+009F as \x80 to \x9f),
// so that no byte of a core moves the terminal's cursor or starts an escape
// sequence.
std::string EscapedLine(std::string_view s);

// JSON text of `j` (compact when indent < 0). A string that is not valid
// UTF-8 is written with U+FFFD instead of throwing, so that one bad value
// never takes the rest of the output down.
template <class Json>
std::string JsonText(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// Escapes text for Markdown prose and table cells: the characters that
// start markup (\ ` * _ [ ] < > | #) get a backslash; newlines and other
// control characters become spaces. The text is made valid UTF-8 first.
std::string MarkdownEscape(std::string_view text);

// Prose that marks code the way the diagnosis does (`mov (%rax), %rdx`)
// for Markdown: each backtick-delimited part becomes a code span
// (MarkdownCode), the rest is escaped (MarkdownEscape). An odd number of
// backticks is not markup: all of it is escaped.
std::string MarkdownProse(std::string_view text);

// `text` as one Markdown code span: fenced by a run of backticks longer than
// any run inside it, so nothing in it can close the span; line breaks become
// spaces (a span is one line) and the text is made valid UTF-8.
std::string MarkdownCode(std::string_view text);

// Inside a fenced code block (``` lines) only a line that opens with a fence
// can break out: such runs are replaced, and the text made valid UTF-8.
std::string MarkdownFenced(std::string_view text);

// The last component of a path ("libc.so.6" of "/lib/x86_64-linux-gnu/
// libc.so.6/"): trailing slashes dropped; the path itself when it has no
// slash; "/" for the root.
std::string Basename(std::string_view path);

}  // namespace coroner
