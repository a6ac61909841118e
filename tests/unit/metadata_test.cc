// Metadata sources, times, inventories and signatures, on inputs whose
// right answer is known independently (epoch values from `date -u -d`).
#include <gtest/gtest.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dataset/core_record.h"
#include "dataset/journal_metadata.h"
#include "dataset/metadata.h"
#include "unit/run_coroner.h"
#include "processor/signature.h"
#include "dataset/timestamps.h"

namespace coroner {
namespace {

// --since and --until, as systemd.time(7) spells them; `now` is
// 2026-10-14T03:12:00Z (date -u -d @1791947520).
TEST(Timestamps, ParsesTimeArguments) {
  const int64_t now = 1791947520;
  EXPECT_EQ(ParseTimeArgument("now", now), now);
  EXPECT_EQ(ParseTimeArgument("today", now), 1791936000);  // 2026-10-14T00:00:00Z
  EXPECT_EQ(ParseTimeArgument("yesterday", now), 1791936000 - 86400);
  EXPECT_EQ(ParseTimeArgument("-2h", now), now - 7200);
  EXPECT_EQ(ParseTimeArgument("-5min", now), now - 300);
  EXPECT_EQ(ParseTimeArgument("+1d", now), now + 86400);
  EXPECT_EQ(ParseTimeArgument("@1700000000", now), 1700000000);
  EXPECT_EQ(ParseTimeArgument("2026-10-14 03:12", now), now);
  EXPECT_EQ(ParseTimeArgument("2026-10-14", now), 1791936000);
  for (const char* bad : {"", "-", "-2", "-2fortnights", "@", "@12x", "soon", "2026-13-01"})
    EXPECT_FALSE(ParseTimeArgument(bad, now)) << bad;
}

// The cgroup paths of the runtimes, as their documentation gives them.
TEST(JournalMetadata, NamesTheContainerOfACgroup) {
  const std::string id = "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b";
  auto check = [](std::string_view cgroup, std::string runtime, std::string container, std::string pod) {
    CgroupContainer c = ContainerOfCgroup(cgroup);
    EXPECT_EQ(c.runtime, runtime) << cgroup;
    EXPECT_EQ(c.container, container) << cgroup;
    EXPECT_EQ(c.pod, pod) << cgroup;
  };
  check("/system.slice/docker-" + id + ".scope", "docker", id.substr(0, 12), "");
  check("/docker/" + id, "docker", id.substr(0, 12), "");
  check("/machine.slice/libpod-" + id + ".scope/container", "podman", id.substr(0, 12), "");
  check("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12345678_9abc_def0_1234_56789abcdef0.slice/"
        "cri-containerd-" + id + ".scope",
        "containerd", id.substr(0, 12), "12345678-9abc-def0-1234-56789abcdef0");
  check("/kubepods.slice/kubepods-pod12345678_9abc_def0_1234_56789abcdef0.slice/crio-" + id + ".scope", "cri-o",
        id.substr(0, 12), "12345678-9abc-def0-1234-56789abcdef0");
  check("/kubepods/burstable/pod12345678-9abc-def0-1234-56789abcdef0/" + id, "kubernetes", id.substr(0, 12),
        "12345678-9abc-def0-1234-56789abcdef0");
  check("/machine.slice/machine-build\\x2dbox.scope/payload", "systemd-nspawn", "build-box", "");
  check("/machine.slice/systemd-nspawn@web.service/payload", "systemd-nspawn", "web", "");
  // No container: a service, a user's session, a short or odd id.
  check("/system.slice/nginx.service", "", "", "");
  check("/user.slice/user-1000.slice/session-3.scope", "", "", "");
  check("/system.slice/docker-1234.scope", "", "", "");
  check("/system.slice/docker-" + id + "0.scope", "", "", "");
  check("", "", "", "");
  check("////", "", "", "");
  check("/kubepods/pod", "", "", "");
}

// An entry's fields under the dataset's keys; never its environment or
// command line; its crash time from COREDUMP_TIMESTAMP.
TEST(JournalMetadata, KeepsTheAllowlistedFields) {
  CoredumpEntry e;
  e.realtime_us = 1791947521000000;
  e.fields = {{"_HOSTNAME", "node-9"}, {"COREDUMP_PID", "77"}, {"COREDUMP_UNIT", "trainer.service"},
              {"COREDUMP_TIMESTAMP", "1791947520123456"}, {"COREDUMP_PACKAGE_VERSION", "2.4-1"},
              {"COREDUMP_ENVIRON", "TOKEN=secret"}};
  Metadata md = JournalMetadata(e);
  EXPECT_EQ(*md.Get("host"), "node-9");
  EXPECT_EQ(*md.Get("host_source"), "journal");
  EXPECT_EQ(*md.Get("pid"), "77");
  EXPECT_EQ(*md.Get("unit"), "trainer.service");
  EXPECT_EQ(*md.Get("package_version"), "2.4-1");
  EXPECT_EQ(md.time, 1791947520);
  EXPECT_EQ(md.time_source, "journal");
  for (const auto& [k, v] : md.attributes) EXPECT_EQ(v.find("secret"), std::string::npos) << k;
  // Without a timestamp field, the entry's own time.
  e.fields.erase(e.fields.begin() + 3);
  EXPECT_EQ(JournalMetadata(e).time, 1791947521);
  // A malformed timestamp is not taken.
  e.fields.push_back({"COREDUMP_TIMESTAMP", "12x"});
  EXPECT_EQ(JournalMetadata(e).time, 1791947521);
}

TEST(Timestamps, ParsesTheFormsMetadataUses) {
  EXPECT_EQ(ParseIso8601("2026-10-14T03:12:00Z"), 1791947520);
  EXPECT_EQ(ParseIso8601("2026-10-14T05:12:00+02:00"), 1791947520);
  EXPECT_EQ(ParseIso8601("2026-10-14T05:12:00+0200"), 1791947520);
  EXPECT_EQ(ParseIso8601("2026-10-14 03:12:00.123Z"), 1791947520);
  EXPECT_EQ(ParseIso8601("2026-10-14T03:12Z"), 1791947520);
  EXPECT_EQ(ParseIso8601("2024-02-29"), 1709164800);
  EXPECT_EQ(ParseIso8601("1969-12-31T23:59:59Z"), -1);
  EXPECT_EQ(FormatIso8601(1791947520), "2026-10-14T03:12:00Z");
  for (const char* bad : {"", "2026", "2026-13-01", "2026-02-30", "2026-10-14T25:00:00Z", "2026-10-14T03:12:00Q",
                          "2026-10-14T03:12:00+", "yesterday", "2026-10-14T03:12:00Zjunk"}) {
    EXPECT_FALSE(ParseIso8601(bad).has_value()) << bad;
  }
}

TEST(Metadata, SystemdCoredumpFileNames) {
  Metadata md;
  ASSERT_TRUE(ParseCoredumpFileName("core.my.prog.1000.0123456789abcdef0123456789abcdef.4242.1791947520000000.zst", md));
  EXPECT_EQ(*md.Get("comm"), "my.prog");
  EXPECT_EQ(*md.Get("uid"), "1000");
  EXPECT_EQ(*md.Get("boot_id"), "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(*md.Get("pid"), "4242");
  EXPECT_EQ(md.time, 1791947520);
  EXPECT_EQ(md.time_source, "filename");
  Metadata other;
  EXPECT_FALSE(ParseCoredumpFileName("core.4242", other));
  EXPECT_FALSE(ParseCoredumpFileName("core.prog.1000.nothex.4242.1791947520000000", other));
  // A time past 2^64 microseconds (found by the fuzzer: it threw out of the parser).
  EXPECT_FALSE(ParseCoredumpFileName("core.prog.1000.0123456789abcdef0123456789abcdef.4.42210760411520000000.zst", other));
  EXPECT_TRUE(other.attributes.empty());
  Metadata largest;
  ASSERT_TRUE(ParseCoredumpFileName("core.prog.1000.0123456789abcdef0123456789abcdef.4.18446744073709551615", largest));
  EXPECT_EQ(largest.time, 18446744073709);
}

TEST(Metadata, SidecarThenXattrsThenNameThenMtime) {
  namespace fs = std::filesystem;
  std::string dir = ::testing::TempDir() + "/metadata-" + std::to_string(getpid());
  fs::create_directories(dir);
  std::string core = dir + "/core.prog.0.0123456789abcdef0123456789abcdef.77.1791947520000000.zst";
  std::ofstream(core) << "x";
  std::ofstream(core + ".json") << R"({"host": "we-node-07", "gpus": 8, "preempted": false, "boot_time": "2026-10-14T01:12:00Z", "nested": {"a": 1}})";
  bool xattrs = setxattr(core.c_str(), "user.coredump.hostname", "other-host", 10, 0) == 0 &&
                setxattr(core.c_str(), "user.coredump.rlimit", "-1", 2, 0) == 0;
  Metadata md = ReadMetadata(core, int64_t{1700000000} * 1000000000);
  EXPECT_EQ(*md.Get("host"), "we-node-07");  // the sidecar wins over the xattr
  EXPECT_EQ(*md.Get("gpus"), "8");
  EXPECT_EQ(*md.Get("preempted"), "false");
  EXPECT_EQ(*md.Get("nested"), R"({"a":1})");
  EXPECT_EQ(*md.Get("pid"), "77");
  EXPECT_EQ(md.time, 1791947520);  // from the name: the sidecar has no time
  EXPECT_EQ(md.time_source, "filename");
  EXPECT_EQ(md.Uptime(), 7200);
  if (xattrs) {
    EXPECT_EQ(*md.Get("hostname"), "other-host");
    EXPECT_EQ(*md.Get("rlimit"), "-1");
  } else {
    GTEST_LOG_(INFO) << "user xattrs not supported here; xattr precedence untested";
  }
  // The file's creation is the dump's beginning: taken before the mtime
  // when it is earlier by less than 10 minutes; a copied file (created
  // after its mtime) or a core written over an older one (created long
  // before) gives its mtime.
  std::string bare = dir + "/bare.core";
  std::ofstream(bare) << "x";
  int64_t s = 1000000000;
  Metadata born = ReadMetadata(bare, 1700000040 * s, 1700000000 * s);
  EXPECT_EQ(born.time, 1700000000);
  EXPECT_EQ(born.time_source, "btime");
  Metadata copied = ReadMetadata(bare, 1700000000 * s, 1700000040 * s);
  EXPECT_EQ(copied.time, 1700000000);
  EXPECT_EQ(copied.time_source, "mtime");
  Metadata rewritten = ReadMetadata(bare, 1700000000 * s, (1700000000 - 601) * s);
  EXPECT_EQ(rewritten.time, 1700000000);
  EXPECT_EQ(rewritten.time_source, "mtime");
  // StampInput reads the creation time the file system keeps (stat's %W).
  InputStamp stamp = StampInput(bare);
  std::string w = testing::Run("stat -c %W " + bare).out;
  if (std::stoll(w) > 0) {
    ASSERT_TRUE(stamp.btime_ns);
    EXPECT_EQ(*stamp.btime_ns / s, std::stoll(w));
  } else {
    EXPECT_FALSE(stamp.btime_ns);
  }
  // A broken sidecar is a warning, and the mtime gives the time.
  std::string plain = dir + "/plain.core";
  std::ofstream(plain) << "x";
  std::ofstream(plain + ".json") << "[1, 2";
  Metadata p = ReadMetadata(plain, int64_t{1700000000} * 1000000000 + 5);
  EXPECT_EQ(p.time, 1700000000);
  EXPECT_EQ(p.time_source, "mtime");
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("not a JSON object"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Inventory, CsvQuotingAndValidity) {
  EXPECT_EQ(SplitCsvLine(R"(a,"b, c","say ""hi""",)"), (std::vector<std::string>{"a", "b, c", "say \"hi\"", ""}));
  auto inv = Inventory::Parse(
      "host,valid_from,valid_to,physical\r\n"
      "vm-1,,2026-10-10T00:00:00Z,pm-a\n"
      "vm-1,2026-10-10T00:00:00Z,,pm-b\n");
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  Metadata before, after, untimed;
  for (Metadata* m : {&before, &after, &untimed}) m->Add("host", "vm-1");
  before.time = *ParseIso8601("2026-10-09T23:59:59Z");
  after.time = *ParseIso8601("2026-10-10T00:00:00Z");
  inv->Join(before);
  inv->Join(after);
  inv->Join(untimed);
  EXPECT_EQ(*before.Get("physical"), "pm-a");
  EXPECT_EQ(*after.Get("physical"), "pm-b");
  EXPECT_EQ(untimed.Get("physical"), nullptr);  // bounded rows need a crash time
  EXPECT_FALSE(Inventory::Parse("name,sku\nvm-1,D16\n").ok());
  EXPECT_FALSE(Inventory::Parse("host,sku\nvm-1\n").ok());
  EXPECT_FALSE(Inventory::Parse("host,valid_from\nvm-1,last week\n").ok());
}

TEST(Signature, SkipsMachineryAndClones) {
  std::vector<SignatureFrame> abort_path = {
      {"__pthread_kill_implementation.constprop.0", "/usr/lib/x86_64-linux-gnu/libc.so.6", false},
      {"raise", "/usr/lib/x86_64-linux-gnu/libc.so.6", false},
      {"abort", "/usr/lib/x86_64-linux-gnu/libc.so.6", false},
      {"__assert_fail", "/usr/lib/x86_64-linux-gnu/libc.so.6", false},
      {"Ledger::check.isra.0", "/opt/app/prog", false},
      {"Ledger::check.isra.0", "/opt/app/prog", false},
      {"main", "/opt/app/prog", false},
      {"__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6", false}};
  EXPECT_EQ(MakeSignature("abort-assert", abort_path), "abort-assert | Ledger::check | main");
  std::vector<SignatureFrame> null_call = {{"", "", false},
                                           {"", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", false},
                                           {"dispatch", "/opt/app/prog", true}};
  EXPECT_EQ(MakeSignature("call-to-null", null_call), "call-to-null | dispatch");
  std::vector<SignatureFrame> stripped = {{"", "/opt/app/prog-stripped", false}};
  EXPECT_EQ(MakeSignature("null-deref", stripped), "null-deref | ?? (prog-stripped)");
  EXPECT_EQ(MakeSignature("return-to-null", {}), "return-to-null");
}

}  // namespace
}  // namespace coroner
