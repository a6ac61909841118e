#include "epi/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace coroner {
namespace {

double LogChoose(uint64_t n, uint64_t k) {
  return std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
         std::lgamma(static_cast<double>(n - k) + 1);
}

// log P(X = x) for X ~ Hypergeometric(total, with_value, in_cluster).
double LogPmf(uint64_t x, uint64_t in_cluster, uint64_t with_value, uint64_t total) {
  return LogChoose(with_value, x) + LogChoose(total - with_value, in_cluster - x) - LogChoose(total, in_cluster);
}

// Poisson log-likelihood of `sum` events over `days` at their own rate
// (the terms that do not depend on the rate are left out: they cancel).
double PoissonFit(double sum, double days) { return sum > 0 ? sum * std::log(sum / days) - sum : 0.0; }

}  // namespace

double FisherGreater(uint64_t both, uint64_t in_cluster, uint64_t with_value, uint64_t total) {
  if (total == 0 || in_cluster > total || with_value > total) return 1.0;
  uint64_t lo = in_cluster + with_value > total ? in_cluster + with_value - total : 0;
  uint64_t hi = std::min(in_cluster, with_value);
  if (both <= lo) return 1.0;
  if (both > hi) return 0.0;
  // The terms rise up to the mode and fall past it. Each tail is summed from
  // the end nearer the mode outwards, in log space relative to its first
  // term, so every later term is at most 1 and the sum stays finite: above
  // the mode, the upper tail itself; at or below it, 1 minus the lower tail
  // P(X < both) (summing upwards from far below the mode would pass terms
  // 10^300 times the first and lose the tail).
  uint64_t mode = static_cast<uint64_t>((static_cast<unsigned __int128>(in_cluster) + 1) * (with_value + 1) / (total + 2));
  auto ratio_up = [&](uint64_t x) {  // P(X = x) / P(X = x - 1)
    return static_cast<double>(with_value - x + 1) * static_cast<double>(in_cluster - x + 1) /
           (static_cast<double>(x) * static_cast<double>(total - with_value - in_cluster + x));
  };
  if (both > mode) {
    double sum = 0, term = 1;
    for (uint64_t x = both; x <= hi; ++x) {
      if (x > both) term *= ratio_up(x);
      sum += term;
      if (term < sum * 1e-17 && x > both) break;
    }
    return std::min(1.0, std::exp(LogPmf(both, in_cluster, with_value, total) + std::log(sum)));
  }
  double sum = 0, term = 1;
  for (uint64_t x = both - 1;; --x) {
    if (x < both - 1) term /= ratio_up(x + 1);
    sum += term;
    if ((term < sum * 1e-17 && x < both - 1) || x == lo) break;
  }
  double lower = std::exp(LogPmf(both - 1, in_cluster, with_value, total) + std::log(sum));
  return std::clamp(1.0 - lower, 0.0, 1.0);
}

double BinomialLess(uint64_t successes, uint64_t trials, double q) {
  if (successes >= trials || !(q > 0)) return 1.0;
  if (q >= 1) return 0.0;
  double n = static_cast<double>(trials), sum = 0;
  for (uint64_t x = 0; x <= successes; ++x) {
    double k = static_cast<double>(x);
    sum += std::exp(std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1) + k * std::log(q) +
                    (n - k) * std::log1p(-q));
  }
  return std::min(1.0, sum);
}

double BinomialGreater(uint64_t successes, uint64_t trials, double q) {
  if (successes == 0 || !(q > 0)) return successes == 0 ? 1.0 : 0.0;
  if (successes > trials) return 0.0;
  if (q >= 1) return 1.0;
  // As in FisherGreater: each tail summed outwards from the end nearer the
  // mode, relative to its first term, so no term overflows.
  double n = static_cast<double>(trials), odds = q / (1 - q);
  auto log_pmf = [&](uint64_t x) {
    double k = static_cast<double>(x);
    return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1) + k * std::log(q) +
           (n - k) * std::log1p(-q);
  };
  auto ratio_up = [&](uint64_t x) { return (n - static_cast<double>(x) + 1) / static_cast<double>(x) * odds; };
  auto mode = static_cast<uint64_t>(std::floor((n + 1) * q));
  if (successes > mode) {
    double sum = 0, term = 1;
    for (uint64_t x = successes; x <= trials; ++x) {
      if (x > successes) term *= ratio_up(x);
      sum += term;
      if (term < sum * 1e-17 && x > successes) break;
    }
    return std::min(1.0, std::exp(log_pmf(successes) + std::log(sum)));
  }
  double sum = 0, term = 1;
  for (uint64_t x = successes - 1;; --x) {
    if (x < successes - 1) term /= ratio_up(x + 1);
    sum += term;
    if ((term < sum * 1e-17 && x < successes - 1) || x == 0) break;
  }
  return std::clamp(1.0 - std::exp(log_pmf(successes - 1) + std::log(sum)), 0.0, 1.0);
}

