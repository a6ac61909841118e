# A process shaped like a GPU training job's python3, for the big-core
# benchmark (make_big_core.sh): numpy (and PyTorch, where installed) loaded,
# THREADS threads in varied waits (locks, queues, select, sleeps, events, and
# matrix products running with the GIL released), HEAP_GIB of touched heap in numpy arrays, and a
# MAP_GIB mapping reserved but barely touched (as a runtime's memory pool).
# Then the main thread reads through NULL with ctypes, and the kernel (or
# gdb) writes the core.
import ctypes
import mmap
import os
import queue
import select
import sys
import threading
import time

import numpy as np

try:
    # Debian's CPU PyTorch (python3-torch), where installed: some 270 more
    # shared objects mapped, as in a training process.
    import torch
except ImportError:
    torch = None

threads_wanted, heap_gib, map_gib = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])

MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)  # the module names it from 3.12; Linux's value
pool = mmap.mmap(-1, map_gib << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE)
for offset in range(0, map_gib << 30, 1 << 30):
    pool[offset] = 1  # one page a GiB touched

chunk = 256 << 20
# Weights, as a model's are: random floats, which compress as little as real ones.
rng = np.random.default_rng(0)
heap = [rng.random(chunk // 8) for _ in range(int(heap_gib * (1 << 30) // chunk))]

ready = threading.Barrier(threads_wanted + 1)
lock = threading.Lock()
lock.acquire()
event = threading.Event()
work_queue = queue.Queue()
r, _w = os.pipe()


def data_loader():
    ready.wait()
    work_queue.get()


def gradient_sync():
    ready.wait()
    lock.acquire()


def checkpoint_watcher():
    ready.wait()
    select.select([r], [], [])


def heartbeat():
    ready.wait()
    time.sleep(100000)


def barrier_wait():
    ready.wait()
    event.wait()


def matmul_loop(a):
    ready.wait()
    while True:
        a = a @ a
        a /= a.max()


def compute_step():
    matmul_loop(np.ones((256, 256)))


def torch_step():
    matmul_loop(torch.ones((256, 256)))


kinds = [data_loader, gradient_sync, checkpoint_watcher, heartbeat, barrier_wait]
for i in range(threads_wanted):
    target = compute_step if i < 2 else kinds[i % len(kinds)]
    if i == 2 and torch is not None:
        target = torch_step
    threading.Thread(target=target, daemon=True, name="%s-%d" % (target.__name__, i)).start()
ready.wait()
time.sleep(1)


def train_step():
    ctypes.string_at(0)


train_step()
