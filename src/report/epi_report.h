// The epidemiology report in four forms: the terminal summary, JSON (the
// contract in docs/epi-json.md), Markdown, and one self-contained HTML file
// with inline SVG charts (daily counts per cluster, host-by-cluster heatmap,
// uptime histogram per cluster). Every string that came from a core or its
// metadata is escaped for the form it goes into.
#pragma once

#include <string>

#include "epi/epidemiology.h"

namespace coroner {

std::string EpiToText(const EpiResult& result);
std::string EpiToJson(const EpiResult& result);
std::string EpiToMarkdown(const EpiResult& result);
std::string EpiToHtml(const EpiResult& result);

// Text made safe for HTML element content and attribute values.
std::string HtmlEscape(const std::string& text);

}  // namespace coroner
