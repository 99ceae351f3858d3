"""The scenario of bench/signal: a scripted noisy dev server, as data.

generate(seed, quick) returns a schedule: about an hour of a dev server's
logs compressed to about 100 s (20 s with quick), written by
bench/signal_child.py line for line at its scheduled time. The schedule is a
dict:

  lines      [[t_ms, stream, text, role, incident_no, rep], ...] in write
             order. role is "normal" (ordinary output, warnings included),
             "decoy" (a line that only looks like an error: error_count=0,
             "Found 0 errors", an `uncaught` counter, ...), "header" (the
             line that names a failure: the exception or panic line, a
             Traceback header, `Caused by:`, a tsc error, a 5xx access line)
             or "trace" (every other line of an incident: frames, source and
             caret lines, blank lines inside a trace, `Node.js v20.11.1`,
             `exit status 2`), or "benign" (BENIGN: an express server's
             client-abort line, which the built-in `^Error:` takes for a
             failure; it comes once after each of BENIGN_AFTER, the issue 26 leak that an
             agent silences with incident_ignore). incident_no is 0 for normal and decoy lines,
             else the incident's number (1..). rep is 0, except in the crash
             loop, where it is the iteration (0 = the first crash).
             Consecutive entries with the same t_ms and stream are one
             write(2) (a "write group").
  incidents  [{no, name, kind, what, loop, reps, stream}] in order of number
  duration_ms, seed, quick, counts

Everything comes from one random.Random(seed): the same seed gives the same
schedule, byte for byte. Nothing here talks to vigil.
"""

import random

# The benign line an agent would rather silence (issue 26), and where it
# comes: on stderr, each its own write, midway between standalone incident
# k+1 and the next (or the loop), for each k here: far from every trace, and
# more than incident.summary_after_ms apart in the full run, so that with
# the defaults each repeat is a summary of its own (three wakes).
BENIGN = "Error: request aborted (client closed the connection)"
BENIGN_AFTER = (0, 3, 6)

# The "hour" the scenario stands for: the clocks printed in the lines run
# from 10:00:00 to 11:00:00 however long the replay is.
HOUR_MS = 3600 * 1000
DAY = "2024-05-14"


