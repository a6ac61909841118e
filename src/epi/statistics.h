// The statistics `coroner epi` rests on: Fisher's exact test for a 2x2
// table of "in this cluster / not" by "has this attribute value / not",
// the Benjamini-Hochberg adjustment over every test made, and the onset of
// a cluster's daily counts (a Poisson change point).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace coroner {

// One-sided (enrichment) Fisher exact test: with `total` cores of which
// `with_value` have the value and `in_cluster` are in the cluster, the
// probability that `both` or more of the cluster have the value under the
// hypergeometric null. Exact to double precision; values below ~1e-308
// come back as 0.
double FisherGreater(uint64_t both, uint64_t in_cluster, uint64_t with_value, uint64_t total);

// One stratum's 2x2 table for the Cochran-Mantel-Haenszel test: of `total`
// cores, `in_cluster` are the cluster's, `with_value` have the value, `both`
// are both.
struct Stratum {
  uint64_t both = 0, in_cluster = 0, with_value = 0, total = 0;
};

// The one-sided Cochran-Mantel-Haenszel test that the value is over-
// represented in the cluster within every stratum together (normal
// approximation with continuity correction): P(Z >= z). 1 when the strata
// carry no information (zero variance).
double MantelHaenszelGreater(const std::vector<Stratum>& strata);

// P(X >= successes) for X ~ Binomial(trials, q): the exact conditional test
// that two Poisson rates are equal, one-sided. Of `trials` crashes over an
// exposure (host-days), `successes` fell on a part of it that is a share `q`
// of the whole; with one rate everywhere, each crash lands there with
// probability q. Exact to double precision, like FisherGreater.
double BinomialGreater(uint64_t successes, uint64_t trials, double q);

// P(X <= successes) for X ~ Binomial(trials, q), summed term by term in
// logs: exact where 1 - BinomialGreater would round a tiny tail to 0.
double BinomialLess(uint64_t successes, uint64_t trials, double q);

// Benjamini-Hochberg adjusted p-values, in the order given.
std::vector<double> BenjaminiHochberg(const std::vector<double>& p);

// Two-level control for families of tests (Benjamini & Bogomolov, 2014):
// each family (epi's: one attribute of one cluster) is first tested as a
// whole with Simes' combination of its p-values, min over j of m p_(j) / j;
// Benjamini-Hochberg over the families at `alpha` selects R of the G; within
// a selected family, Benjamini-Hochberg at alpha R / G. The adjusted p of a
// test is the larger of its family's adjusted Simes p and its own
// within-family adjusted p times G / R, so that it is at most alpha exactly
// when both levels keep it. One host of sixty that a background cluster
// happens to fall on four times is no longer a finding: the attribute
// `host` as a whole is not over-represented. `family[i]` numbers test i's
// family.
std::vector<double> FamilyBenjaminiHochberg(const std::vector<double>& p, const std::vector<size_t>& family,
                                            double alpha);

struct Onset {
  size_t day = 0;              // index into the daily counts
  double rate_before = 0;      // crashes per day before it
  double rate_after = 0;       // and from it on
  double log_likelihood = 0;   // ratio of the change-point model to a constant rate
};

// The first day the counts depart from their rate before it: the split that
// maximizes the likelihood of a rate before and a higher rate after, kept
// when it beats a constant rate by more than `min_log_likelihood` (natural
// log; the default, ln 1000, is a likelihood ratio of more than 1,000, as
// docs/epi-json.md says). nullopt when the counts do not change, or there is
// nothing before the first crash.
inline constexpr double kOnsetLogLikelihood = 6.907755278982137;  // ln 1000
std::optional<Onset> FindOnset(const std::vector<uint64_t>& daily, double min_log_likelihood = kOnsetLogLikelihood);

}  // namespace coroner
