#include "report/epi_report.h"

#include "report/epi_words.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "dataset/timestamps.h"
#include "text/text.h"

namespace coroner {
namespace {

// Clusters grouped under their syndrome, the largest syndrome first, so one
// syndrome hiding two populations shows as two rows under one heading.
struct SyndromeGroup {
  std::string syndrome;
  uint64_t count = 0;
  std::vector<const Cluster*> clusters;
};

std::vector<SyndromeGroup> BySyndrome(const EpiResult& r) {
  std::vector<SyndromeGroup> groups;
  for (const auto& c : r.clusters) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.syndrome == c.syndrome; });
    if (it == groups.end()) it = groups.insert(groups.end(), SyndromeGroup{c.syndrome, 0, {}});
    it->count += c.count;
    it->clusters.push_back(&c);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  return groups;
}

std::string Pct(double share) { return fmt::format("{:.1f}%", share * 100); }

std::string PValue(double p) {
  if (p <= 0) return "<1e-300";
  if (p >= 0.01) return fmt::format("{:.2f}", p);
  return fmt::format("{:.1e}", p);
}

std::string Span(const Cluster& c) {
  if (c.first_seen.empty()) return "no crash times";
  return c.first_seen == c.last_seen ? c.first_seen : c.first_seen + " .. " + c.last_seen;
}

// "1 core", "5 cores".
std::string Cores(uint64_t n) { return fmt::format("{} core{}", n, n == 1 ? "" : "s"); }

// The reports' opening sentence; numbers and days only.
std::string Overview(const EpiResult& r) {
  std::string out = Cores(r.cores);
  if (r.first_day) out += " from " + FormatDay(*r.first_day) + " to " + FormatDay(*r.last_day);
  out += fmt::format(" in {} clusters; {} tests, Benjamini-Hochberg adjusted.", r.clusters.size(), r.tests);
  if (r.excluded) out += " " + Cores(r.excluded) + " excluded by rules.";
  if (r.errors) out += fmt::format(" {} unreadable core{} left out.", r.errors, r.errors == 1 ? "" : "s");
  return out;
}

// Crashes per host-day with the value against without it; empty when the
// finding was not tested against the population at risk.
std::string RateRatio(const Finding& f) {
  if (!f.rated) return "";
  if (f.rate_without <= 0) return "∞";
  return fmt::format("{:.1f}", f.rate / f.rate_without);
}

// A cluster's syndromes with their cores, most first: "null-deref 8, bad-pointer 3".
std::string SyndromeCounts(const Cluster& c) {
  std::vector<std::pair<std::string, uint64_t>> counts(c.syndromes.begin(), c.syndromes.end());
  std::stable_sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [s, n] : counts) out += (out.empty() ? "" : ", ") + ValidUtf8(s) + " " + std::to_string(n);
  return out;
}

// How many findings a summary shows per cluster.
constexpr size_t kShown = 3;

// A finding counts a cluster's incidents (a job's ranks are one): where
// they are fewer than its cores, the line says so.
std::string FindingLine(const Finding& f, const Cluster& c) {
  std::string of = c.incidents < c.count ? fmt::format("{} of {} incidents ({})", f.count, c.incidents, Cores(c.count))
                                         : fmt::format("{} of cluster", f.count);
  // "fleet": every other crash; "reference": without the clusters that are
  // causes of their own on the attribute.
  std::string s = fmt::format("{} = {}: {} ({}, {} {}), lift {:.1f}, p_adj {}", ValidUtf8(f.attribute),
                              ValidUtf8(f.value), of, Pct(f.share), f.left_out.empty() ? "fleet" : "reference",
                              Pct(f.baseline_share), f.lift, PValue(f.p_adjusted));
  if (f.rated) s += ", rate ratio " + RateRatio(f);
  if (f.reading) s += " — " + ValidUtf8(FindingWords(f));
  return s;
}

