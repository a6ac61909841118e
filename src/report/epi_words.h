// Every sentence epi says about a finding, a hardware verdict and a
// cluster's GPUs, written once from its typed facts (epi/readings.h,
// epi/hardware_verdicts.h) and shared by the text, JSON, Markdown and HTML
// reports.
#pragma once

#include <map>
#include <string>

#include "epi/epidemiology.h"

namespace coroner {

// A finding's reading in words ("only on host gpu-a-05").
std::string FindingWords(const std::string& attribute, const std::string& value, const FindingReading& reading);
// The same for a finding; empty without a reading.
std::string FindingWords(const Finding& f);

// "began with release r42 (0 crashes in 310 host-days before, 58 after)"
std::string OnsetWords(const ChangeOnset& onset);

// "collateral of c1 (rank 3 on host h died first)"; empty when the cluster
// is not collateral.
std::string CollateralWords(const Cluster& c);

// One piece of a verdict's evidence, as a line under the verdict.
std::string EvidenceWords(const VerdictFact& fact);
// The verdict in one line ("host-7: 3 on CPU 5, ... — suspect hardware;
// drain it"); empty when the host is not called suspect.
std::string VerdictWords(const HostVerdict& v);

// A GPU by its owner, "HOST GPU" or "MACHINE GPU"; and a cluster's GPUs so
// named.
std::string GpuPlaceWords(const std::pair<std::string, std::string>& owner_gpu);
std::map<std::string, uint64_t> GpusByName(const GpuEvents& g);

// What a cluster's GPU lines say ("4 of 5 on GPU h 0000:41:00.0: same GPU
// repeatedly — suspect the GPU"); empty without a reading.
std::string GpuWords(const GpuEvents& g);

}  // namespace coroner
