// The statistics against exact arithmetic and worked examples, and the
// kernel-log and rules parsers against lines whose meaning is known.
#include "epi/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "dataset/metadata.h"
#include "dataset/timestamps.h"
#include "epi/exposure.h"
#include "epi/kernel_log.h"
#include "epi/rules.h"

namespace coroner {
namespace {

unsigned __int128 Choose(unsigned n, unsigned k) {
  if (k > n) return 0;
  unsigned __int128 c = 1;
  for (unsigned i = 1; i <= k; ++i) c = c * (n - k + i) / i;  // exact at every step
  return c;
}

// P(X >= a) as an exact ratio of integers, for small tables.
double ExactUpperTail(unsigned a, unsigned n, unsigned k, unsigned total) {
  unsigned __int128 num = 0;
  for (unsigned x = a; x <= std::min(n, k); ++x) num += Choose(k, x) * Choose(total - k, n - x);
  return static_cast<double>(static_cast<long double>(num) / static_cast<long double>(Choose(total, n)));
}

TEST(Fisher, LadyTastingTea) {
  // 8 cups, 4 with milk first, 4 chosen, 3 right: 17/70 (Fisher, 1935).
  EXPECT_NEAR(FisherGreater(3, 4, 4, 8), 17.0 / 70.0, 1e-12);
  EXPECT_NEAR(FisherGreater(4, 4, 4, 8), 1.0 / 70.0, 1e-12);
  EXPECT_DOUBLE_EQ(FisherGreater(0, 4, 4, 8), 1.0);
}

TEST(Fisher, MatchesExactSumsOnEveryTableUpTo40) {
  size_t checked = 0;
  for (unsigned total = 1; total <= 40; total += 3)
    for (unsigned n = 0; n <= total; n += 2)
      for (unsigned k = 0; k <= total; k += 3)
        for (unsigned a = 0; a <= std::min(n, k); ++a) {
          double want = ExactUpperTail(a, n, k, total), got = FisherGreater(a, n, k, total);
          ASSERT_NEAR(got, want, 1e-9 * std::max(want, 1e-300)) << a << " " << n << " " << k << " " << total;
          ++checked;
        }
  EXPECT_GT(checked, 10000u);
}

TEST(Fisher, TinyTailsStayPositiveAndOrdered) {
  // 40 of a 40-core cluster on a value 18% of 300 cores have.
  double p = FisherGreater(40, 40, 54, 300);
  EXPECT_GT(p, 0);
  EXPECT_LT(p, 1e-30);
  EXPECT_LT(FisherGreater(40, 40, 54, 300), FisherGreater(39, 40, 54, 300));
  // A million cores: finite, and past the count it is impossible.
  EXPECT_GT(FisherGreater(500, 1000, 200000, 1000000), 0);
  EXPECT_EQ(FisherGreater(1001, 1000, 200000, 1000000), 0);
}

// Far below the mode the terms from the observed count upwards rise by
// 10^300 and more before they fall: a value at 27% of a cluster against 50% of
// the fleet was once reported over-represented with p 4.8e-18. Expected
// values are exact sums of binomial coefficients (Python's math.comb and
// fractions), to 1e-12 relative.
TEST(Fisher, TailsOnBothSidesOfTheModeAreExact) {
  EXPECT_DOUBLE_EQ(FisherGreater(1350, 5000, 10000, 20000), 1.0);
  struct Case {
    uint64_t a, n, k, total;
    double want;
  };
  for (Case c : {Case{2600, 5000, 10000, 20000, 0.0005771090523223458}, Case{2540, 5000, 10000, 20000, 0.09851266971558555},
                 Case{2500, 5000, 10000, 20000, 0.5065143472886728}, Case{2450, 5000, 10000, 20000, 0.950462093296361},
                 Case{60, 100, 300, 600, 0.018515299971887896}, Case{45, 100, 300, 600, 0.885955581828204}}) {
    EXPECT_NEAR(FisherGreater(c.a, c.n, c.k, c.total), c.want, 1e-10 * c.want) << c.a << " " << c.n;
  }
  // Monotone in the observed count across the mode.
  double last = 1.0;
  for (uint64_t a = 2300; a <= 2700; a += 10) {
    double p = FisherGreater(a, 5000, 10000, 20000);
    EXPECT_LE(p, last) << a;
    last = p;
  }
}

// P(X >= a), X ~ Binomial(n, r/s), as an exact ratio of integers.
double ExactBinomialTail(unsigned a, unsigned n, unsigned r, unsigned s) {
  unsigned __int128 num = 0, den = 1;
  for (unsigned i = 0; i < n; ++i) den *= s;
  for (unsigned k = a; k <= n; ++k) {
    unsigned __int128 term = Choose(n, k);
    for (unsigned i = 0; i < k; ++i) term *= r;
    for (unsigned i = 0; i < n - k; ++i) term *= s - r;
    num += term;
  }
  return static_cast<double>(static_cast<long double>(num) / static_cast<long double>(den));
}

// The exact Poisson rate test: on every table small enough for exact
// integers, and far from the mode on both sides against exact rational sums
// (Python's fractions and math.comb), to 1e-10 relative.
TEST(BinomialRateTest, MatchesExactSums) {
  size_t checked = 0;
  for (unsigned s : {2u, 3u, 4u, 7u, 8u})
    for (unsigned r = 1; r < s; ++r)
      for (unsigned n = 0; n <= 30; n += 3)
        for (unsigned a = 0; a <= n; ++a) {
          double want = ExactBinomialTail(a, n, r, s), got = BinomialGreater(a, n, double(r) / double(s));
          ASSERT_NEAR(got, want, 1e-10 * std::max(want, 1e-300)) << a << " " << n << " " << r << "/" << s;
          ++checked;
        }
  EXPECT_GT(checked, 2000u);
  struct Case {
    uint64_t a, n;
    double q, want;
  };
  for (Case c : {Case{60, 60, 1.0 / 3, 2.3589824875925728e-29}, Case{45, 200, 0.25, 0.8147615148693078},
                 Case{80, 200, 0.25, 2.2251883747785036e-06}, Case{20, 200, 0.25, 0.999999977278721},
                 Case{3, 1000, 0.01, 0.9973205680062085}, Case{560, 1000, 0.5, 8.252493527522651e-05},
                 Case{1, 5, 0.001, 0.004990009995001}})
    EXPECT_NEAR(BinomialGreater(c.a, c.n, c.q), c.want, 1e-10 * c.want) << c.a << " " << c.n << " " << c.q;
  // The edges: nothing observed, no exposure with the value, all of it.
  EXPECT_EQ(BinomialGreater(0, 10, 0.3), 1.0);
  EXPECT_EQ(BinomialGreater(1, 10, 0.0), 0.0);
  EXPECT_EQ(BinomialGreater(11, 10, 0.3), 0.0);
  EXPECT_EQ(BinomialGreater(10, 10, 1.0), 1.0);
  // A million crashes: finite and positive far out.
  double p = BinomialGreater(22000, 1000000, 0.02);
  EXPECT_GT(p, 0);
  EXPECT_LT(p, 1e-30);
  EXPECT_LT(BinomialGreater(22001, 1000000, 0.02), p);
}

// Host-days from an inventory: rows clipped to the window, a row without a
// bound reaching its edge, overlapping rows of a host counted once, a row
// that ends before it starts ignored, and a repeated column taking its first
// value, as the scan's join does.
TEST(Exposure, HostDaysFromPlacements) {
  auto inv = Inventory::Parse(
      "host,machine,region,region,valid_from,valid_to\n"
      "a,m1,eu,us,2026-09-25T00:00:00Z,2026-10-05T00:00:00Z\n"   // 4 days in the window
      "a,m2,eu,us,2026-10-03T00:00:00Z,2026-10-08T00:00:00Z\n"   // overlaps: 3 more days
      "b,m1,us,eu,2026-10-02T12:00:00Z,\n"                       // to the window's end: 8.5 days
      "c,m3,us,us,2026-10-09T00:00:00Z,2026-10-02T00:00:00Z\n"); // ends before it starts
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  auto begin = ParseIso8601("2026-10-01T00:00:00Z"), end = ParseIso8601("2026-10-11T00:00:00Z");
  ASSERT_TRUE(begin && end);
  Exposure e(*inv, *begin, *end);
  EXPECT_DOUBLE_EQ(e.HostDays("a", *begin, *end), 7.0);
  EXPECT_DOUBLE_EQ(e.HostDays("b", *begin, *end), 8.5);
  EXPECT_DOUBLE_EQ(e.HostDays("c", *begin, *end), 0.0);
  EXPECT_DOUBLE_EQ(e.Days(*begin, *end), 15.5);
  EXPECT_DOUBLE_EQ(e.Days("region", "eu", *begin, *end), 7.0);
  EXPECT_DOUBLE_EQ(e.Days("region", "us", *begin, *end), 8.5);
  // The overlap went to the row that started first (m1), the rest to m2.
  EXPECT_DOUBLE_EQ(e.Days("machine", "m1", *begin, *end), 4.0 + 8.5);
  EXPECT_DOUBLE_EQ(e.Days("machine", "m2", *begin, *end), 3.0);
  EXPECT_DOUBLE_EQ(e.Days("host", "a", *begin + 86400, *begin + 3 * 86400), 2.0);
  EXPECT_EQ(e.Hosts(*begin, *end), 2u);
  EXPECT_EQ(e.Hosts(*begin, *begin + 86400), 1u);
  EXPECT_TRUE(e.Describes("machine"));
  EXPECT_TRUE(e.Describes("host"));
  EXPECT_FALSE(e.Describes("kernel"));
  EXPECT_TRUE(e.Placed("a", *begin + 6 * 86400));
  EXPECT_FALSE(e.Placed("a", *begin + 7 * 86400));
  EXPECT_FALSE(e.Placed("b", *begin + 86400));
  EXPECT_TRUE(e.Placed("b", *begin + 2 * 86400 + 43200));
  EXPECT_FALSE(e.Placed("c", *begin + 5 * 86400));
  EXPECT_FALSE(e.Placed("nobody", *begin));
}

// The onset needs a likelihood ratio over 1,000 (docs/epi-json.md): 0, 8, 8,
// 8 has 996.6 (ln 6.9044) and was once kept; 0, 9, 9, 9 has 2,366.
TEST(Onset, NeedsALikelihoodRatioOverAThousand) {
  EXPECT_FALSE(FindOnset({0, 8, 8, 8}).has_value());
  auto strong = FindOnset({0, 9, 9, 9});
  ASSERT_TRUE(strong.has_value());
  EXPECT_EQ(strong->day, 1u);
  EXPECT_NEAR(strong->log_likelihood, 27 * std::log(9.0) - 27 * std::log(27.0 / 4), 1e-12);
}

// Cochran-Mantel-Haenszel, one-sided: on one large stratum it approximates
// Fisher's exact test (to a few percent); strata in which the value is
// independent of the cluster give no evidence, however skewed the pooled
// table is (Simpson's confounder); no variance, no evidence.
TEST(MantelHaenszel, AgreesWithFisherAndSeesThroughAConfounder) {
  for (auto [a, n, m, t] : {std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>{60, 100, 300, 600},
                            {2600, 5000, 10000, 20000}, {45, 100, 300, 600}}) {
    double fisher = FisherGreater(a, n, m, t), cmh = MantelHaenszelGreater({{a, n, m, t}});
    EXPECT_NEAR(cmh, fisher, 0.05 * fisher) << a;
  }
  // Pooled: 90 of the cluster's 100 cores have the value, 100 of the other
  // 100 000 do: Fisher finds it over-represented beyond doubt. Within the
  // strata of a confounder (the 90 cluster cores and the 100 others with the
  // value all on one machine of 200 cores, cluster or not), the value is
  // spread as chance spreads it.
  EXPECT_LT(FisherGreater(90, 100, 190, 100100), 1e-100);
  double p = MantelHaenszelGreater({{90, 95, 180, 190}, {0, 5, 10, 99910}});
  EXPECT_GT(p, 0.05);
  EXPECT_DOUBLE_EQ(MantelHaenszelGreater({{5, 5, 10, 10}}), 1.0);  // every core has the value
  EXPECT_DOUBLE_EQ(MantelHaenszelGreater({}), 1.0);
}

TEST(BenjaminiHochberg, WorkedExample) {
  // Sorted: 0.005 -> 0.02, 0.01 -> 0.02, 0.03 -> 0.04, 0.04 -> 0.04.
  auto q = BenjaminiHochberg({0.01, 0.04, 0.03, 0.005});
  ASSERT_EQ(q.size(), 4u);
  EXPECT_DOUBLE_EQ(q[0], 0.02);
  EXPECT_DOUBLE_EQ(q[1], 0.04);
  EXPECT_DOUBLE_EQ(q[2], 0.04);
  EXPECT_DOUBLE_EQ(q[3], 0.02);
  EXPECT_DOUBLE_EQ(BenjaminiHochberg({0.9, 0.8})[0], 0.9);
}

// Three families: A {0.001, 0.02}, B {0.004}, C {0.3, 0.5, 0.04}. Simes:
// A min(2 x 0.001 / 1, 2 x 0.02 / 2) = 0.002, B 0.004, C min(3 x 0.04, 3 x
// 0.3 / 2, 3 x 0.5 / 3) = 0.12. BH over the families: 0.006, 0.006, 0.12;
// at 0.05 it selects R = 2 of G = 3, so within-family BH is scaled by 1.5:
// A 0.002 -> 0.003 (its family's 0.006 is larger), 0.02 -> 0.03; B 0.004 ->
// 0.006; C (not selected) 0.12 -> 0.18, 0.45 -> 0.675, 0.5 -> 0.75.
TEST(FamilyBenjaminiHochberg, WorkedExample) {
  auto q = FamilyBenjaminiHochberg({0.001, 0.3, 0.004, 0.02, 0.5, 0.04}, {0, 2, 1, 0, 2, 2}, 0.05);
  std::vector<double> want = {0.006, 0.675, 0.006, 0.03, 0.75, 0.18};
  ASSERT_EQ(q.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(q[i], want[i], 1e-12) << i;
  // One family is plain Benjamini-Hochberg (selected, G / R = 1).
  auto one = FamilyBenjaminiHochberg({0.01, 0.04, 0.03, 0.005}, {0, 0, 0, 0}, 0.05);
  auto plain = BenjaminiHochberg({0.01, 0.04, 0.03, 0.005});
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(one[i], plain[i], 1e-15) << i;
  // No family selected: nothing is at most alpha.
  for (double x : FamilyBenjaminiHochberg({0.2, 0.3}, {0, 1}, 0.05)) EXPECT_GT(x, 0.05);
}

TEST(Onset, FromZeroFromABaselineAndNone) {
  std::vector<uint64_t> from_zero(20, 0);
  for (size_t d = 10; d < 20; ++d) from_zero[d] = 3;
  auto a = FindOnset(from_zero);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->day, 10u);
  EXPECT_DOUBLE_EQ(a->rate_before, 0);
  EXPECT_DOUBLE_EQ(a->rate_after, 3);

  std::vector<uint64_t> baseline(30, 1);
  for (size_t d = 12; d < 30; ++d) baseline[d] = 6;
  auto b = FindOnset(baseline);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->day, 12u);