class Clock:
    def __init__(self, duration_ms):
        self.scale = HOUR_MS / float(duration_ms)

    def ms(self, t):
        """Milliseconds since 10:00:00.000 of the simulated day."""
        return int(t * self.scale) + 10 * 3600 * 1000

    def hms(self, t):
        m = self.ms(t)
        return "%02d:%02d:%02d" % (m // 3600000, m // 60000 % 60, m // 1000 % 60)

    def ampm(self, t):
        m = self.ms(t)
        h = m // 3600000
        return "%d:%02d:%02d %s" % (h % 12 or 12, m // 60000 % 60, m // 1000 % 60, "AM" if h < 12 else "PM")

    def iso(self, t):
        m = self.ms(t)
        return "%sT%s.%03dZ" % (DAY, self.hms(t), m % 1000)

    def golog(self, t):
        return "%s %s" % (DAY.replace("-", "/"), self.hms(t))

    def epoch_ms(self, t):
        return 1715680800000 + self.ms(t) - 10 * 3600 * 1000


# ---------------------------------------------------------------- normal output

API_PATHS = ["/api/users/{id}", "/api/orders/{id}", "/api/orders?page={n}", "/api/cart",
             "/api/session", "/api/products/{id}", "/api/search?q=shoes&page={n}",
             "/api/health", "/api/rates?base=EUR", "/", "/assets/index-{hash}.js",
             "/assets/index-{hash}.css", "/favicon.ico", "/api/notifications?since={id}"]
METHODS = ["GET"] * 8 + ["POST", "POST", "PUT", "DELETE"]
COMPONENTS = ["App", "OrderList", "OrderRow", "CartDrawer", "Header", "UserMenu", "SearchBox",
              "ProductCard", "Checkout", "Pagination", "Toast", "Sidebar"]


def hexid(R, n=8):
    return "".join(R.choice("0123456789abcdef") for _ in range(n))


def fill(R, s):
    return (s.replace("{id}", str(R.randint(1, 9999))).replace("{n}", str(R.randint(1, 40)))
            .replace("{hash}", hexid(R, 8)))


def ev_access(R, C, t):
    status = R.choices([200, 304, 404, 201, 204], [62, 20, 8, 6, 4])[0]
    method = R.choice(METHODS)
    path = fill(R, R.choice(API_PATHS))
    if status == 304 or not path.startswith("/api/") or path == "/api/health":
        method = "GET"
    if status == 404:
        path = R.choice(["/favicon.ico", "/api/users/%d" % R.randint(1, 9999), "/robots.txt",
                         "/apple-touch-icon.png", "/api/v0/legacy"])
    lat = R.lognormvariate(1.6, 0.9)
    size = "-" if status in (304, 204) else str(R.randint(20, 24000))
    return [(0, "stdout", [("%s %s %d %.3f ms - %s" % (method, path, status, lat, size), "normal")])]


def ev_api_info(R, C, t):
    s = R.choice([
        "[api] INFO  db pool: %d/10 connections in use" % R.randint(1, 9),
        "[api] INFO  job queue depth=%d oldest=%ds" % (R.randint(0, 40), R.randint(0, 90)),
        "[api] INFO  session store: %d active sessions" % R.randint(3, 80),
        "[api] INFO  rates refreshed from gateway in %dms" % R.randint(4, 90),
        "[api] INFO  email queued to user %d (template=order_shipped)" % R.randint(1, 9999),
    ])
    return [(0, "stdout", [(s, "normal")])]


def ev_api_debug(R, C, t):
    s = R.choice([
        "[api] DEBUG cache hit key=user:%d ttl=%ds" % (R.randint(1, 9999), R.randint(1, 300)),
        "[api] DEBUG cache miss key=product:%d" % R.randint(1, 9999),
        "[api] DEBUG sql SELECT * FROM orders WHERE user_id = $1 LIMIT 20 (%.1fms)" % R.uniform(0.3, 30),
        "[api] DEBUG auth: token ok for user %d (exp in %dm)" % (R.randint(1, 9999), R.randint(1, 59)),
    ])
    return [(0, "stdout", [(s, "normal")])]


def ev_pino(R, C, t):
    s = ('{"level":30,"time":%d,"pid":4821,"hostname":"devbox","reqId":"req-%s","msg":"request completed",'
         '"res":{"statusCode":%d},"responseTime":%.1f}' % (C.epoch_ms(t), hexid(R, 4), R.choice([200, 200, 304]),
                                                           R.uniform(0.5, 60)))
    return [(0, "stdout", [(s, "normal")])]


def ev_vite(R, C, t):
    n = R.choice([1, 1, 1, 2, 3])
    lines = [("%s [vite] hmr update /src/components/%s.tsx" % (C.ampm(t), R.choice(COMPONENTS)), "normal")
             for _ in range(n)]
    if R.random() < 0.1:
        lines = [("%s [vite] page reload src/main.tsx" % C.ampm(t), "normal")]
    return [(0, "stdout", lines)]


def ev_webpack(R, C, t):
    ms = R.randint(300, 1900)
    lines = [("asset main.js %.2f MiB [emitted] (name: main)" % R.uniform(1.1, 1.4), "normal"),
             ("asset vendors.js %.2f MiB [cached] (name: vendors)" % R.uniform(2.0, 2.2), "normal"),
             ("cached modules %.1f MiB [cached] %d modules" % (R.uniform(3, 4), R.randint(600, 700)), "normal"),
             ("runtime modules %.1f KiB %d modules" % (R.uniform(20, 40), R.randint(10, 20)), "normal")]
    if R.random() < 0.2:
        lines.append(("webpack 5.90.1 compiled with 1 warning in %d ms" % ms, "normal"))
    else:
        lines.append(("webpack 5.90.1 compiled successfully in %d ms" % ms, "normal"))
    return [(0, "stdout", lines)]


def ev_tsc(R, C, t):
    later = R.randint(400, 900)
    return [(0, "stdout", [("[%s] File change detected. Starting incremental compilation..." % C.ampm(t), "normal")]),
            (later, "stdout", [("", "normal"),
                               ("[%s] Found 0 errors. Watching for file changes." % C.ampm(t + later), "decoy")])]


def ev_decoy_out(R, C, t):
    s = R.choice([
        "[api] INFO  metrics flush ok error_count=0 warn_count=%d dur=%dms" % (R.randint(0, 5), R.randint(1, 40)),
        "[client] ErrorBoundary rendered fallback=false route=/orders/%d" % R.randint(1, 9999),
        "[lint] eslint: no errors found (%d files)" % R.randint(40, 60),
        "[api] INFO  sentry: captured 0 exceptions in the last 60s",
        "GET /api/errors?since=%sT%s 200 %.3f ms - %d" % (DAY, C.hms(t), R.uniform(1, 9), R.randint(2, 400)),
        "GET /assets/ErrorPage-%s.js 304 %.3f ms - -" % (hexid(R, 8), R.uniform(0.5, 3)),
        "%s [vite] hmr update /src/components/ErrorBanner.tsx" % C.ampm(t),
        "[test] 42 passed, 0 failed, 0 errors (jest --watch)",
    ])
    return [(0, "stdout", [(s, "decoy")])]


def ev_py_info(R, C, t):
    s = R.choice([
        "INFO:worker.tasks:job %d done in %.2fs" % (R.randint(1000, 9999), R.uniform(0.05, 3)),
        "INFO:worker.tasks:job %d picked up (queue=default, attempt=1)" % R.randint(1000, 9999),
        'DEBUG:urllib3.connectionpool:https://api.stripe.test:443 "POST /v1/charges HTTP/1.1" 200 %d' % R.randint(200, 2000),
        "DEBUG:worker.cache:refreshed %d keys in %dms" % (R.randint(1, 400), R.randint(1, 80)),
        "WARNING:worker.tasks:job %d took %.1fs (slow, threshold 2.0s)" % (R.randint(1000, 9999), R.uniform(2, 6)),
    ])
    return [(0, "stderr", [(s, "normal")])]


def ev_go(R, C, t):
    s = R.choice([
        "%s gateway: proxied GET /v1/rates?base=%s in %dms" % (C.golog(t), R.choice(["EUR", "USD", "GBP"]), R.randint(1, 60)),
        "%s gateway: cache miss rates:%s, fetching upstream" % (C.golog(t), R.choice(["EUR", "USD", "GBP"])),
        "%s gateway: %d open connections" % (C.golog(t), R.randint(1, 40)),
    ])
    return [(0, "stderr", [(s, "normal")])]


def ev_node_debug(R, C, t):
    s = R.choice([
        "  app:cache hit user:%d +%dms" % (R.randint(1, 9999), R.randint(0, 400)),
        "  app:queue published order.created id=%d +%dms" % (R.randint(1, 9999), R.randint(0, 900)),
        "  express:router dispatching GET /api/orders +%dms" % R.randint(0, 50),
    ])
    return [(0, "stderr", [(s, "normal")])]


def ev_warning(R, C, t):
    k = R.randrange(5)
    if k == 0:
        return [(0, "stderr", [
            ("(node:4821) [DEP0040] DeprecationWarning: The `punycode` module is deprecated. "
             "Please use a userland alternative instead.", "normal"),
            ("(Use `node --trace-deprecation ...` to show where the warning was created)", "normal")])]
    if k == 1:
        return [(0, "stderr", [
            ("Browserslist: caniuse-lite is outdated. Please run:", "normal"),
            ("  npx update-browserslist-db@latest", "normal"),
            ("  Why you should do it regularly: https://github.com/browserslist/update-db#readme", "normal")])]
    if k == 2:
        return [(0, "stderr", [
            ("/app/worker/settings.py:14: UserWarning: DEBUG is on; do not use in production", "normal"),
            ('  warnings.warn("DEBUG is on; do not use in production")', "normal")])]
    if k == 3:
        return [(0, "stderr", [
            ("%s [vite] warning: \"default\" is not exported by \"node_modules/dayjs/esm/index.js\"" % C.ampm(t),
             "normal")])]
    return [(0, "stderr", [("WARNING:worker.tasks:job %d retry 1/5 after timeout" % R.randint(1000, 9999), "normal")])]


def ev_decoy_err(R, C, t):
    s = R.choice([
        "  app:health uncaught rejections so far: 0 +%dms" % R.randint(0, 60),
        "INFO:worker.http:retrying request (errors so far: 0) POST https://api.stripe.test/v1/charges",
        "%s gateway: upstream errors=0 timeouts=0 in last 60s" % C.golog(t),
        "DEBUG:worker.dlq:no errors found in dead-letter queue",
        "  app:errors ErrorBoundary reports flushed (0 pending) +%dms" % R.randint(0, 60),
    ])
    return [(0, "stderr", [(s, "decoy")])]


# (function, weight); an event writes LINES_PER_EVENT lines on average
# (measured over 20000 draws), which sets how many events make ~10000 lines.
EVENTS = [
    (ev_access, 38), (ev_api_info, 8), (ev_api_debug, 7), (ev_pino, 5), (ev_vite, 4),
    (ev_webpack, 1.2), (ev_tsc, 1.0), (ev_decoy_out, 2.0),
    (ev_py_info, 12), (ev_go, 8), (ev_node_debug, 5), (ev_warning, 1.2), (ev_decoy_err, 1.6),
]
LINES_PER_EVENT = 1.113


def startup(R, C):
    return [
        (0, "stdout", [("> shop@1.4.2 dev", "normal"), ("> concurrently -r \"npm:dev:*\"", "normal"),
                       ("", "normal")]),
        (40, "stdout", [("[nodemon] 3.0.3", "normal"), ("[nodemon] to restart at any time, enter `rs`", "normal"),
                        ("[nodemon] watching path(s): src/**/*", "normal"),
                        ("[nodemon] starting `node src/server.js`", "normal")]),
        (90, "stderr", [("  app:config unhandled-rejections=strict (an UnhandledPromiseRejection will exit the process) +0ms",
                         "decoy")]),
        (120, "stderr", [("INFO:worker.main:starting worker pid=5120 concurrency=4", "normal")]),
        (150, "stderr", [("%s gateway: listening on :8080" % C.golog(150), "normal")]),
        (210, "stdout", [("", "normal"), ("  VITE v5.1.4  ready in 412 ms", "normal"), ("", "normal"),
                         ("  \u279c  Local:   http://localhost:5173/", "normal"),
                         ("  \u279c  Network: use --host to expose", "normal")]),
        (260, "stdout", [("[api] INFO  listening on http://localhost:3000", "normal")]),
    ]


# ---------------------------------------------------------------- incidents
# Each returns [(dt_ms, stream, [(text, role), ...]), ...]: the incident's
# write groups, plus the ordinary lines a real program prints around it
# (role normal: a restart notice, a supervisor line).

def inc_node_typeerror(R, C, t):
    return [
        (0, "stderr", [
            ("/app/src/routes/users.js:42", "trace"),
            ("    const id = req.session.user.id;", "trace"),
            ("                                ^", "trace"),
            ("", "trace"),
            ("TypeError: Cannot read properties of undefined (reading 'id')", "header"),
            ("    at getProfile (/app/src/routes/users.js:42:33)", "trace"),
            ("    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)", "trace"),
            ("    at next (/app/node_modules/express/lib/router/route.js:149:13)", "trace"),
            ("    at Route.dispatch (/app/node_modules/express/lib/router/route.js:119:3)", "trace"),
            ("    at Layer.handle [as handle_request] (/app/node_modules/express/lib/router/layer.js:95:5)", "trace"),
            ("    at /app/node_modules/express/lib/router/index.js:284:15", "trace"),
            ("    at Function.process_params (/app/node_modules/express/lib/router/index.js:346:12)", "trace"),
            ("    at next (/app/node_modules/express/lib/router/index.js:280:10)", "trace"),
            ("    at requireAuth (/app/src/middleware/auth.js:18:5)", "trace"),
            ("    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)", "trace")]),
        (1, "stderr", [("", "trace"), ("Node.js v20.11.1", "trace")]),
        (30, "stdout", [("[nodemon] app crashed - waiting for file changes before starting...", "normal")]),
        (2400, "stdout", [("[nodemon] restarting due to changes...", "normal"),
                          ("[nodemon] starting `node src/server.js`", "normal")]),
        (2700, "stdout", [("[api] INFO  listening on http://localhost:3000", "normal")]),
    ]


def inc_http_500(R, C, t):
    return [(0, "stdout", [("POST /api/reports/weekly 500 1832.555 ms - 21", "header")])]


def inc_py_keyerror(R, C, t):
    return [
        (0, "stderr", [
            ("Traceback (most recent call last):", "header"),
            ('  File "/app/worker/main.py", line 61, in <module>', "trace"),
            ("    main()", "trace"),
            ('  File "/app/worker/main.py", line 54, in main', "trace"),
            ("    run_forever(queue)", "trace")]),
        (1, "stderr", [
            ('  File "/app/worker/loop.py", line 33, in run_forever', "trace"),
            ("    handle(job)", "trace"),
            ('  File "/app/worker/tasks.py", line 88, in handle', "trace"),
            ('    uid = job.payload["user_id"]', "trace"),
            ("          ~~~~~~~~~~~^^^^^^^^^^^", "trace"),
            ("KeyError: 'user_id'", "header")]),
        (1200, "stderr", [("INFO:worker.main:starting worker pid=%d concurrency=4" % R.randint(5121, 5999), "normal")]),
    ]


def inc_tsc_error(R, C, t):
    return [
        (-600, "stdout", [("[%s] File change detected. Starting incremental compilation..." % C.ampm(t - 600), "normal")]),
        (0, "stdout", [
            ("", "normal"),
            ("src/routes/orders.ts:41:17 - error TS2339: Property 'total' does not exist on type 'Order'.", "header"),
            ("", "trace"),
            ("41   const sum = order.total + shipping;", "trace"),
            ("                   ~~~~~", "trace"),
            ("", "trace"),
            ("[%s] Found 1 error. Watching for file changes." % C.ampm(t), "trace")]),
    ]


def inc_go_panic(R, C, t):
    return [
        (0, "stderr", [
            ("panic: runtime error: index out of range [5] with length 3", "header"),
            ("", "trace"),
            ("goroutine 1 [running]:", "trace"),
            ("main.parseRates(...)", "trace"),
            ("\t/app/cmd/gateway/rates.go:27", "trace"),
            ("main.(*Server).handleRates(0xc0000b2000, {0x7c1e60, 0xc0001a40e0}, 0xc0001b6000)", "trace"),
            ("\t/app/cmd/gateway/server.go:88 +0x1d", "trace"),
            ("net/http.HandlerFunc.ServeHTTP(0xc0000a6010, {0x7c1e60, 0xc0001a40e0}, 0xc0001b6000)", "trace"),
            ("\t/usr/local/go/src/net/http/server.go:2166 +0x29", "trace"),
            ("main.main()", "trace"),
            ("\t/app/cmd/gateway/main.go:31 +0x1d5", "trace")]),
        (1, "stderr", [
            ("", "trace"),
            ("goroutine 18 [chan receive]:", "trace"),
            ("main.(*Cache).refreshLoop(0xc000012345)", "trace"),
            ("\t/app/cmd/gateway/cache.go:44 +0x65", "trace"),
            ("created by main.main in goroutine 1", "trace"),
            ("\t/app/cmd/gateway/main.go:27 +0x85", "trace")]),
        (6, "stderr", [("exit status 2", "trace")]),
        (1500, "stderr", [("%s gateway: listening on :8080" % C.golog(t + 1500), "normal")]),
    ]


def inc_py_chained(R, C, t):
    return [
        (0, "stderr", [
            ("Traceback (most recent call last):", "header"),
            ('  File "/app/worker/db.py", line 41, in fetch_user', "trace"),
            ("    row = conn.execute(QUERY, (uid,)).fetchone()", "trace"),
            ("          ^^^^^^^^^^^^^^^^^^^^^^^^^^^", "trace"),
            ('  File "/app/worker/pool.py", line 77, in execute', "trace"),
            ("    return self._sock.query(sql, params)", "trace"),
            ("           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^", "trace"),
            ("ConnectionResetError: [Errno 104] Connection reset by peer", "header")]),
        (1, "stderr", [
            ("", "trace"),
            ("During handling of the above exception, another exception occurred:", "trace"),
            ("", "trace")]),
        (2, "stderr", [
            ("Traceback (most recent call last):", "header"),
            ('  File "/app/worker/main.py", line 61, in <module>', "trace"),
            ("    main()", "trace"),
            ('  File "/app/worker/tasks.py", line 102, in sync_profile', "trace"),
            ("    profile = fetch_user(uid)", "trace"),
            ("              ^^^^^^^^^^^^^^^", "trace"),
            ('  File "/app/worker/db.py", line 45, in fetch_user', "trace"),
            ('    raise UserLookupError(f"lookup failed for user {uid}")', "trace"),
            ("worker.errors.UserLookupError: lookup failed for user 4821", "header")]),
        (1300, "stderr", [("INFO:worker.main:starting worker pid=%d concurrency=4" % R.randint(5121, 5999), "normal")]),
    ]


def inc_rust_panic(R, C, t):
    return [
        (0, "stderr", [
            ("thread 'main' panicked at src/bin/indexer.rs:57:38:", "header"),
            ("called `Result::unwrap()` on an `Err` value: Os { code: 98, kind: AddrInUse, "
             "message: \"Address already in use\" }", "trace"),
            ("note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace", "trace")]),
        (3, "stderr", [("error: process didn't exit successfully: `target/debug/indexer` (exit status: 101)", "trace")]),
    ]


def inc_jvm(R, C, t):
    return [
        (0, "stderr", [
            ('Exception in thread "main" java.lang.IllegalStateException: Failed to start search index', "header"),
            ("\tat com.example.search.IndexService.start(IndexService.java:88)", "trace"),
            ("\tat com.example.search.Main.main(Main.java:24)", "trace"),
            ("Caused by: java.net.ConnectException: Connection refused", "header"),
            ("\tat java.base/sun.nio.ch.Net.pollConnect(Native Method)", "trace"),
            ("\tat java.base/sun.nio.ch.Net.pollConnectNow(Net.java:672)", "trace"),
            ("\tat java.base/sun.nio.ch.NioSocketImpl.timedFinishConnect(NioSocketImpl.java:547)", "trace"),
            ("\tat java.base/java.net.Socket.connect(Socket.java:751)", "trace"),
            ("\tat com.example.search.IndexClient.connect(IndexClient.java:41)", "trace"),
            ("\tat com.example.search.IndexService.start(IndexService.java:80)", "trace"),
            ("\t... 1 more", "trace")]),
    ]


def inc_loop_crash(R, C, t, k):
    """One iteration of the crash loop: the same crash with a different job,
    request id, pid, port and time."""
    pid = 48000 + R.randint(100, 1999)
    port = 8100 + R.randint(0, 899)
    start = R.randint(300, 700)
    return [
        (-start, "stdout", [("queue-worker[%d] listening on :%d at %s" % (pid, port, C.iso(t - start)), "normal")]),
        (0, "stderr", [
            ("/app/src/queue/consumer.js:57", "trace"),
            ("      throw new Error(`job ${job.id} has no payload (${ctx.requestId}, pid ${process.pid}, :${port}, ${ts()})`);",
             "trace"),
            ("      ^", "trace"),
            ("", "trace"),
            ("Error: job %d has no payload (req_%s, pid %d, :%d, %s)" % (R.randint(1000, 9999), hexid(R, 8), pid, port,
                                                                         C.iso(t)), "header"),
            ("    at Consumer.handle (/app/src/queue/consumer.js:57:13)", "trace"),
            ("    at Consumer.onMessage (/app/src/queue/consumer.js:40:10)", "trace"),
            ("    at Socket.<anonymous> (/app/src/queue/index.js:22:14)", "trace"),
            ("    at Socket.emit (node:events:518:28)", "trace"),
            ("    at addChunk (node:internal/streams/readable:559:12)", "trace")]),
        (1, "stderr", [("", "trace"), ("Node.js v20.11.1", "trace")]),
        (25, "stdout", [("PM2 | App [queue-worker:0] exited with code [1] via signal [SIGINT]", "normal"),
                        ("PM2 | App [queue-worker:0] starting in -fork mode- (restart %d)" % (k + 1), "normal")]),
    ]


# name, kind, what, function
STANDALONE = [
    ("node-typeerror", "crash", "Node TypeError, source preamble + caret, 10 frames, Node.js v20.11.1", inc_node_typeerror),
    ("http-500", "message", "a 500 in the access log (one line, stdout)", inc_http_500),
    ("python-keyerror", "crash", "Python traceback ending KeyError: 'user_id' (two writes)", inc_py_keyerror),
    ("tsc-error", "message", "tsc --watch error TS2339 with code and squiggle (stdout)", inc_tsc_error),
    ("go-panic", "crash", "Go panic: index out of range, two goroutine dumps, exit status 2", inc_go_panic),
    ("python-chained", "crash", "Python chained exception (During handling of the above exception...)", inc_py_chained),
    ("rust-panic", "crash", "Rust thread 'main' panicked at + cargo's exit line", inc_rust_panic),
]


def generate(seed=1, quick=False):
    R = random.Random(seed)
    if quick:
        normal_target, step, first, loop_reps, gap, tail = 2000, 1200, 1200, 10, (700, 1100), 2500
    else:
        normal_target, step, first, loop_reps, gap, tail = 10000, 4000, 4000, 40, (1000, 2000), 12000

    # Times of the incidents first: they fix the length.
    inc_times = [first + i * step + R.randint(-300, 300) for i in range(len(STANDALONE))]
    loop_start = first + len(STANDALONE) * step
    loop_times = []
    t = loop_start
    for _ in range(loop_reps):
        loop_times.append(t)
        t += R.randint(*gap)
    inside_after = loop_reps // 2 - 1       # the JVM crash comes between this iteration and the next
    jvm_time = (loop_times[inside_after] + loop_times[inside_after + 1]) // 2
    duration = loop_times[-1] + tail
    C = Clock(duration)

    groups = []          # [t, stream, [(text, role, inc, rep)], order]
    blocked = []         # stderr intervals an incident's writes own
    incidents = []

    def add_incident(no, t0, parts, rep=0):
        for dt, stream, lines in parts:
            groups.append([t0 + dt, stream, [(x, r, no if r in ("header", "trace") else 0, rep) for x, r in lines]])

    for i, (name, kind, what, fn) in enumerate(STANDALONE):
        no = i + 1
        t0 = inc_times[i]
        parts = fn(R, C, t0)
        add_incident(no, t0, parts)
        incidents.append({"no": no, "name": name, "kind": kind, "what": what, "loop": False, "reps": 1,
                          "stream": next(s for _, s, ls in parts if any(r != "normal" for _, r in ls))})
    loop_no = len(STANDALONE) + 1
    jvm_no = loop_no + 1
    incidents.append({"no": loop_no, "name": "crash-loop", "kind": "crash",
                      "what": "%d near-identical Node crashes (job, request id, pid, port, time differ), "
                              "one every %.1f-%.1f s" % (loop_reps, gap[0] / 1000.0, gap[1] / 1000.0),
                      "loop": True, "reps": loop_reps, "stream": "stderr"})
    incidents.append({"no": jvm_no, "name": "jvm-inside-loop", "kind": "crash",
                      "what": "JVM exception with Caused by:, between loop crashes %d and %d" % (inside_after + 1,
                                                                                                 inside_after + 2),
                      "loop": False, "reps": 1, "stream": "stderr"})
    for k, t0 in enumerate(loop_times):
        add_incident(loop_no, t0, inc_loop_crash(R, C, t0, k), rep=k)
        if k == inside_after:
            add_incident(jvm_no, jvm_time, inc_jvm(R, C, jvm_time))
    incidents.sort(key=lambda x: x["no"])

    for g in groups:
        if any(inc for _, _, inc, _ in g[2]):
            if g[1] == "stderr":
                blocked.append((g[0] - 3, g[0] + 8))
    for dt, stream, lines in startup(R, C):
        groups.append([dt, stream, [(x, r, 0, 0) for x, r in lines]])

    # Ordinary output: events at uniformly drawn times, rendered in time
    # order. An event on stderr that would land inside an incident's writes
    # moves after them (the crashing program owns stderr for those ms).
    weights = [w for _, w in EVENTS]
    base = sum(1 for g in groups for _, _, inc, _ in g[2] if not inc)
    n_events = int(round((normal_target - base) / LINES_PER_EVENT))
    times = sorted(R.randint(400, duration - 300) for _ in range(n_events))
    for t in times:
        fn = R.choices(EVENTS, weights)[0][0]
        for dt, stream, lines in fn(R, C, t):
            tt = t + dt
            if tt >= duration - 50:
                continue
            moved = stream == "stderr"
            while moved:
                moved = False
                for a, b in blocked:
                    if a <= tt <= b:
                        tt = b + 1 + R.randint(0, 20)
                        moved = True
            groups.append([tt, stream, [(x, r, 0, 0) for x, r in lines]])

    # The benign line, placed after everything else was drawn so that the
    # rest of the schedule is what it was before it came (its own times
    # from fixed fractions, moved past an incident's writes as above).
    for k in BENIGN_AFTER:
        tt = (inc_times[k] + (inc_times[k + 1] if k + 1 < len(inc_times) else loop_start)) // 2
        moved = True
        while moved:
            moved = False
            for a, b in blocked:
                if a <= tt <= b:
                    tt = b + 1
                    moved = True
        groups.append([tt, "stderr", [(BENIGN, "benign", 0, 0)]])

    # Two groups on one stream at one ms would merge into one write: give
    # each its own ms (an incident's group keeps its time, others move).
    groups.sort(key=lambda g: (g[0], 0 if any(inc for _, _, inc, _ in g[2]) else 1))
    used = {"stdout": set(), "stderr": set()}
    for g in groups:
        while g[0] in used[g[1]]:
            g[0] += 1
        used[g[1]].add(g[0])
    groups.sort(key=lambda g: g[0])

    lines = []
    for t, stream, ls in groups:
        for text, role, inc, rep in ls:
            lines.append([t, stream, text, role, inc, rep])
    counts = {"lines": len(lines),
              "stdout": sum(1 for x in lines if x[1] == "stdout"),
              "stderr": sum(1 for x in lines if x[1] == "stderr"),
              "normal": sum(1 for x in lines if x[3] == "normal"),
              "decoy": sum(1 for x in lines if x[3] == "decoy"),
              "benign": sum(1 for x in lines if x[3] == "benign"),
              "incident": sum(1 for x in lines if x[4]),
              "writes": len(groups)}
    return {"version": 1, "seed": seed, "quick": quick, "duration_ms": duration,
            "lines": lines, "incidents": incidents, "counts": counts}
