#!/usr/bin/env python3
"""A proxy to a real redis-server that answers one command itself.

    reply_proxy.py TARGET_PORT COMMAND REPLY PORT_FILE

Forwards every connection on 127.0.0.1 (a free port, written to PORT_FILE)
to 127.0.0.1:TARGET_PORT, except that each COMMAND (case-insensitive) a
client sends is answered with the bytes REPLY (Python escapes, e.g.
'*2\\r\\n:1\\r\\n:1\\r\\n') and never reaches the server. It plays a broken
or hostile server (or proxy) for one reply while the rest is real Redis,
so cli_test.sh can check what rlock does with replies Redis never sends.

Replies keep the order of the commands: each forwarded command's reply is
read whole (RESP2) from the server before the next queued reply is sent. A
connection that subscribes is passed through untouched from then on (its
messages do not answer commands).
"""
import os
import queue
import socket
import sys
import threading

SUBSCRIBES = {b"SUBSCRIBE", b"PSUBSCRIBE", b"SSUBSCRIBE"}


def line_end(buf, pos):
    end = buf.find(b"\r\n", pos)
    return None if end < 0 else end


def reply_end(buf, pos):
    """The end of the RESP2 reply at pos, or None when incomplete."""
    end = line_end(buf, pos)
    if end is None:
        return None
    kind, value = buf[pos:pos + 1], buf[pos + 1:end]
    if kind in (b"+", b"-", b":"):
        return end + 2
    if kind == b"$":
        n = int(value)
        if n < 0:
            return end + 2
        return end + 2 + n + 2 if len(buf) >= end + 2 + n + 2 else None
    if kind == b"*":
        at = end + 2
        for _ in range(max(int(value), 0)):
            at = reply_end(buf, at)
            if at is None:
                return None
        return at
    raise ValueError("unexpected reply byte %r" % kind)


def command_end(buf):
    """(end, name) of the first whole command (an array of bulk strings)."""
    end = line_end(buf, 0)
    if end is None:
        return None
    if buf[:1] != b"*":  # an inline command
        return end + 2, buf[:end].split(b" ")[0].upper()
    at = reply_end(buf, 0)
    if at is None:
        return None
    name_end = line_end(buf, end + 2)
    return at, buf[name_end + 2:line_end(buf, name_end + 2)].upper()


def serve(client, port, command, fake):
    server = socket.create_connection(("127.0.0.1", port))
    pending = queue.Queue()

    def up():
        buf, raw = b"", False
        while True:
            data = client.recv(65536)
            if not data:
                server.shutdown(socket.SHUT_WR)
                return
            if raw:
                server.sendall(data)
                continue
            buf += data
            while not raw:
                found = command_end(buf)
                if found is None:
                    break
                end, name = found
                if name == command:
                    pending.put(fake)
                else:
                    server.sendall(buf[:end])
                    pending.put(None)
                if name in SUBSCRIBES:
                    raw = True
                    pending.put(b"raw")
                    server.sendall(buf[end:])
                buf = buf[end:]

    def down():
        buf = b""
        while True:
            item = pending.get()
            if item == b"raw":
                client.sendall(buf)
                while True:
                    data = server.recv(65536)
                    if not data:
                        return
                    client.sendall(data)
            if item is not None:
                client.sendall(item)
                continue
            while (end := reply_end(buf, 0)) is None:
                data = server.recv(65536)
                if not data:
                    return
                buf += data
            client.sendall(buf[:end])
            buf = buf[end:]

    for f in (up, down):
        threading.Thread(target=guard(f, client, server), daemon=True).start()


def guard(f, *socks):
    def run():
        try:
            f()
        except OSError:
            pass
        finally:
            for s in socks:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
    return run


def main():
    port, command = int(sys.argv[1]), sys.argv[2].upper().encode()
    fake = sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    with open(sys.argv[4] + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.rename(sys.argv[4] + ".tmp", sys.argv[4])
    while True:
        client, _ = listener.accept()
        serve(client, port, command, fake)


if __name__ == "__main__":
    main()