// Days from first to last, for the charts' x axis.
std::vector<std::string> AllDays(const EpiResult& r) {
  std::vector<std::string> days;
  if (!r.first_day || !r.last_day) return days;
  for (int64_t d = *r.first_day; d <= *r.last_day && days.size() < 4000; ++d) days.push_back(FormatDay(d));
  return days;
}

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  for (char c : ValidUtf8(text)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// An incident's root in words: "rank 3 on host gpu-a-05".
std::string RootWords(const Incident& i) {
  std::string w = i.root_rank ? "rank " + std::to_string(*i.root_rank) : "a rank";
  if (!i.root_host.empty()) w += " on host " + i.root_host;
  return w;
}

// "read ← read_shard ← load_batch": where a rank waited, innermost first.
std::string WaitWords(const std::string& where) {
  if (where.empty()) return "an unknown place";
  std::string out;
  for (size_t at = 0;;) {
    size_t bar = where.find(" | ", at);
    out += where.substr(at, bar == std::string::npos ? std::string::npos : bar - at);
    if (bar == std::string::npos) return out;
    out += " \u2190 ";
    at = bar + 3;
  }
}

// A hang's root in words: "rank 17 on host gpu-a-03 waits in read ←
// read_shard; 511 ranks wait in recv ← ring_allreduce".
std::string HangWords(const Incident& i) {
  if (i.odd_ranks.empty()) {
    return "no group of ranks stands out: they wait in different places, none of them in a larger group";
  }
  std::string s;
  for (size_t k = 0; k < i.odd_ranks.size() && k < 3; ++k) {
    const auto& r = i.odd_ranks[k];
    if (k) s += "; ";
    s += r.rank ? "rank " + std::to_string(*r.rank) : std::string("a rank");
    if (!r.host.empty()) s += " on host " + r.host;
    s += " waits in " + WaitWords(r.where);
  }
  if (i.odd_count > 3) s += "; " + std::to_string(i.odd_count - 3) + " more odd ranks";
  return s + "; " + std::to_string(i.waiting) + (i.waiting == 1 ? " rank waits" : " ranks wait") + " in " +
         WaitWords(i.waiting_where);
}

// The "died first" cell of the incident tables: a hang's odd ranks.
std::string RootCell(const Incident& i) {
  return i.kind == Incident::Kind::kHang ? "hang: " + HangWords(i) : RootWords(i);
}

// "job 48213 step 0: 8 cores, rank 3 on host h died first (c2), 7 collateral"
std::string IncidentLine(const Incident& i) {
  std::string job = (i.launcher.empty() ? "" : i.launcher + " ") + "job " + i.job + ": ";
  if (i.kind == Incident::Kind::kHang) return job + "hang of " + std::to_string(i.cores) + " ranks; " + HangWords(i);
  std::string s = job + std::to_string(i.cores) + " cores, " + RootWords(i) + " died first (" + i.root_cluster + ")";
  if (i.alike) s += ", every rank crashed alike: deterministic, not one bad node";
  else s += ", " + std::to_string(i.collateral) + " collateral";
  return s;
}

// The hosts the evidence calls suspect hardware, with the evidence.
std::string HostsText(const EpiResult& r) {
  std::string out;
  for (const auto& h : r.hosts) {
    if (!h.suspect) continue;
    if (out.empty()) out = "\nhardware verdicts:\n";
    out += fmt::format("  {} (score {:g})\n", ValidUtf8(VerdictWords(h)), h.score);
    for (const auto& e : h.evidence) out += "      - " + ValidUtf8(EvidenceWords(e.fact)) + "\n";
  }
  return out;
}

std::string EpiToText(const EpiResult& r) {
  std::string out = Cores(r.cores);
  if (r.first_day) out += ", " + FormatDay(*r.first_day) + " .. " + FormatDay(*r.last_day);
  out += fmt::format(", {} clusters, {} tests", r.clusters.size(), r.tests);
  if (r.excluded) out += fmt::format(", {} excluded by rules", r.excluded);
  if (r.errors) out += fmt::format(", {} unreadable cores left out", r.errors);
  if (r.untimed) out += fmt::format(", {} without a crash time", r.untimed);
  out += "\n";
  for (const auto& w : r.warnings) out += "warning: " + ValidUtf8(w) + "\n";
  for (const auto& g : BySyndrome(r)) {
    out += fmt::format("\n{}: {} in {} cluster{}\n", ValidUtf8(g.syndrome), Cores(g.count), g.clusters.size(),
                       g.clusters.size() == 1 ? "" : "s");
    size_t shown = 0;
    for (const Cluster* c : g.clusters) {
      if (++shown > 10) {
        out += fmt::format("  ... {} smaller clusters (see --json)\n", g.clusters.size() - 10);
        break;
      }
      out += fmt::format("  {}  {}  {} ({}), {}", c->id, ValidUtf8(c->signature), Cores(c->count), Pct(c->share),
                         Span(*c));
      if (!c->onset.empty()) out += ", onset " + c->onset;
      out += "\n";
      if (c->began_with) out += "      " + ValidUtf8(OnsetWords(*c->began_with)) + "\n";
      if (!c->syndromes.empty()) out += "      syndromes: " + SyndromeCounts(*c) + "\n";
      if (c->incidents < c->count) out += fmt::format("      {} incidents\n", c->incidents);
      if (c->collateral) out += "      " + ValidUtf8(CollateralWords(*c)) + "\n";
      // The findings that stand on their own; those the strongest explains
      // are counted after them.
      size_t listed = 0, explained = 0;
      for (const auto& f : c->findings) {
        if (!f.explained_by_attribute.empty()) ++explained;
        else if (listed++ < kShown) out += "      " + FindingLine(f, *c) + "\n";
      }
      if (explained)
        out += fmt::format("      ({} more explained by {} = {})\n", explained,
                           ValidUtf8(c->findings[0].attribute), ValidUtf8(c->findings[0].value));
      if (c->gpu_events.reading) out += "      GPUs: " + ValidUtf8(GpuWords(c->gpu_events)) + "\n";
    }
  }
  if (!r.incidents.empty()) {
    out += "\nincidents (jobs whose ranks crashed together):\n";
    for (const auto& i : r.incidents)
      out += "  " + (i.first_crash.empty() ? std::string("untimed") : i.first_crash) + "  " + ValidUtf8(IncidentLine(i)) + "\n";
  }
  out += HostsText(r);
  return out;
}

nlohmann::json GpuEventsJson(const GpuEvents& g) {
  using nlohmann::json;
  if (!g.cores && g.cpus.empty()) return nullptr;
  json gpus = json::object(), cpus = json::object();
  for (const auto& [k, n] : GpusByName(g)) gpus[ValidUtf8(k)] = n;
  for (const auto& [k, n] : g.cpus) cpus[ValidUtf8(k)] = n;
  return {{"cores", g.cores},
          {"gpus", gpus},
          {"cpus", cpus},
          {"reading", g.reading ? json(ValidUtf8(GpuWords(g))) : json(nullptr)}};
}

nlohmann::json FindingJson(const Finding& f) {
  using nlohmann::json;
  return {{"attribute", ValidUtf8(f.attribute)},
          {"value", ValidUtf8(f.value)},
          {"count", f.count},
          {"share", f.share},
          {"baseline_share", f.baseline_share},
          {"reference", json{{"crashes", f.reference}, {"left_out", f.left_out}}},
          {"lift", f.lift},
          {"p_value", f.p_value},
          {"p_adjusted", f.p_adjusted},
          {"flag", f.reading ? json(ValidUtf8(FindingWords(f))) : json(nullptr)},
          {"explained_by", f.explained_by_attribute.empty() ? json(nullptr)
                                                            : json{{"attribute", ValidUtf8(f.explained_by_attribute)},
                                                                   {"value", ValidUtf8(f.explained_by_value)}}},
          {"window", f.window_from.empty() ? json(nullptr) : json{{"from", f.window_from}, {"to", f.window_to}}},
          {"host_days", f.rated ? json(f.host_days) : json(nullptr)},
          {"rate", f.rated ? json(f.rate) : json(nullptr)},
          {"rate_without", f.rated ? json(f.rate_without) : json(nullptr)},
          {"rate_ratio", f.rated && f.rate_without > 0 ? json(f.rate / f.rate_without) : json(nullptr)},
          {"p_rate", f.rated ? json(f.p_rate) : json(nullptr)}};
}

nlohmann::json ClusterJson(const Cluster& c) {
  using nlohmann::json;
  json findings = json::array();
  for (const auto& f : c.findings) findings.push_back(FindingJson(f));
  json daily = json::object();
  for (const auto& [d, n] : c.daily) daily[d] = n;
  json hosts = json::object();
  for (const auto& [h, n] : c.hosts) hosts[ValidUtf8(h)] = n;
  json uptime = json::object();
  for (size_t i = 0; i < c.uptime_histogram.size(); ++i) uptime[UptimeBucketNames()[i]] = c.uptime_histogram[i];
  auto day = [](const std::string& d) { return d.empty() ? json(nullptr) : json(d); };
  json exposure = nullptr;
  if (c.exposed) {
    json per_host = json::object();
    for (const auto& [h, d] : c.host_days_per_host) per_host[ValidUtf8(h)] = d;
    exposure = {{"hosts", c.hosts_at_risk}, {"host_days", c.host_days}, {"per_host", per_host}};
  }
  json began_with = nullptr;
  if (const auto& o = c.began_with)
    began_with = {{"attribute", ValidUtf8(o->attribute)},
                  {"value", ValidUtf8(o->value)},
                  {"crashes_before", o->crashes_before},
                  {"host_days_before", o->host_days_before},
                  {"crashes_after", o->crashes_after},
                  {"host_days_after", o->host_days_after},
                  {"p_value", o->p_value},
                  {"p_adjusted", o->p_adjusted},
                  {"lag_host_days", o->lag_host_days},
                  {"clock", o->crash_clock ? "crashes" : "host-days"},
                  {"other_crashes_before", o->crash_clock ? json(o->other_crashes_before) : json(nullptr)},
                  {"lag_crashes", o->crash_clock ? json(o->lag_crashes) : json(nullptr)},
                  {"p_lag", o->p_lag},
                  {"reading", ValidUtf8(OnsetWords(*o))}};
  return {{"id", c.id},
          {"syndrome", ValidUtf8(c.syndrome)},
          {"syndromes", c.syndromes.empty() ? json(nullptr) : json(c.syndromes)},
          {"signature", ValidUtf8(c.signature)},
          {"label", c.label.empty() ? json(nullptr) : json(ValidUtf8(c.label))},
          {"count", c.count},
          {"share", c.share},
          {"first_seen", day(c.first_seen)},
          {"last_seen", day(c.last_seen)},
          {"onset", day(c.onset)},
          {"began_with", began_with},
          {"daily", daily},
          {"findings", findings},
          {"hosts", hosts},
          {"uptime", uptime},
          {"exposure", exposure},
          {"gpu_events", GpuEventsJson(c.gpu_events)},
          {"incidents", c.incidents},
          {"collateral_of", c.collateral ? json(c.collateral->of) : json(nullptr)},
          {"collateral_reading", c.collateral ? json(ValidUtf8(CollateralWords(c))) : json(nullptr)},
          {"example", c.example.empty() ? json(nullptr) : json(ValidUtf8(c.example))}};
}

nlohmann::json HostJson(const HostVerdict& h) {
  using nlohmann::json;
  json evidence = json::array();
  for (const auto& e : h.evidence) evidence.push_back(ValidUtf8(EvidenceWords(e.fact)));
  json cpus = json::object();
  for (const auto& [cpu, n] : h.cpus) cpus[std::to_string(cpu)] = n;
  json vms = json::array();
  for (const auto& vm : h.vms) vms.push_back(ValidUtf8(vm));
  return {{"host", ValidUtf8(h.host)},
          {"machine", h.machine},
          {"vms", vms},
          {"score", h.score},
          {"verdict", h.suspect ? json(ValidUtf8(VerdictWords(h))) : json(nullptr)},
          {"crashes", h.crashes},
          {"cpus", cpus},
          {"evidence", evidence}};
}

nlohmann::json OddRanksJson(const Incident& i) {
  using nlohmann::json;
  json out = json::array();
  for (const auto& r : i.odd_ranks) {
    out.push_back({{"rank", r.rank ? json(*r.rank) : json(nullptr)},
                   {"host", r.host.empty() ? json(nullptr) : json(ValidUtf8(r.host))},
                   {"where", ValidUtf8(r.where)}});
  }
  return out;
}

nlohmann::json IncidentJson(const Incident& i) {
  using nlohmann::json;
  return {{"job", ValidUtf8(i.job)},
          {"launcher", i.launcher.empty() ? json(nullptr) : json(ValidUtf8(i.launcher))},
          {"cores", i.cores},
          {"first_crash", i.first_crash.empty() ? json(nullptr) : json(i.first_crash)},
          {"root",
           {{"core", ValidUtf8(i.root_path)},
            {"rank", i.root_rank ? json(*i.root_rank) : json(nullptr)},
            {"host", i.root_host.empty() ? json(nullptr) : json(ValidUtf8(i.root_host))},
            {"signature", ValidUtf8(i.root_signature)},
            {"cluster", i.root_cluster}}},
          {"collateral", i.collateral},
          {"alike", i.alike},
          {"kind", i.kind == Incident::Kind::kHang ? "hang" : "crash"},
          {"odd_ranks", OddRanksJson(i)},
          {"odd_count", i.odd_count},
          {"waiting", i.kind == Incident::Kind::kHang && i.waiting
                          ? json{{"ranks", i.waiting}, {"where", ValidUtf8(i.waiting_where)}}
                          : json(nullptr)}};
}

std::string EpiToJson(const EpiResult& r) {
  using nlohmann::json;
  json clusters = json::array();
  for (const auto& c : r.clusters) clusters.push_back(ClusterJson(c));
  json warnings = json::array();
  for (const auto& w : r.warnings) warnings.push_back(ValidUtf8(w));
  json hosts = json::array();
  for (const auto& h : r.hosts) hosts.push_back(HostJson(h));
  json incidents = json::array();
  for (const auto& i : r.incidents) incidents.push_back(IncidentJson(i));
  json out = {{"version", kEpiJsonVersion},
              {"cores", r.cores},
              {"excluded", r.excluded},
              {"errors", r.errors},
              {"untimed", r.untimed},
              {"tests", r.tests},
              {"untestable", r.untestable},
              {"first_day", r.first_day ? json(FormatDay(*r.first_day)) : json(nullptr)},
              {"last_day", r.last_day ? json(FormatDay(*r.last_day)) : json(nullptr)},
              {"warnings", warnings},
              {"joined_lines", r.joined_lines},
              {"incident_count", r.incident_count},
              {"incidents", incidents},
              {"hosts", hosts},
              {"clusters", clusters}};
  return JsonText(out, 2) + "\n";
}

std::string EpiToMarkdown(const EpiResult& r) {
  auto md = [](const std::string& s) { return MarkdownEscape(ValidUtf8(s)); };
  std::string out = "# Crash epidemiology\n\n";
  out += Overview(r) + "\n\n";
  for (const auto& w : r.warnings) out += "> warning: " + md(w) + "\n\n";
  out += "| syndrome | cluster | signature | cores | share | first seen | last seen | onset |\n";
  out += "|---|---|---|---:|---:|---|---|---|\n";
  auto groups = BySyndrome(r);
  for (const auto& g : groups)
    for (const Cluster* c : g.clusters)
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", md(g.syndrome), c->id, md(c->signature),
                         c->count, Pct(c->share), c->first_seen, c->last_seen, c->onset);
  for (const auto& g : groups) {
    out += fmt::format("\n## {} ({}, {} cluster{})\n", md(g.syndrome), Cores(g.count), g.clusters.size(),
                       g.clusters.size() == 1 ? "" : "s");
    for (const Cluster* c : g.clusters) {
      if (c->findings.empty() && c->count < 3) continue;
      out += fmt::format("\n### {} — {}\n\n{} ({}), {}", c->id, md(c->signature), Cores(c->count),
                         Pct(c->share), Span(*c));
      if (!c->onset.empty()) out += ", onset " + c->onset;
      if (!c->example.empty()) out += ". Example: " + MarkdownCode(c->example);
      out += ".\n\n";
      if (c->began_with) out += "**" + md(OnsetWords(*c->began_with)) + "**\n\n";
      if (c->incidents < c->count) out += fmt::format("{} incidents.\n\n", c->incidents);
      if (c->collateral) out += "**" + md(CollateralWords(*c)) + "**\n\n";
      if (c->findings.empty()) {
        out += "No attribute value is over-represented (adjusted p < 0.05).\n";
        continue;
      }
      out += "| attribute | value | cores | share | fleet share | lift | rate ratio | p | p adjusted | reading |\n";
      out += "|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
      for (const auto& f : c->findings)
        out += fmt::format("| {} | {} | {} | {} | {} | {:.1f} | {} | {} | {} | {} |\n", md(f.attribute),
                           md(f.value), f.count, Pct(f.share), Pct(f.baseline_share), f.lift, RateRatio(f),
                           PValue(f.rated ? f.p_rate : f.p_value), PValue(f.p_adjusted), md(FindingWords(f)));
    }
  }
  if (!r.incidents.empty()) {
    out += "\n## Incidents\n\nJobs whose ranks crashed together: one event each, counted once.\n\n";
    out += "| when | job | cores | died first | root signature | collateral |\n|---|---|---:|---|---|---|\n";
    for (const auto& i : r.incidents)
      out += fmt::format("| {} | {} | {} | {} | {} ({}) | {} |\n", i.first_crash.empty() ? "untimed" : i.first_crash,
                         md(i.job), i.cores, md(RootCell(i)), md(i.root_signature), i.root_cluster,
                         i.alike ? std::string("none: every rank crashed alike") : std::to_string(i.collateral));
  }
  bool any = false;
  for (const auto& h : r.hosts) {
    if (!h.suspect) continue;
    if (!any) out += "\n## Hardware verdicts\n\n";
    any = true;
    out += "- **" + md(VerdictWords(h)) + "**\n";
    for (const auto& e : h.evidence) out += "  - " + md(EvidenceWords(e.fact)) + "\n";
  }
  return out;
}

