// The per-core Markdown report (`coroner analyze --format md`), in the
// coredump-debugging workflow's layout: signal, crashing thread, context,
// determinism, the call chain with components, the crashing instruction, the
// environment, root cause, evidence, upstream fix status, next steps.
// Every string that came from the core is escaped.
#pragma once

#include <string>

#include "diagnose/components.h"
#include "report/core_report.h"

namespace coroner {

std::string CoreToMarkdown(const CoreAnalysis& analysis, const ComponentMap& components);

// Escapes text for Markdown prose and table cells: the characters that
// start markup (\ ` * _ [ ] < > | #) get a backslash; newlines become spaces.
std::string MarkdownEscape(const std::string& text);

}  // namespace coroner
