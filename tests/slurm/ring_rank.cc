// One rank of a job whose ranks pass a token around a ring over loopback
// TCP, as a collective does: rank i listens on a port of its own and
// sends to rank i + 1. With BASE_PORT 0 the port is the kernel's choice,
// written to ENV_DIR/rank-N.port, where rank N - 1 finds it: no other
// program can hold it (a port picked before the ranks start may be taken
// meanwhile, by the kernel for some connection's own end too); otherwise
// rank i listens on BASE_PORT + i. The rank CRASH dereferences NULL in its third round; the others
// find the ring broken (their predecessor's socket closes) and give up as
// a distributed runtime would, uncaught: odd ranks with PyTorch's
// c10::DistBackendError ("Watchdog caught collective operation timeout"),
// even ranks with NCCL's "communicator was aborted".
//
//   ring_rank BASE_PORT CRASH_RANK ENV_DIR
//
// A hang instead (RING_HANG_RANK set, CRASH_RANK -1): the rank
// RING_HANG_RANK, in its third round, before it forwards the token, reads
// a byte from the FIFO RING_FIFO (ReadShard <- LoadBatch), as a data
// loader blocked on a dead mount does; the others wait for the token in
// RingStep's recv. Once the byte comes, the ring goes on, and after
// RING_ROUNDS rounds every rank exits 0. RING_HANG_KIND chooses another
// hang that nothing ends: `spin` (WaitForFence <- LoadBatch polls a fence
// word no one sets, as a rank waiting on a GPU's completion flag does) or
// `deadlock` (LockBoth: two threads take two mutexes in opposite orders).
//
// The rank and the number of ranks are Slurm's (SLURM_PROCID,
// SLURM_NTASKS). Before the ring starts, each rank writes its Slurm
// variables to ENV_DIR/rank-N.env: what the test checks the core against.
#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

extern char** environ;

namespace c10 {
// The type PyTorch's ProcessGroupNCCL throws when its watchdog gives up.
class DistBackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
}  // namespace c10

namespace {

int rank_, size_;

[[noreturn]] void GiveUp(const char* what) {
  std::string where = "[Rank " + std::to_string(rank_) + "] ";
  if (rank_ % 2) throw c10::DistBackendError(where + "Watchdog caught collective operation timeout: " + what);
  throw std::runtime_error(where + "NCCL communicator was aborted: " + what);
}

std::string env_dir;

std::string PortFile(int rank) { return env_dir + "/rank-" + std::to_string(rank) + ".port"; }

// Listens on `port` (0: the kernel's choice, then written to the port file).
int Listen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 1) != 0) GiveUp("cannot listen");
  if (port == 0) {
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    std::string path = PortFile(rank_);
    FILE* f = std::fopen((path + ".tmp").c_str(), "w");
    if (!f) GiveUp("cannot write the port file");
    std::fprintf(f, "%d\n", ntohs(a.sin_port));
    std::fclose(f);
    std::rename((path + ".tmp").c_str(), path.c_str());
  }
  return fd;
}

// Rank `rank`'s port: BASE + rank, or its port file once it is there.
int PortOf(int rank, int base) {
  if (base != 0) return base + rank;
  for (int attempt = 0; attempt < 1200; ++attempt) {  // the next rank may start later: up to 60 s
    if (FILE* f = std::fopen(PortFile(rank).c_str(), "r")) {
      int port = 0;
      bool read = std::fscanf(f, "%d", &port) == 1;
      std::fclose(f);
      if (read) return port;
    }
    usleep(50000);
  }
  GiveUp("the next rank never listened");
}

int Connect(int port) {
  for (int attempt = 0; attempt < 1200; ++attempt) {  // the next rank may start later: up to 60 s
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    close(fd);
    usleep(50000);
  }
  GiveUp("cannot reach the next rank");
}

// The hang: a read nothing answers until the test writes the FIFO.
__attribute__((noinline)) void ReadShard(const char* path) {
  int fd = open(path, O_RDONLY);
  char byte;
  if (fd < 0 || read(fd, &byte, 1) != 1) GiveUp("the shard could not be read");
  close(fd);
}