namespace {

// A bar chart of daily counts over every day of the dataset.
std::string DailySvg(const Cluster& c, const std::vector<std::string>& days) {
  if (days.empty()) return "";
  uint64_t peak = 1;
  for (const auto& [d, n] : c.daily) peak = std::max(peak, n);
  const double w = 640, h = 80, bar = w / static_cast<double>(days.size());
  std::string out = fmt::format(R"(<svg class="daily" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)", w,
                                h + 16, w, h + 16);
  out += fmt::format(R"(<line x1="0" y1="{}" x2="{}" y2="{}" class="axis"/>)", h, w, h);
  for (size_t i = 0; i < days.size(); ++i) {
    auto it = c.daily.find(days[i]);
    if (it == c.daily.end()) continue;
    double bh = h * static_cast<double>(it->second) / static_cast<double>(peak);
    out += fmt::format(R"(<rect x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}"{}><title>{}: {}</title></rect>)",
                       bar * static_cast<double>(i), h - bh, std::max(bar - 1, 0.5), bh,
                       days[i] == c.onset ? R"( class="onset")" : "", days[i], it->second);
  }
  out += fmt::format(R"(<text x="0" y="{}">{}</text><text x="{}" y="{}" text-anchor="end">{}</text>)", h + 13,
                     days.front(), w, h + 13, days.back());
  out += fmt::format(R"(<text x="2" y="10">peak {}/day</text>)", peak);
  return out + "</svg>";
}

