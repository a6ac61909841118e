"""One rank of a Python job whose ranks pass a token around a ring over
loopback TCP, as a collective does (the Python twin of
tests/slurm/ring_rank.cc), under a torchrun-style launcher: RANK and
WORLD_SIZE from the environment.

    ring_rank.py ENV_DIR FIFO HANG_RANK ROUNDS

Each rank works in a directory of its own, ENV_DIR/../rank-N (where the
kernel leaves its core), listens on a port the kernel picks, written to
ENV_DIR/rank-N.port, and its pid to ENV_DIR/rank-N.pid. The rank
HANG_RANK, in its third round, takes its batch from a queue that a loader
thread fills only once it has read a byte from FIFO (a data loader on a
dead mount): its main thread waits in Queue.get <- next_batch, the others
in ring_step's recv. After ROUNDS rounds every rank exits 0. SIGUSR1 makes
a rank write its threads' Python stacks (faulthandler, the interpreter's
own view) to ENV_DIR/rank-N.stacks.
"""
import faulthandler
import os
import queue
import signal
import socket
import struct
import sys
import threading
import time

env_dir, fifo, hang_rank, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
batches = queue.Queue()


def publish(name, value):
    path = os.path.join(env_dir, f"rank-{rank}.{name}")
    with open(path + ".tmp", "w") as f:
        f.write(f"{value}\n")
    os.rename(path + ".tmp", path)


def loader():
    with open(fifo, "rb") as f:
        f.read(1)
    batches.put(b"shard")


def next_batch():
    return batches.get()


def load_batch(round_):
    if rank == hang_rank and round_ == 2:
        next_batch()


def ring_step(prev):
    data = b""
    while len(data) < 4:
        chunk = prev.recv(4 - len(data))
        if not chunk:
            raise ConnectionError(f"[Rank {rank}] the previous rank closed its connection")
        data += chunk
    return struct.unpack("<i", data)[0]


def relay(token, round_, nxt):
    load_batch(round_)
    nxt.sendall(struct.pack("<i", token + 1))


def port_of(r):
    path = os.path.join(env_dir, f"rank-{r}.port")
    for _ in range(1200):  # the next rank may start later: up to 60 s
        try:
            with open(path) as f:
                return int(f.read())
        except (FileNotFoundError, ValueError):
            time.sleep(0.05)
    raise TimeoutError(f"rank {r} never listened")


def main():
    work = os.path.join(env_dir, "..", f"rank-{rank}")
    os.makedirs(work, exist_ok=True)
    os.chdir(work)
    stacks = open(os.path.join(env_dir, f"rank-{rank}.stacks"), "w")
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    if rank == hang_rank:
        threading.Thread(target=loader, name="loader", daemon=True).start()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    publish("port", server.getsockname()[1])
    publish("pid", os.getpid())
    nxt = socket.create_connection(("127.0.0.1", port_of((rank + 1) % size)))
    prev, _ = server.accept()
    token = 0
    for round_ in range(rounds):
        if rank == 0:
            relay(token, round_, nxt)
        token = ring_step(prev)
        if rank != 0:
            relay(token, round_, nxt)


main()
