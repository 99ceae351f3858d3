#!/usr/bin/env python3
"""A pretend dev server for the vigil demo.

It behaves like the thing an agent would leave running in the background
while it works: it starts up, announces the port it listens on, then logs one
request line after another to stdout at a steady pace, a WARN to stderr now
and then, and, now and then, crashes: it prints a realistic stack trace to
stderr (a Node "Error: ...", a Go "panic: ..." or a Python "Traceback (most
recent call last):") and exits non-zero, as real dev servers do.

Nothing is random at run time: every choice (request paths, latencies, when
the WARNs come, whether, when and how it crashes) follows from --seed, so the
demo is reproducible. It always ends by itself: at the crash, or with a clean
shutdown after --duration seconds. SIGTERM (what `monitor_stop` sends) is a
clean shutdown too.

    python3 examples/demo/devserver.py --seed 7 --duration 20
    python3 examples/demo/devserver.py --crash never      # the "fixed" server

Only the standard library; no network: the "requests" are made up.
"""

import argparse
import random
import signal
import sys
import time

PATHS = [
    ("GET", "/"), ("GET", "/api/health"), ("GET", "/api/projects"),
    ("GET", "/api/projects/{id}"), ("POST", "/api/projects"), ("GET", "/api/users/{id}"),
    ("PUT", "/api/users/{id}"), ("GET", "/static/app.{hash}.js"), ("GET", "/api/search?q=vigil"),
    ("DELETE", "/api/sessions/{id}"),
]

WARNINGS = [
    "WARN slow query: SELECT * FROM projects WHERE owner_id = $1 took {ms}ms (threshold 500ms)",
    "WARN deprecated: res.send(status) is deprecated, use res.sendStatus(status) (src/routes/health.js:12)",
    "WARN memory usage at {pct}% of the 512 MiB limit",
    "WARN request to upstream auth service retried (attempt 2 of 3)",
    "WARN cache miss rate {pct}% over the last minute",
]

# The three ways this server dies. Each is what the real runtime prints.
CRASHES = {
    "error": ("""\
Error: connect ECONNREFUSED 127.0.0.1:5432
    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)
    at Pool.connect (/app/node_modules/pg-pool/index.js:45:11)
    at getUser (/app/src/routes/users.js:42:31)
    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)
    at next (/app/node_modules/express/lib/router/route.js:149:13)

Node.js v20.11.1""", 1),
    "panic": ("""\
panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x6b3a2f]

goroutine 42 [running]:
main.(*Server).handleUser(0xc0000a2000, {0x7f8a2c, 0xc0001b6000}, 0xc0001a4100)
\t/app/server.go:88 +0x2f
net/http.HandlerFunc.ServeHTTP(0xc0000b4060, {0x7f8a2c, 0xc0001b6000}, 0xc0001a4100)
\t/usr/local/go/src/net/http/server.go:2136 +0x29
net/http.serverHandler.ServeHTTP({0xc0000a6000}, {0x7f8a2c, 0xc0001b6000}, 0xc0001a4100)
\t/usr/local/go/src/net/http/server.go:2938 +0x8e
exit status 2""", 2),
    "traceback": ("""\
Traceback (most recent call last):
  File "/app/server/app.py", line 118, in dispatch
    return handler(request)
  File "/app/server/handlers.py", line 57, in get_user
    return render_profile(user["profile"])
  File "/app/server/render.py", line 23, in render_profile
    name = profile["display_name"].strip()
KeyError: 'display_name'""", 1),
}


def log(stream, line):
    """One line, flushed at once: a pipe would otherwise buffer it for seconds."""
    stream.write(line + "\n")
    stream.flush()


def stamp():
    return time.strftime("%H:%M:%S")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=7, help="decides everything that varies (default 7)")
    ap.add_argument("--duration", type=float, default=25.0,
                    help="seconds before a clean shutdown if it has not crashed (default 25)")
    ap.add_argument("--rate", type=float, default=4.0, help="request lines per second (default 4)")
    ap.add_argument("--port", type=int, default=3000)
    ap.add_argument("--crash", choices=["auto", "never", "error", "panic", "traceback"], default="auto",
                    help="auto: the seed decides whether (3 times in 4), when and how it crashes")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    # Time is counted in request ticks (--rate per second), never read from
    # the clock, so the same seed gives the same lines however loaded the
    # machine is. The crash is decided up front: somewhere in the second
    # half of the run.
    kind = args.crash
    if kind == "auto":
        kind = rng.choice(sorted(CRASHES)) if rng.random() < 0.75 else "never"
    last_tick = max(1, round(args.duration * args.rate))
    crash_tick = round(rng.uniform(0.5, 0.8) * last_tick) if kind != "never" else None
    next_warn = round(rng.uniform(1.5, 4.0) * args.rate)

    def on_term(signum, frame):
        log(sys.stdout, "%s received SIGTERM, closing server" % stamp())
        sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)

    log(sys.stdout, "%s dev server v1.4.2 starting (seed %d)" % (stamp(), args.seed))
    log(sys.stdout, "%s compiled 128 modules in 412ms" % stamp())
    log(sys.stdout, "%s listening on http://localhost:%d" % (stamp(), args.port))

    start = time.monotonic()
    for tick in range(1, last_tick + 1):
        # Sleep until this tick is due (a steady pace that does not drift).
        time.sleep(max(0.0, start + tick / args.rate - time.monotonic()))

        if tick == crash_tick:
            # The request that kills it is logged first, as it would be.
            log(sys.stdout, "%s GET /api/users/%d 500 - handler threw" % (stamp(), rng.randint(2, 99)))
            trace, code = CRASHES[kind]
            sys.stderr.write(trace + "\n")
            sys.stderr.flush()
            return code
        if tick >= next_warn:
            warning = rng.choice(WARNINGS).format(ms=rng.randint(600, 2400), pct=rng.randint(70, 95))
            log(sys.stderr, warning)
            next_warn = tick + round(rng.uniform(1.5, 4.0) * args.rate)

        method, path = rng.choice(PATHS)
        path = path.format(id=rng.randint(1, 500), hash="%08x" % rng.getrandbits(32))
        status = rng.choice([200] * 12 + [201, 204, 304, 404])
        log(sys.stdout, "%s %s %s %d %dms" % (stamp(), method, path, status, rng.randint(2, 60)))

    log(sys.stdout, "%s shutting down after %.0fs: %d requests served" % (stamp(), args.duration, last_tick))
    return 0

if __name__ == "__main__":
    sys.exit(main())
