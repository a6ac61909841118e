#!/usr/bin/env python3
"""export_entries.py SPEC.json > STREAM

Writes journal entries in the journal export format (systemd's
JOURNAL_EXPORT_FORMATS documentation) for systemd-journal-remote to turn
into a .journal file. SPEC is a JSON list of entries, each an object of
field -> value: a string, or {"file": PATH} for a binary field holding the
file's bytes (a core stored in the journal)."""
import json
import struct
import sys


def field(name, value):
    if isinstance(value, dict):
        with open(value["file"], "rb") as f:
            data = f.read()
        return name.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
    text = str(value).encode()
    if b"\n" in text:
        return name.encode() + b"\n" + struct.pack("<Q", len(text)) + text + b"\n"
    return name.encode() + b"=" + text + b"\n"


def main():
    with open(sys.argv[1]) as f:
        entries = json.load(f)
    out = sys.stdout.buffer
    for entry in entries:
        for name, value in entry.items():
            out.write(field(name, value))
        out.write(b"\n")


main()
