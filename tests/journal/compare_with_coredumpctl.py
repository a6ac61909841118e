#!/usr/bin/env python3
"""compare_with_coredumpctl.py COREDUMPCTL.json CORONER.json

`coredumpctl list --json=short` and `coroner list --json --journal` on the
same journal files: the same crashes (pid, signal, executable, where the
core is), and coroner's newest first. Exit 1, saying how, when not."""
import json
import signal
import sys

theirs = json.load(open(sys.argv[1]))
ours = json.load(open(sys.argv[2]))
a = sorted((e["pid"], signal.Signals(e["sig"]).name, e["exe"], e["corefile"]) for e in theirs)
b = sorted((e["pid"], e["signal"], e["exe"], e["core"]) for e in ours)
if a != b:
    print("FAIL: coroner list differs from coredumpctl list:\n  coredumpctl", a, "\n  coroner    ", b)
    sys.exit(1)
times = [e["time"] for e in ours]
if times != sorted(times, reverse=True):
    print("FAIL: not newest first:", times)
    sys.exit(1)
print(f"ok: coroner list --journal agrees with coredumpctl on {len(a)} crashes, newest first")
