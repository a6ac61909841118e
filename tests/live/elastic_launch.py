#!/usr/bin/python3
"""A torchrun-style launcher for tests: starts NPROC copies of a script on
this node with the environment torchrun's elastic agent gives its workers,
waits for them, and when one fails, ends the others and fails too.

    elastic_launch.py --nproc N --run-id ID SCRIPT [ARGS...]

Workers get RANK, LOCAL_RANK, GROUP_RANK, ROLE_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS
and TORCHELASTIC_USE_AGENT_STORE, as on one node of a torchrun job.
"""
import argparse
import os
import signal
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc", type=int, required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    workers = []
    for rank in range(a.nproc):
        env = dict(os.environ)
        env.update({
            "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
            "WORLD_SIZE": str(a.nproc), "LOCAL_WORLD_SIZE": str(a.nproc), "ROLE_WORLD_SIZE": str(a.nproc),
            "ROLE_NAME": "default", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
            "TORCHELASTIC_RUN_ID": a.run_id, "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0", "TORCHELASTIC_USE_AGENT_STORE": "True",
        })
        workers.append(subprocess.Popen([sys.executable, a.script] + a.args, env=env))
    # As torchrun's agent: poll the workers; the first failure ends the rest.
    while True:
        codes = [w.poll() for w in workers]
        if any(c not in (None, 0) for c in codes):
            for w in workers:
                if w.poll() is None:
                    w.send_signal(signal.SIGTERM)
            for w in workers:
                w.wait()
            return 1
        if all(c == 0 for c in codes):
            return 0
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
