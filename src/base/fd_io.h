// Whole reads and writes on a file descriptor: the loops every caller of
// read(2) and write(2) needs (short transfers, EINTR), written once.
#pragma once

#include <cstddef>

namespace coroner {

// Writes all n bytes; false when the descriptor fails or takes none.
bool WriteAll(int fd, const void* data, size_t n);
// Reads exactly n bytes; false at an error or at the end before n.
bool ReadAll(int fd, void* data, size_t n);

}  // namespace coroner