std::string UptimeSvg(const Cluster& c) {
  uint64_t peak = 1, total = 0;
  for (auto n : c.uptime_histogram) peak = std::max(peak, n), total += n;
  if (!total) return "<p class=\"muted\">no uptimes</p>";
  const auto& names = UptimeBucketNames();
  const double bw = 44, h = 60;
  std::string out = fmt::format(R"(<svg class="uptime" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)",
                                bw * static_cast<double>(names.size()), h + 14, bw * static_cast<double>(names.size()),
                                h + 14);
  for (size_t i = 0; i < names.size(); ++i) {
    double bh = h * static_cast<double>(c.uptime_histogram[i]) / static_cast<double>(peak);
    out += fmt::format(R"(<rect x="{}" y="{:.2f}" width="{}" height="{:.2f}"><title>uptime {}: {}</title></rect>)",
                       bw * static_cast<double>(i) + 2, h - bh, bw - 4, bh, HtmlEscape(names[i]),
                       c.uptime_histogram[i]);
    out += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", bw * static_cast<double>(i) + bw / 2,
                       h + 12, HtmlEscape(names[i]));
  }
  return out + "</svg>";
}

// Hosts (rows, the most crashes first, at most 30) by clusters (columns,
// at most 12), shaded by count.
std::string HeatmapSvg(const EpiResult& r) {
  std::map<std::string, uint64_t> per_host;
  size_t nc = std::min<size_t>(r.clusters.size(), 12);
  for (size_t i = 0; i < nc; ++i)
    for (const auto& [h, n] : r.clusters[i].hosts) per_host[h] += n;
  if (per_host.empty()) return "<p class=\"muted\">No host attribute in this dataset.</p>";
  std::vector<std::pair<std::string, uint64_t>> hosts(per_host.begin(), per_host.end());
  std::stable_sort(hosts.begin(), hosts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (hosts.size() > 30) hosts.resize(30);
  uint64_t peak = 1;
  for (size_t i = 0; i < nc; ++i)
    for (const auto& [h, n] : r.clusters[i].hosts) peak = std::max(peak, n);
  const double cw = 44, rh = 16, left = 170, top = 20;
  double width = left + cw * static_cast<double>(nc), height = top + rh * static_cast<double>(hosts.size());
  std::string out = fmt::format(R"(<svg class="heatmap" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)",
                                width, height, width, height);
  for (size_t j = 0; j < nc; ++j)
    out += fmt::format(R"(<text x="{}" y="14" text-anchor="middle">{}</text>)", left + cw * static_cast<double>(j) + cw / 2,
                       r.clusters[j].id);
  for (size_t i = 0; i < hosts.size(); ++i) {
    double y = top + rh * static_cast<double>(i);
    std::string name = hosts[i].first.size() > 26 ? hosts[i].first.substr(0, 25) + "…" : hosts[i].first;
    out += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", left - 6, y + 12, HtmlEscape(name));
    for (size_t j = 0; j < nc; ++j) {
      auto it = r.clusters[j].hosts.find(hosts[i].first);
      uint64_t n = it == r.clusters[j].hosts.end() ? 0 : it->second;
      double a = n ? 0.12 + 0.88 * static_cast<double>(n) / static_cast<double>(peak) : 0;
      out += fmt::format(
          R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#c82828" fill-opacity="{:.3f}" class="cell"><title>{} in {}: {}</title></rect>)",
          left + cw * static_cast<double>(j) + 1, y + 1, cw - 2, rh - 2, a, HtmlEscape(hosts[i].first),
          r.clusters[j].id, n);
    }
  }
  return out + "</svg>";
}

std::string FindingsTable(const std::vector<const Finding*>& findings, const char* css_class) {
  std::string out = fmt::format(
      "<table class=\"{}\"><thead><tr><th>attribute</th><th>value</th><th>cores</th><th>share</th>"
      "<th>fleet share</th><th>lift</th><th>rate ratio</th><th>host-days</th><th>p adjusted</th><th>reading</th>"
      "</tr></thead><tbody>\n",
      css_class);
  for (const Finding* f : findings) {
    std::string ratio = RateRatio(*f);
    double sort_ratio = !f->rated ? 0 : f->rate_without > 0 ? f->rate / f->rate_without : 1e300;
    out += fmt::format(
        "<tr{}><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>"
        "<td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\">{:.1f}</td><td class=\"n\" data-v=\"{}\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td>{}</td></tr>\n",
        f->explained_by_attribute.empty() ? "" : " class=\"explained\"", HtmlEscape(f->attribute),
        HtmlEscape(f->value), f->count, f->share, Pct(f->share), f->baseline_share, Pct(f->baseline_share), f->lift,
        sort_ratio, HtmlEscape(ratio), f->rated ? fmt::format("{:.1f}", f->host_days) : "", f->p_adjusted,
        PValue(f->p_adjusted), HtmlEscape(FindingWords(*f)));
  }
  return out + "</tbody></table>\n";
}

// The cluster's crashes per host-day on each of its hosts (at most 10, the
// highest rate first) against the rate over every host at risk.
std::string HostRates(const Cluster& c) {
  if (!c.exposed || c.host_days <= 0) return "";
  std::vector<std::pair<double, std::string>> rates;
  for (const auto& [h, n] : c.hosts) {
    auto it = c.host_days_per_host.find(h);
    if (it != c.host_days_per_host.end() && it->second > 0) rates.emplace_back(static_cast<double>(n) / it->second, h);
  }
  std::stable_sort(rates.begin(), rates.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = fmt::format(
      "<p class=\"muted rates\">{} hosts at risk, {:.0f} host-days while the cluster was active: {:.4f} crashes per "
      "host-day overall; {} of them crashed.</p>\n",
      c.hosts_at_risk, c.host_days, static_cast<double>(c.count) / c.host_days, c.hosts.size());
  if (rates.empty()) return out;
  out += "<table class=\"sortable rates\"><thead><tr><th>host</th><th>crashes</th><th>host-days</th>"
         "<th>crashes per host-day</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < rates.size() && i < 10; ++i) {
    const auto& [rate, h] = rates[i];
    out += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1f}</td><td class=\"n\" data-v=\"{}\">{:.3f}</td>"
        "</tr>\n",
        HtmlEscape(h), c.hosts.at(h), c.host_days_per_host.at(h), rate, rate);
  }
  return out + "</tbody></table>\n";
}

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"DejaVu Sans",sans-serif;margin:24px auto;max-width:1100px;color:#1d232a;padding:0 16px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde2e8;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}code{font:12.5px ui-monospace,"DejaVu Sans Mono",monospace;background:#f3f5f8;padding:1px 4px;border-radius:3px}
.muted{color:#68737f}.summary{color:#3b4550;margin-bottom:12px}
table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-size:13px}th,td{border-bottom:1px solid #e6e9ee;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa;cursor:pointer;user-select:none}td.n{text-align:right;font-variant-numeric:tabular-nums}
.card{border:1px solid #dde2e8;border-radius:8px;padding:10px 14px;margin:10px 0;background:#fff}
.flag{color:#a3261b;font-weight:600}tr.explained td{color:#777}details.explained{margin:0 0 10px}details.explained summary{color:#68737f;cursor:pointer}.charts{display:flex;gap:24px;flex-wrap:wrap;align-items:flex-end}
svg text{font-size:10px;fill:#4a5560}svg .axis{stroke:#9aa4ae}svg.daily rect{fill:#3a6ea5}svg.daily rect.onset{fill:#d9822b}
svg.uptime rect{fill:#5b8c5a}.tag{display:inline-block;background:#eef2f6;border-radius:10px;padding:0 8px;margin-left:6px;font-size:12px}
)css";

// Sorting by a column header: the only script, inline, no network.
constexpr const char* kScript = R"js(
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.v || a.cells[col].textContent, y = b.cells[col].dataset.v || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        if (!isNaN(nx) && !isNaN(ny)) return dir * (nx - ny);
        return dir * x.localeCompare(y);
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
document.body.dataset.ready = 'yes';
)js";

}  // namespace

// Jobs whose ranks crashed together, by first crash.
std::string IncidentsTable(const EpiResult& r) {
  if (r.incidents.empty()) return "";
  std::string out =
      "<h2>Incidents</h2>\n<p class=\"muted\">Jobs whose ranks crashed together: one event each, counted once.</p>\n"
      "<table class=\"sortable\" id=\"incidents\"><thead><tr><th>when</th><th>job</th><th>cores</th><th>died first</th>"
      "<th>root signature</th><th>collateral</th></tr></thead><tbody>\n";
  for (const auto& i : r.incidents)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td><td><a href=\"#{}\">{}</a> <code>{}</code></td><td>{}</td></tr>\n",
                       i.first_crash.empty() ? "untimed" : i.first_crash, HtmlEscape(i.job), i.cores,
                       HtmlEscape(RootCell(i)), i.root_cluster, i.root_cluster, HtmlEscape(i.root_signature),
                       i.alike ? std::string("none: every rank crashed alike") : std::to_string(i.collateral));
  return out + "</tbody></table>\n";
}

// Hosts with hardware evidence, by score: a verdict first when there is one.
std::string HostsTable(const EpiResult& r) {
  if (r.hosts.empty()) return "";
  std::string out =
      "<h2>Hosts</h2>\n<table class=\"sortable\" id=\"hosts\"><thead><tr><th>host</th><th>score</th><th>crashes</th>"
      "<th>verdict</th><th>evidence</th></tr></thead><tbody>\n";
  size_t shown = 0;
  for (const auto& h : r.hosts) {
    if (++shown > 50) break;
    std::string evidence;
    for (const auto& e : h.evidence) evidence += "<li>" + HtmlEscape(EvidenceWords(e.fact)) + "</li>";
    out += fmt::format("<tr><td>{}</td><td class=\"n\">{:g}</td><td class=\"n\">{}</td><td{}>{}</td><td><ul>{}</ul></td></tr>\n",
                       HtmlEscape(h.host) + (h.machine ? fmt::format(" <span class=\"muted\">(machine, {} VM{})</span>",
                                                                    h.vms.size(), h.vms.size() == 1 ? "" : "s")
                                                        : std::string()),
                       h.score, h.crashes, h.suspect ? " class=\"flag\"" : "",
                       HtmlEscape(VerdictWords(h)), evidence);
  }
  return out + "</tbody></table>\n";
}

// The CPUs and GPUs a cluster's crashes ran on, from the joined lines.
std::string GpuEventsHtml(const GpuEvents& g) {
  if (g.gpus.empty() && g.cpus.empty()) return "";
  std::string out;
  if (g.reading) out += "<p class=\"flag\">GPUs: " + HtmlEscape(GpuWords(g)) + "</p>\n";
  auto list = [&](const char* what, const std::map<std::string, uint64_t>& m) {
    if (m.empty()) return;
    std::vector<std::pair<uint64_t, std::string>> v;
    for (const auto& [k, n] : m) v.emplace_back(n, k);
    std::sort(v.rbegin(), v.rend());
    out += std::string("<p class=\"muted\">") + what + ": ";
    for (size_t i = 0; i < v.size() && i < 12; ++i)
      out += (i ? ", " : "") + HtmlEscape(v[i].second) + " (" + std::to_string(v[i].first) + ")";
    out += v.size() > 12 ? ", ...</p>\n" : "</p>\n";
  };
  list("On CPUs", g.cpus);
  list("On GPUs", GpusByName(g));
  return out;
}

std::string EpiToHtml(const EpiResult& r) {
  auto days = AllDays(r);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>coroner epi: crash populations</title>\n<style>";
  out += kStyle;
  out += "</style></head><body>\n<h1>Crash populations</h1>\n<p class=\"summary\">";
  out += HtmlEscape(Overview(r)) + "</p>\n";
  for (const auto& w : r.warnings) out += "<p class=\"flag\">warning: " + HtmlEscape(w) + "</p>\n";
  auto groups = BySyndrome(r);
  out += "<h2>Clusters</h2>\n<table class=\"sortable\" id=\"clusters\"><thead><tr><th>syndrome</th><th>cluster</th>"
         "<th>signature</th><th>cores</th><th>share</th><th>first seen</th><th>last seen</th><th>onset</th>"
         "<th>top finding</th></tr></thead><tbody>\n";
  for (const auto& g : groups)
    for (const Cluster* c : g.clusters) {
      std::string top = c->findings.empty() ? "" : HtmlEscape(c->findings[0].attribute + " = " + c->findings[0].value);
      out += fmt::format(
          "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td><code>{}</code></td><td class=\"n\">{}</td>"
          "<td class=\"n\" data-v=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          HtmlEscape(g.syndrome), c->id, c->id, HtmlEscape(c->signature), c->count, c->share, Pct(c->share),
          c->first_seen, c->last_seen, c->onset, top);
    }
  out += "</tbody></table>\n" + IncidentsTable(r) + HostsTable(r) + "<h2>Hosts by cluster</h2>\n" + HeatmapSvg(r) + "\n";
  for (const auto& g : groups) {
    out += fmt::format("<h2>{} <span class=\"tag\">{}, {} cluster{}</span></h2>\n", HtmlEscape(g.syndrome),
                       Cores(g.count), g.clusters.size(), g.clusters.size() == 1 ? "" : "s");
    size_t shown = 0;
    for (const Cluster* c : g.clusters) {
      if (++shown > 25) {
        out += fmt::format("<p class=\"muted\">{} smaller clusters are in the table above.</p>\n",
                           g.clusters.size() - 25);
        break;
      }
      out += fmt::format("<div class=\"card\" id=\"{}\"><h3>{} <code>{}</code></h3>\n<p>{} ({}), {}", c->id,
                         c->id, HtmlEscape(c->signature), Cores(c->count), Pct(c->share), HtmlEscape(Span(*c)));
      if (!c->onset.empty()) out += ", onset <b>" + c->onset + "</b>";
      if (!c->example.empty()) out += ". Example: <code>" + HtmlEscape(c->example) + "</code>";
      out += ".</p>\n";
      if (c->began_with) out += "<p class=\"flag\">" + HtmlEscape(OnsetWords(*c->began_with)) + "</p>\n";
      if (c->incidents < c->count) out += fmt::format("<p>{} incidents.</p>\n", c->incidents);
      if (c->collateral) out += "<p class=\"flag\">" + HtmlEscape(CollateralWords(*c)) + "</p>\n";
      // A finding's flag, unless the onset's line above already says it.
      for (const auto& f : c->findings) {
        bool onset = c->began_with && c->began_with->attribute == f.attribute && c->began_with->value == f.value;
        if (f.reading && f.p_adjusted < 0.01 && f.explained_by_attribute.empty() && !onset)
          out += "<p class=\"flag\">" + HtmlEscape(FindingWords(f)) + "</p>\n";
      }
      out += "<div class=\"charts\"><div>" + DailySvg(*c, days) + "</div><div>" + UptimeSvg(*c) + "</div></div>\n";
      if (!c->findings.empty()) {
        // The findings that stand on their own; those the strongest one
        // explains are folded under it.
        std::vector<const Finding*> own, explained;
        for (const auto& f : c->findings) (f.explained_by_attribute.empty() ? own : explained).push_back(&f);
        out += FindingsTable(own, "sortable");
        if (!explained.empty())
          out += fmt::format("<details class=\"explained\"><summary>{} more explained by {} = {}</summary>\n{}</details>\n",
                             explained.size(), HtmlEscape(c->findings[0].attribute),
                             HtmlEscape(c->findings[0].value), FindingsTable(explained, "sortable explained"));
      } else {
        out += "<p class=\"muted\">No attribute value is over-represented (adjusted p &lt; 0.05).</p>\n";
      }
      out += HostRates(*c);
      out += GpuEventsHtml(c->gpu_events);
      out += "</div>\n";
    }
  }
  out += "<script>";
  out += kScript;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace coroner