  EXPECT_FALSE(FindOnset(std::vector<uint64_t>(30, 2)));
  EXPECT_FALSE(FindOnset({2, 1, 3, 2, 2, 1, 2, 3, 2, 2}));  // noise, no rise
  EXPECT_FALSE(FindOnset({}));
  EXPECT_FALSE(FindOnset({0, 0, 0}));
}

// 2026-10-14T03:12:00Z: `date -u -d 2026-10-14T03:12:00Z +%s`.
constexpr int64_t kOct14 = 1791947520;

TEST(KernelLog, EveryLineForm) {
  std::string text =
      "2026-10-14T03:12:00+0000 we-node-07 kernel: mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5\n"
      "2026-10-14T03:12:00+0000 we-node-07 kernel: eth0: Link is Up - 100Gbps/Full\n"
      "Oct 14 03:12:00 we-node-08 kernel: EDAC MC0: 1 CE memory read error on CPU_SrcID#0\n"
      "[Wed Oct 14 03:12:00 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
      "[12345.678901] amdgpu 0000:03:00.0: amdgpu: [gfxhub0] page fault (src_id:0 ring:24 vmid:1)\n"
      "[12346.000000] amdgpu 0000:03:00.0: amdgpu: SMU is initialized successfully!\n"
      "2026-10-14T05:12:00.123456+02:00 we-node-09 kernel: mce: [Hardware Error]: Machine check events logged\r\n";
  KernelLog log = ParseKernelLog(text, "gpu-1", 2026);
  EXPECT_EQ(log.lines, 7u);
  ASSERT_EQ(log.events.size(), 5u);
  EXPECT_EQ(log.events[0].host, "we-node-07");
  EXPECT_EQ(EventKindName(log.events[0].kind), "mce");
  EXPECT_EQ(log.events[0].time, kOct14);
  EXPECT_EQ(log.events[1].host, "we-node-08");
  EXPECT_EQ(EventKindName(log.events[1].kind), "edac");
  EXPECT_EQ(log.events[1].time, kOct14);
  EXPECT_EQ(log.events[2].host, "gpu-1");
  EXPECT_EQ(EventKindName(log.events[2].kind), "gpu-xid");
  EXPECT_EQ(log.events[2].time, kOct14);
  EXPECT_EQ(EventKindName(log.events[3].kind), "gpu-amdgpu");
  EXPECT_FALSE(log.events[3].time);
  EXPECT_EQ(log.events[4].host, "we-node-09");
  EXPECT_EQ(log.events[4].time, kOct14);  // 05:12 at +02:00
  ASSERT_EQ(log.warnings.size(), 1u);     // the raw dmesg event has no wall-clock time
}

TEST(KernelLog, HostileLinesAreBoundedAndNeverCrash) {
  std::string text = "[\n]\n[ \nOct 99 99:99:99 h kernel: Machine check: bad date\n9999-99-99T99:99:99+9999 h Machine check\n";
  text += std::string(1 << 20, 'x') + "Machine check\n";  // past the 64 KiB line cap: the marker is cut off
  for (int i = 0; i < 4096; ++i) text += static_cast<char>((i * 7919) & 0xff);
  text += "\nEDAC MC0: 1 UE tail without a newline";
  KernelLog log = ParseKernelLog(text, "h", 2026);
  ASSERT_GE(log.events.size(), 3u);
  for (const auto& e : log.events) EXPECT_LE(e.line.size(), 300u);
  EXPECT_FALSE(log.events[0].time);  // "Oct 99" is not a date
  EXPECT_EQ(EventKindName(log.events.back().kind), "edac");
}

TEST(Rules, ParsesLabelsAndExclusionsAndRejectsTheRest) {
  auto r = ParseRules(
      "[[exclude]]\nname = \"chaos kills\"\nwhere = \"comm = 'chaos'\"\n"
      "[[label]]\nname = \"setcontext race\"\nwhere = \"syndrome = 'return-to-null'\"\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->rules.size(), 2u);
  EXPECT_EQ(r->rules[0].kind, Rule::Kind::kExclude);
  EXPECT_EQ(r->rules[0].where, "comm = 'chaos'");
  EXPECT_EQ(r->rules[1].kind, Rule::Kind::kLabel);
  EXPECT_EQ(r->rules[1].name, "setcontext race");
  auto bad = ParseRules("[[label]]\nname = \"x\"\nwhere = \n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("rules: line 3"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(ParseRules("[[label]]\nname = \"x\"\n").ok());                      // no where
  EXPECT_FALSE(ParseRules("[[ignore]]\nname = \"x\"\nwhere = \"1\"\n").ok());      // unknown section
  EXPECT_FALSE(ParseRules("[[label]]\nname = \"x\"\nwhere = \"1\"\nwhen = 2\n").ok());  // unknown key
  EXPECT_FALSE(ParseRules("label = 3\n").ok());
  auto skip = ParseRules("[signature]\nskip = [\"a\", \"b\"]\nskip_prefixes = [\"folly::\"]\n");
  ASSERT_TRUE(skip.ok()) << skip.error().message;
  EXPECT_EQ(skip->skip, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(skip->skip_prefixes, (std::vector<std::string>{"folly::"}));
  EXPECT_FALSE(ParseRules("[signature]\nskip = [1]\n").ok());
  EXPECT_FALSE(ParseRules("[signature]\nkeep = [\"a\"]\n").ok());
}

}  // namespace
}  // namespace coroner
