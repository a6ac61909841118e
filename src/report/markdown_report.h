// The per-core Markdown report (`coroner analyze --format md`), in the
// coredump-debugging workflow's layout: signal, crashing thread, context,
// determinism, the call chain with components, the crashing instruction, the
// environment, root cause, evidence, upstream fix status, next steps.
// Every string that came from the core is escaped.
#pragma once

#include <string>

#include "diagnose/components.h"
#include "report/core_report.h"
#include "text/text.h"

namespace coroner {

std::string CoreToMarkdown(const CoreAnalysis& analysis, const ComponentMap& components);

}  // namespace coroner