volatile int fence_done;

// The spin: a completion flag polled, never set.
__attribute__((noinline)) void WaitForFence() {
  while (!fence_done) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
  }
}

pthread_mutex_t shard_lock = PTHREAD_MUTEX_INITIALIZER, stats_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_barrier_t both_hold;

void* StatsThread(void*) {
  pthread_mutex_lock(&stats_lock);
  pthread_barrier_wait(&both_hold);
  pthread_mutex_lock(&shard_lock);
  return nullptr;
}

// The deadlock: this thread holds shard_lock and wants stats_lock; the
// stats thread holds stats_lock and wants shard_lock.
__attribute__((noinline)) void LockBoth() {
  pthread_barrier_init(&both_hold, nullptr, 2);
  pthread_t stats;
  pthread_create(&stats, nullptr, StatsThread, nullptr);
  pthread_mutex_lock(&shard_lock);
  pthread_barrier_wait(&both_hold);
  pthread_mutex_lock(&stats_lock);
}

__attribute__((noinline)) void LoadBatch(int round) {
  const char* hang = std::getenv("RING_HANG_RANK");
  if (!hang || std::atoi(hang) != rank_ || round != 2) return;
  const char* kind = std::getenv("RING_HANG_KIND");
  if (kind && std::strcmp(kind, "spin") == 0) WaitForFence();
  else if (kind && std::strcmp(kind, "deadlock") == 0) LockBoth();
  else ReadShard(std::getenv("RING_FIFO"));
}

// The collective's wait: the token from the previous rank.
__attribute__((noinline)) void RingStep(int prev, int* token) {
  ssize_t n = recv(prev, token, sizeof *token, MSG_WAITALL);
  if (n != static_cast<ssize_t>(sizeof *token)) GiveUp("the previous rank closed its connection");
}

// The collective's step: forward the token. The crashing rank dies here.
__attribute__((noinline)) void Relay(int* token, int round, int to) {
  LoadBatch(round);
  if (rank_ == std::atoi(std::getenv("RING_CRASH_RANK")) && round == 2) token = nullptr;
  ++*token;
  if (send(to, token, sizeof *token, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof *token)) GiveUp("send failed");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || !std::getenv("SLURM_PROCID") || !std::getenv("SLURM_NTASKS")) {
    std::fprintf(stderr, "usage: ring_rank BASE_PORT CRASH_RANK ENV_DIR (under srun)\n");
    return 2;
  }
  rank_ = std::atoi(std::getenv("SLURM_PROCID"));
  size_ = std::atoi(std::getenv("SLURM_NTASKS"));
  int base = std::atoi(argv[1]);
  env_dir = argv[3];
  setenv("RING_CRASH_RANK", argv[2], 1);
  std::string path = std::string(argv[3]) + "/rank-" + std::to_string(rank_) + ".env";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "SLURM", 5) == 0) std::fprintf(f, "%s\n", *e);
    std::fclose(f);
  }
  // Its pid, for a test that reads the running ranks (written last: the
  // env file is complete once it is there).
  std::string pid_path = std::string(argv[3]) + "/rank-" + std::to_string(rank_) + ".pid";
  if (FILE* f = std::fopen((pid_path + ".tmp").c_str(), "w")) {
    std::fprintf(f, "%d\n", getpid());
    std::fclose(f);
    std::rename((pid_path + ".tmp").c_str(), pid_path.c_str());
  }
  int server = Listen(base == 0 ? 0 : base + rank_);
  int next = Connect(PortOf((rank_ + 1) % size_, base));
  int prev = accept(server, nullptr, nullptr);
  if (prev < 0) GiveUp("accept failed");
  int token = 0;
  const char* rounds = std::getenv("RING_ROUNDS");
  for (int round = 0; !rounds || round < std::atoi(rounds); ++round) {
    if (rank_ == 0) Relay(&token, round, next);
    RingStep(prev, &token);
    if (rank_ != 0) Relay(&token, round, next);
  }
  return 0;
}
