#!/usr/bin/env python3
"""A small server for test_readiness.py: `ready_server.py MODE PORT [ARG]`.

Modes:
  late DELAY_S      prints, sleeps, writes the time to $READY_MARK, binds,
                    answers HTTP 200
  never             prints and never binds
  toggle FILE       HTTP: 503 while FILE exists, else 200
  redirect          HTTP: 302 to the same URL, every time
  endless           HTTP: 200 and a body that never ends
  nonewline         HTTP: bytes without a newline, forever
  silent            accepts, never answers
Each request is printed as a line "request N", flushed."""

import os
import socket
import sys
import threading
import time

mode, port = sys.argv[1], int(sys.argv[2])
arg = sys.argv[3] if len(sys.argv) > 3 else None
requests = 0


def say(text):
    print(text, flush=True)


def answer(conn):
    global requests
    try:
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = conn.recv(4096)
            if not chunk:
                return
            data += chunk
        requests += 1
        say("request %d %s" % (requests, data.split(b"\r\n", 1)[0].decode("latin-1")))
        if mode == "toggle":
            code = b"503 Unavailable" if os.path.exists(arg) else b"200 OK"
            conn.sendall(b"HTTP/1.1 " + code + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        elif mode == "redirect":
            conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%d/loop\r\n"
                         b"Content-Length: 0\r\n\r\n" % port)
        elif mode == "endless":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
            while True:
                conn.sendall(b"x" * 65536)
        elif mode == "nonewline":
            while True:
                conn.sendall(b"y" * 65536)
        else:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except OSError:
        pass
    finally:
        conn.close()


say("starting %s" % mode)
if mode == "never":
    while True:
        say("still booting")
        time.sleep(0.2)
if mode == "late":
    time.sleep(float(arg))
    # What the test compares ready_at with: the wall time just before the bind.
    with open(os.environ["READY_MARK"], "w") as f:
        f.write("%d" % int(time.time() * 1000))
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(16)
say("listening on %d" % port)
held = []
while True:
    conn, _ = s.accept()
    if mode == "silent":
        held.append(conn)  # never answered, never closed
        continue
    threading.Thread(target=answer, args=(conn,), daemon=True).start()
