// Crash zoo: an exception nobody catches: std::terminate, then abort():
// SIGABRT, SI_TKILL.
#include <stdexcept>

volatile int depth = 3;

__attribute__((noinline)) void parse_config(int d) {
  if (d == 0) throw std::runtime_error("config file is corrupt");
  parse_config(d - 1);
}

int main() {
  parse_config(depth);
  return 0;
}
