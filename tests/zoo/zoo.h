// The crash zoo as the tests see it: the manifest the zoo's Makefile writes
// (one real core per build variant), what each crasher's source says must
// happen (tests/crashers/expected.tsv), and gdb's view of every core.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace coroner::testing {

struct ZooCore {
  std::string variant;  // null_deref-O0
  std::string crasher;  // null_deref
  std::string binary, core, oracle;
};

// gtest prints a parameter by its name, not its bytes.
inline void PrintTo(const ZooCore& z, std::ostream* os) { *os << z.variant; }

struct Expectation {
  std::string signal, code, fault_address;
  int threads = 0;
  std::string syndrome, context;
};

// The rows of a tab-separated file, without blank and '#' lines.
std::vector<std::vector<std::string>> ReadTsv(const std::string& path);

// The zoo directory: $CORONER_ZOO (set by ctest).
std::string ZooDir();
std::vector<ZooCore> LoadZoo();
// The aarch64 zoo (zoo/a64/manifest.tsv): cores qemu-user wrote.
std::vector<ZooCore> LoadA64Zoo();
// Where the aarch64 zoo's libraries are: the cross toolchain's root.
constexpr const char* kA64Sysroot = "/usr/aarch64-linux-gnu";
// What `--exe` is given for an aarch64 zoo core: its program, then the
// zoo's libraries beside it (the ones the dlopen crashers load), which are
// not under the sysroot either.
std::vector<std::string> A64ExeFiles(const ZooCore& z);
// The aarch64 machine's tree at `dir`, as `--sysroot aarch64=` takes it:
// the cross toolchain's libraries at /lib and the aarch64 zoo's programs
// and libraries where they ran, with `also` (files of the host given at their own paths,
// as a library preloaded into them), hard links where they can be.
// Returns `dir`.
std::string MakeA64Root(const std::string& dir, const std::vector<std::string>& also = {});
std::map<std::string, Expectation> LoadExpectations();

struct GdbThread {
  int tid = 0;
  std::map<std::string, uint64_t> registers;
};

struct GdbMapping {
  uint64_t start, end, offset;
  std::string path;
  bool operator==(const GdbMapping&) const = default;
};

struct GdbFrame {
  uint64_t pc = 0;
  std::string type;      // normal, inline, tailcall, sigtramp
  std::string function;  // as gdb names it; "??" when unknown
  std::string file;      // "-" when unknown
  int line = 0;
};

// One argument or local of a frame of the crashing thread, as `bt full`
// prints it.
struct GdbVariable {
  int level = 0;  // the frame's level, inline frames counted
  bool argument = false;
  std::string name, value;
};

struct GdbInstruction {
  uint64_t address;
  std::string text;  // as GdbInstructionText leaves it: "mov 0x8(%rax),%rax"
};

// gdb's `x/i` text with its padding collapsed to one space and its
// annotations (` <symbol+off>` after an address, `# 0x... <symbol>` after a
// rip-relative operand) left out.
std::string GdbInstructionText(const std::string& line);

struct GdbOracle {
  std::vector<GdbInstruction> instructions;  // `x/2i $pc` in the crashing thread
  std::map<int, std::vector<GdbFrame>> frames;  // by tid, innermost first
  std::vector<GdbVariable> variables;           // the crashing thread's
  // The registers gdb restores from the first signal frame of each thread.
  std::map<int, std::map<std::string, uint64_t>> signal_context;
  std::string signal_name;  // from "Program terminated with signal SIGSEGV"
  int thread_count = 0;     // rows of `info threads`
  std::vector<GdbThread> threads;
  std::optional<int> sig_signo, sig_code;
  std::optional<uint64_t> sig_addr;
  std::vector<GdbMapping> mappings;
};

GdbOracle ParseGdbOracle(const std::string& path);

}  // namespace coroner::testing