double MantelHaenszelGreater(const std::vector<Stratum>& strata) {
  double observed = 0, expected = 0, variance = 0;
  for (const auto& s : strata) {
    if (s.total < 2) continue;  // a single core tells nothing about association
    double n = static_cast<double>(s.in_cluster), m = static_cast<double>(s.with_value);
    double t = static_cast<double>(s.total);
    observed += static_cast<double>(s.both);
    expected += n * m / t;
    variance += n * m * (t - n) * (t - m) / (t * t * (t - 1));
  }
  if (variance <= 0) return 1.0;
  double z = (observed - expected - 0.5) / std::sqrt(variance);
  return std::clamp(0.5 * std::erfc(z / std::sqrt(2.0)), 0.0, 1.0);
}

std::vector<double> BenjaminiHochberg(const std::vector<double>& p) {
  size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> out(m);
  double running = 1.0;
  for (size_t r = m; r-- > 0;) {
    size_t i = order[r];
    running = std::min(running, p[i] * static_cast<double>(m) / static_cast<double>(r + 1));
    out[i] = std::min(1.0, running);
  }
  return out;
}

std::vector<double> FamilyBenjaminiHochberg(const std::vector<double>& p, const std::vector<size_t>& family,
                                            double alpha) {
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < p.size(); ++i) {
    if (family[i] >= members.size()) members.resize(family[i] + 1);
    members[family[i]].push_back(i);
  }
  std::erase_if(members, [](const std::vector<size_t>& m) { return m.empty(); });
  std::vector<double> simes(members.size());
  for (size_t g = 0; g < members.size(); ++g) {
    std::vector<double> ps;
    for (size_t i : members[g]) ps.push_back(p[i]);
    std::sort(ps.begin(), ps.end());
    double m = static_cast<double>(ps.size()), best = 1.0;
    for (size_t j = 0; j < ps.size(); ++j) best = std::min(best, ps[j] * m / static_cast<double>(j + 1));
    simes[g] = best;
  }
  std::vector<double> selected = BenjaminiHochberg(simes);
  size_t r = static_cast<size_t>(std::count_if(selected.begin(), selected.end(), [&](double q) { return q <= alpha; }));
  double scale = r ? static_cast<double>(members.size()) / static_cast<double>(r) : 1.0;
  std::vector<double> out(p.size(), 1.0);
  for (size_t g = 0; g < members.size(); ++g) {
    std::vector<double> ps;
    for (size_t i : members[g]) ps.push_back(p[i]);
    std::vector<double> within = BenjaminiHochberg(ps);
    for (size_t k = 0; k < members[g].size(); ++k)
      out[members[g][k]] = std::max(selected[g], std::min(1.0, within[k] * scale));
  }
  return out;
}

std::optional<Onset> FindOnset(const std::vector<uint64_t>& daily, double min_log_likelihood) {
  size_t n = daily.size();
  if (n < 2) return std::nullopt;
  double total = 0;
  for (auto c : daily) total += static_cast<double>(c);
  if (total == 0) return std::nullopt;
  double constant = PoissonFit(total, static_cast<double>(n));
  std::optional<Onset> best;
  double before = 0;
  for (size_t d = 1; d < n; ++d) {
    before += static_cast<double>(daily[d - 1]);
    double after = total - before;
    double rb = before / static_cast<double>(d), ra = after / static_cast<double>(n - d);
    if (ra <= rb) continue;  // an onset is a rise
    double ll = PoissonFit(before, static_cast<double>(d)) + PoissonFit(after, static_cast<double>(n - d)) - constant;
    if (!best || ll > best->log_likelihood) best = Onset{d, rb, ra, ll};
  }
  if (!best || best->log_likelihood <= min_log_likelihood) return std::nullopt;
  // The split lands on the first day of the higher rate; when the rate
  // before is zero, that is the first crash.
  return best;
}

}  // namespace coroner
