// The decoder against gdb on whole functions of the system's libc: the
// AVX-512 (EVEX) string functions every modern CPU runs and where most NULL
// strings fault, their AVX2 and SSE siblings, and ordinary compiled C. gdb
// disassembles the file (no process needed, so the machine's own CPU does
// not matter); every instruction must have gdb's address, length and text.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "symbolize/disassembler.h"
#include "zoo/zoo.h"

namespace coroner {
namespace {

using testing::GdbInstructionText;

constexpr const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

struct GdbLine {
  uint64_t address;
  std::vector<std::byte> bytes;
  std::string text;
};

// `disassemble /r` of `function` in `file`: each instruction's address,
// bytes and text.
std::vector<GdbLine> GdbDisassemble(const std::string& file, const std::string& function) {
  std::string cmd = "timeout 300 gdb -nx -batch -q -ex 'disassemble /r " + function + "' " + file + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  // "   0x0000000000167ac2 <+2>:\t62 a1 fd 00 ef c0  \tvpxorq %xmm16,..."
  static const std::regex kLine(R"(^\s+0x([0-9a-f]+) <\+\d+>:\t([0-9a-f ]+)\t(.*)$)");
  std::vector<GdbLine> lines;
  std::istringstream ss(out);
  std::string line;
  std::smatch m;
  while (std::getline(ss, line)) {
    if (!std::regex_match(line, m, kLine)) continue;
    GdbLine g{std::stoull(m[1], nullptr, 16), {}, GdbInstructionText(m[3])};
    std::istringstream hex(m[2]);
    std::string byte;
    while (hex >> byte) g.bytes.push_back(static_cast<std::byte>(std::stoul(byte, nullptr, 16)));
    lines.push_back(std::move(g));
  }
  return lines;
}

class LibcFunction : public ::testing::TestWithParam<const char*> {};

TEST_P(LibcFunction, DecodesAsGdbDoes) {
  std::vector<GdbLine> gdb = GdbDisassemble(kLibc, GetParam());
  if (gdb.empty()) GTEST_SKIP() << GetParam() << ": gdb finds no such function in " << kLibc << " (no libc6-dbg?)";
  std::vector<std::byte> code;
  for (const GdbLine& g : gdb) code.insert(code.end(), g.bytes.begin(), g.bytes.end());
  std::vector<Instruction> ours = DecodeInstructions(code, gdb.front().address);
  ASSERT_EQ(ours.size(), gdb.size()) << GetParam();
  size_t evex = 0;
  for (size_t i = 0; i < gdb.size(); ++i) {
    SCOPED_TRACE(gdb[i].text);
    EXPECT_EQ(ours[i].address, gdb[i].address);
    EXPECT_EQ(ours[i].bytes.size() / 2, gdb[i].bytes.size());
    EXPECT_EQ(ours[i].text, gdb[i].text);
    evex += gdb[i].bytes.size() > 4 && gdb[i].bytes[0] == std::byte{0x62};
  }
  // The EVEX functions must really be EVEX code (what Capstone 4 failed on).
  if (std::string(GetParam()).find("evex") != std::string::npos ||
      std::string(GetParam()).find("avx512") != std::string::npos) {
    EXPECT_GT(evex, 10u) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Libc, LibcFunction,
                         ::testing::Values("__strlen_evex", "__strchr_evex", "__strcmp_evex", "__memchr_evex",
                                           "__memcmp_evex_movbe", "__memmove_avx512_unaligned_erms",
                                           "__memset_avx512_unaligned_erms", "__strcpy_evex", "__strlen_avx2",
                                           "__memmove_avx_unaligned_erms", "__strlen_sse2", "qsort_r",
                                           "__libc_start_main", "_IO_vfprintf", "malloc", "__pthread_kill_implementation"));

// Bytes that are no instruction end the decoding there, as gdb's "(bad)".
TEST(Decoder, StopsAtBytesThatAreNoInstruction) {
  const std::byte code[] = {std::byte{0x48}, std::byte{0x8b}, std::byte{0x07},   // mov (%rdi),%rax
                            std::byte{0x0f}, std::byte{0x0b},                     // ud2
                            std::byte{0x06}};                                     // push %es: invalid in 64-bit
  std::vector<Instruction> ins = DecodeInstructions(code, 0x1000);
  ASSERT_EQ(ins.size(), 2u);
  EXPECT_EQ(ins[0].text, "mov (%rdi),%rax");
  EXPECT_EQ(ins[1].text, "ud2");
  EXPECT_EQ(ins[1].address, 0x1003u);
  // A truncated instruction is not decoded past the end of the bytes.
  EXPECT_TRUE(DecodeInstructions(std::span(code, 2), 0x1000).empty());
}

}  // namespace
}  // namespace coroner
