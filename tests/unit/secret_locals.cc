// A program whose crashing frame holds its environment's secret in its
// locals, as programs do: the pointer getenv returned (into the
// environment's own bytes), a std::string copy (on the heap), a char array
// copy, beside an identity variable that may be shown. With "throw", the
// secret is quoted in an uncaught exception's what() instead. With "word",
// 8 of its bytes (from its 9th) are a number local, and the program
// stores through them as if they were a pointer (a string overwriting a
// pointer): they sit in a register, and are the address the diagnosis
// reads.
//
//   HF_TOKEN=... SLURM_JOB_ID=... secret_locals [throw|word]
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

int main(int argc, char** argv) {
  const char* token = std::getenv("HF_TOKEN");
  const char* job = std::getenv("SLURM_JOB_ID");
  std::string copy = token ? token : "";
  char buf[96];
  std::strncpy(buf, copy.c_str(), sizeof buf - 1);
  buf[sizeof buf - 1] = 0;
  if (argc > 1 && std::strcmp(argv[1], "throw") == 0) throw std::runtime_error("token rejected: " + copy);
  if (argc > 1 && std::strcmp(argv[1], "word") == 0 && copy.size() >= 16) {
    uint64_t word;
    std::memcpy(&word, copy.data() + 8, sizeof word);
    volatile uint64_t pointer = word;
    *reinterpret_cast<volatile int*>(static_cast<uintptr_t>(pointer)) = 1;
  }
  *(volatile int*)0 = static_cast<int>(std::strlen(buf) + std::strlen(job ? job : ""));
  return 0;
}
