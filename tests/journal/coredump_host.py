#!/usr/bin/env python3
"""coredump_host.py OUT COREDUMP_BINARY

Plays, for Debian's real systemd-coredump, the two parts of a systemd host
it talks to, inside a private mount namespace whose /run/systemd is the
test's (tests/journal/run_systemd_coredump.sh):

- systemd's socket activation of systemd-coredump@.service: listens on
  /run/systemd/coredump (SOCK_SEQPACKET, Accept=yes) and runs the binary on
  each connection as the unit would (the connection as fd 3, LISTEN_FDS=1);
- journald's native socket /run/systemd/journal/socket: takes the entry the
  binary logs (a datagram, or a memfd passed with it when large) and adds
  the fields journald adds (__REALTIME_TIMESTAMP, _BOOT_ID, _MACHINE_ID,
  _HOSTNAME, ...), writing it in the journal export format to
  OUT/entry.export for systemd-journal-remote.

Writes OUT/ready once both sockets listen; exits after the first entry
whose MESSAGE_ID is systemd-coredump's, or after 120 s (a hang only).
"""
import array
import os
import socket
import struct
import sys
import time

COREDUMP_MESSAGE_ID = b"MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1"


def native_fields(payload):
    """The fields of a native-protocol datagram, as (name, value) bytes."""
    fields, at = [], 0
    while at < len(payload):
        nl = payload.index(b"\n", at)
        line = payload[at:nl]
        if b"=" in line:
            name, value = line.split(b"=", 1)
            at = nl + 1
        else:
            name = line
            (size,) = struct.unpack_from("<Q", payload, nl + 1)
            value = payload[nl + 9 : nl + 9 + size]
            at = nl + 9 + size + 1
        fields.append((name, value))
    return fields


def export_field(name, value):
    if b"\n" in value or any(b < 0x20 and b != 0x09 for b in value):
        return name + b"\n" + struct.pack("<Q", len(value)) + value + b"\n"
    return name + b"=" + value + b"\n"


def receive(journal):
    data, ancdata, _, _ = journal.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 4))
    for level, kind, cdata in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array("i")
            fds.frombytes(cdata[: len(cdata) - len(cdata) % fds.itemsize])
            for fd in fds:
                with os.fdopen(fd, "rb") as memfd:
                    memfd.seek(0)
                    data = memfd.read()
    return data


def main():
    out, binary = sys.argv[1], sys.argv[2]
    os.makedirs("/run/systemd/journal", exist_ok=True)
    journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journal.bind("/run/systemd/journal/socket")
    journal.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind("/run/systemd/coredump")
    listener.listen(4)
    listener.setblocking(False)
    open(os.path.join(out, "ready"), "w").close()
    children = []
    deadline = time.monotonic() + 120
    import select

    while time.monotonic() < deadline:
        ready, _, _ = select.select([listener, journal], [], [], 1.0)
        if listener in ready:
            conn, _ = listener.accept()
            pid = os.fork()
            if pid == 0:
                os.dup2(conn.fileno(), 3)
                env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
                os.execve(binary, [binary], env)
            conn.close()
            children.append(pid)
        if journal in ready:
            payload = receive(journal)
            if COREDUMP_MESSAGE_ID not in payload:
                continue
            now = int(time.time() * 1e6)
            with open("/proc/sys/kernel/random/boot_id") as f:
                boot = f.read().strip().replace("-", "")
            with open("/etc/machine-id") as f:
                machine = f.read().strip()
            added = [
                (b"__REALTIME_TIMESTAMP", str(now).encode()),
                (b"__MONOTONIC_TIMESTAMP", str(int(time.monotonic() * 1e6)).encode()),
                (b"_BOOT_ID", boot.encode()),
                (b"_MACHINE_ID", machine.encode()),
                (b"_HOSTNAME", socket.gethostname().encode()),
                (b"_TRANSPORT", b"journal"),
            ]
            with open(os.path.join(out, "entry.export"), "wb") as f:
                for name, value in added + native_fields(payload):
                    f.write(export_field(name, value))
                f.write(b"\n")
            break
    for pid in children:
        os.waitpid(pid, 0)


main()
