// glibc's IFUNC variants named as the function users know, in signatures.
// Oracle: Debian's own libc — every variant in its full symbol table
// (libc6-dbg's debug file) must come out as a function the library exports
// (nm -D), and a zoo core that crashed in strlen is signed `strlen`
// whichever variant this CPU ran, while its frame keeps the variant.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "processor/signature.h"
#include "unit/run_coroner.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

std::set<std::string> Lines(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.insert(line);
  return out;
}

TEST(IfuncNames, EveryVariantOfDebiansLibcIsAFunctionItExports) {
  const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
  auto id = testing::Run("readelf -n " + libc + " | awk '/Build ID/ {print $3}'");
  ASSERT_EQ(id.status, 0);
  std::string build_id = id.out.substr(0, id.out.find('\n'));
  ASSERT_GT(build_id.size(), 2u);
  std::string debug = "/usr/lib/debug/.build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
  auto all = testing::Run("nm " + debug + " | awk '$2 ~ /^[tTiI]$/ {print $3}'");
  ASSERT_EQ(all.status, 0) << "libc6-dbg's " << debug;
  auto exported = testing::Run("nm -D --defined-only " + libc + " | awk '{print $3}' | sed 's/@.*//'");
  ASSERT_EQ(exported.status, 0);
  std::set<std::string> functions = Lines(all.out), api = Lines(exported.out);
  ASSERT_GT(api.size(), 1000u);
  size_t variants = 0;
  std::set<std::string> strlens;
  for (const auto& f : functions) {
    std::string base = IfuncVariantBase(f);
    if (base == f) continue;
    ++variants;
    EXPECT_TRUE(api.count(base)) << f << " -> " << base << ", which libc does not export";
    if (base == "strlen") strlens.insert(f);
  }
  EXPECT_GT(variants, 150u);
  // Every strlen libc carries (sse2, avx2, evex, ...): one name.
  EXPECT_GE(strlens.size(), 3u);
  for (const char* v : {"__strlen_sse2", "__strlen_avx2", "__strlen_evex"}) {
    if (functions.count(v)) {
      EXPECT_TRUE(strlens.count(v)) << v;
    }
  }
}

TEST(IfuncNames, OtherNamesAreLeftAlone) {
  for (const char* name : {"strlen", "__libc_start_main", "__GI_raise", "__assert_fail_base", "__run_exit_handlers",
                           "__pthread_kill_implementation", "__sse2", "walk", "__", "_avx2", "my_avx2",
                           "__strcasecmp_l_nonascii"})
    EXPECT_EQ(IfuncVariantBase(name), name);
  EXPECT_EQ(IfuncVariantBase("__memmove_avx_unaligned_erms_rtm"), "memmove");
  EXPECT_EQ(IfuncVariantBase("__wcsnlen_sse4_1"), "wcsnlen");
  EXPECT_EQ(IfuncVariantBase("__memcpy_chk_evex_unaligned_erms"), "__memcpy_chk");
  EXPECT_EQ(IfuncVariantBase("__memcpy_thunderx2"), "memcpy");  // aarch64
  EXPECT_EQ(IfuncVariantBase("__strlen_asimd"), "strlen");
}

// reraise.c calls strlen(NULL) in parse_header: gdb's frame 0 is the
// variant this CPU ran, the signature says strlen.
TEST(IfuncNames, TheZoosStrlenCrashIsSignedStrlen) {
  std::string core = testing::ZooDir() + "/cores/reraise-O2.core";
  auto gdb = testing::Run("gdb -nx -batch -ex bt " + testing::ZooDir() + "/bin/reraise-O2 " + core +
                          " 2>/dev/null | grep -o '__strlen_[a-z0-9_]*' | head -1");
  ASSERT_EQ(gdb.status, 0);
  std::string variant = gdb.out.substr(0, gdb.out.find('\n'));
  ASSERT_FALSE(variant.empty()) << "gdb shows no strlen variant in reraise-O2's backtrace";
  auto r = testing::Coroner("analyze --json " + core);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"signature\":\"null-deref | strlen | parse_header | main\""), std::string::npos)
      << r.out.substr(0, 600);
  EXPECT_NE(r.out.find("\"function\":\"" + variant + "\""), std::string::npos) << "the frame keeps " << variant;
}

}  // namespace
}  // namespace coroner
