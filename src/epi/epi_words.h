// Every sentence epi says about a finding, written once from its typed
// reading (epidemiology.h: FindingReading) and shared by the text, JSON,
// Markdown and HTML reports and the hardware verdicts.
#pragma once

#include <string>

#include "epi/epidemiology.h"

namespace coroner {

// The finding's reading in words ("only on host gpu-a-05"); empty without one.
std::string FindingWords(const Finding& f);

}  // namespace coroner
