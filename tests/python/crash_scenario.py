# A python3 process shaped like the ones that crash in the field, for the
# Python-stack tests: threads blocked in a lock, a queue, select() and a
# sleep, one running a C extension (hashlib's PBKDF2, which releases the
# GIL), and a main thread that recurses, sorts through libc's qsort with a
# Python comparison (an extension calling back into Python) and, in that
# callback, reads through a NULL char * with ctypes while it holds the GIL.
#
# Just before the crash it writes, to the file named by its argument, the
# interpreter's own view of every thread (sys._current_frames): native
# thread id, and the frames innermost first as (qualified name, file, line).
# That is what the reader of the core must find.
import ctypes
import hashlib
import json
import queue
import select
import sys
import threading
import time

out_path = sys.argv[1]
ready = threading.Barrier(6)


def wait_on_lock(lock):
    ready.wait()
    lock.acquire()


def wait_on_queue(q):
    ready.wait()
    q.get()


def wait_in_select(r):
    ready.wait()
    select.select([r], [], [])


def sleep_in_c():
    ready.wait()
    time.sleep(1000)


def hash_forever():
    ready.wait()
    hashlib.pbkdf2_hmac("sha256", b"password", b"salt", 10**9)


def frames_of(frame, crash_line=None):
    frames = []
    while frame is not None:
        code = frame.f_code
        frames.append({"function": code.co_qualname, "file": code.co_filename, "line": frame.f_lineno})
        frame = frame.f_back
    if crash_line is not None:
        frames[0]["line"] = crash_line
    return frames


def write_threads(here, crash_line):
    by_ident = {t.ident: t for t in threading.enumerate()}
    threads = []
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            frames = frames_of(here, crash_line)
        else:
            frames = frames_of(frame)
        threads.append({"tid": by_ident[ident].native_id, "main": ident == threading.get_ident(), "frames": frames})
    version = "%d.%d.%d" % sys.version_info[:3]
    with open(out_path, "w") as f:
        json.dump({"version": version, "threads": threads}, f)


def compare(a, b):
    here = sys._getframe()
    write_threads(here, here.f_lineno + 1)
    ctypes._string_at(0, -1)  # strlen(NULL) in libc, the GIL held
    return 0


def sort_with_callback():
    values = (ctypes.c_int * 4)(4, 3, 2, 1)
    callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))(compare)
    libc = ctypes.CDLL(None)
    libc.qsort(values, len(values), ctypes.sizeof(ctypes.c_int), callback)


class Trainer:
    def step(self, depth):
        if depth == 0:
            return sort_with_callback()
        return self.step(depth - 1)


def main():
    global ballast
    # 48 MiB that does not compress, mapped between the interpreter's heap
    # and the end of the core: in the core's .zst, the heap lies far behind
    # the decoder's window once the stacks are unwound, so the Python frames
    # must come from the read plan (as in a training process's huge core).
    ballast = __import__("os").urandom(48 << 20)
    lock = threading.Lock()
    lock.acquire()
    r, _w = __import__("os").pipe()
    targets = [(wait_on_lock, (lock,)), (wait_on_queue, (queue.Queue(),)), (wait_in_select, (r,)),
               (sleep_in_c, ()), (hash_forever, ())]
    for target, args in targets:
        threading.Thread(target=target, args=args, daemon=True).start()
    ready.wait()
    time.sleep(0.5)  # every thread is in its blocking call by now
    Trainer().step(40)


main()
