// The per-core Markdown report (`coroner analyze --format md`), in the
// coredump-debugging workflow's layout: signal, crashing thread, context,
// determinism, the call chain with components, the crashing instruction, the
// environment, root cause, evidence, upstream fix status, next steps.
// Every string that came from the core is escaped.
#pragma once

#include <string>

#include "provenance/components.h"
#include "provenance/source_report.h"
#include "report/core_report.h"
#include "text/text.h"

namespace coroner {

// `sources`, when given, is the source side (files, versions, fix status).
std::string CoreToMarkdown(const CrashAnalysis& analysis, const ComponentMap& components,
                           const SourceReport* sources = nullptr);

}  // namespace coroner
