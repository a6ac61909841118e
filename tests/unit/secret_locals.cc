// A program whose crashing frame holds its environment's secret in its
// locals, as programs do: the pointer getenv returned (into the
// environment's own bytes), a std::string copy (on the heap), a char array
// copy, beside an identity variable that may be shown. With "throw", the
// secret is quoted in an uncaught exception's what() instead.
//
//   HF_TOKEN=... SLURM_JOB_ID=... secret_locals [throw]
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
  *(volatile int*)0 = static_cast<int>(std::strlen(buf) + std::strlen(job ? job : ""));
  return 0;
}
