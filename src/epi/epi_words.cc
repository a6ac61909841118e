#include "epi/epi_words.h"

#include <fmt/format.h>

namespace coroner {
namespace {

std::string Percent(double share) { return fmt::format("{:.0f}%", share * 100); }

// 3600 -> "1 hour", 172800 -> "2 days".
std::string Duration(int64_t seconds) {
  auto unit = [](int64_t n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); };
  if (seconds % 86400 == 0) return unit(seconds / 86400, "day");
  if (seconds % 3600 == 0) return unit(seconds / 3600, "hour");
  if (seconds % 60 == 0) return unit(seconds / 60, "minute");
  return unit(seconds, "second");
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

std::string FindingWords(const Finding& f) {
  if (!f.reading) return "";
  const std::string on = f.attribute + " " + f.value;
  return std::visit(
      Overloaded{
          [&](const reading::BeganWith&) { return "began with " + on; },
          [&](const reading::ExplainedBy& e) { return "explained by " + e.attribute + " = " + e.value; },
          [&](const reading::NeverUpLonger& n) { return "never on nodes up more than " + Duration(n.seconds); },
          [&](const reading::OnHostsWithHardwareErrors& h) {
            return Percent(h.share) + " of this cluster on hosts with hardware errors in the " +
                   std::to_string(h.window_days) + " days before — suspect hardware";
          },
          [&](const reading::OnOneMachine& m) {
            return Percent(m.share) + " of this cluster on one " + f.attribute + " — suspect hardware";
          },
          [&](const reading::OnlyOn&) { return "only on " + on; },
          [&](const reading::MostlyOn& m) {
            std::string s = Percent(m.share) + " of this cluster on " + on + " (fleet: " + Percent(m.baseline_share) + ")";
            if (m.rate_ratio) s += fmt::format("; {:.1f} times the crashes per host-day elsewhere", *m.rate_ratio);
            return s;
          },
      },
      *f.reading);
}

}  // namespace coroner
