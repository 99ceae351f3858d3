/*
 * Unit tests of incident assembly (core/pipeline/trace.c): real-looking traces of
 * each language, written as the header and then every following line with
 * the verdict it must get. The header is matched against the built-in table
 * (core/pipeline/crashpatterns.c) and the trace runs with the family of the entry
 * that matched, so a test also proves that the table opens the trace with
 * the right rules. Each trace also shows where it ends: the ordinary line
 * after it is not taken.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pipeline/crashpatterns.h"
#include "pipeline/match.h"
#include "spec/settings.h"
#include "pipeline/trace.h"

/* One line after the header and the verdict it must get. */
typedef struct {
  const char *line;
  TraceVerdict want;
} Step;

#define E kTraceEnds
#define J kTraceJoins
#define N kTraceJoinsNaming
#define M kTraceMaybe
#define L kTraceJoinsLast

/* The table, compiled once for every test. */
static PatternSet *table;

/* Matches header against the table: it must be matched first by the entry
 * named pattern. Then runs the trace of that entry's family over steps
 * (ending at a NULL line), failing at the first verdict that differs. */
static void
check_trace(const char *file, int line, const char *pattern, const char *header,
            const Step *steps)
{
  int idx = match_line(table, header, strlen(header));
  if (idx < 0 || strcmp(crashpatterns_get((size_t)idx)->name, pattern) != 0) {
    check_fail(file, line, "\"%s\" is matched by %s, not %s", header,
               idx < 0 ? "no entry" : crashpatterns_get((size_t)idx)->name, pattern);
    return;
  }
  TraceState st;
  trace_begin(&st, crashpatterns_get((size_t)idx)->family, header, strlen(header));
  for (size_t i = 0; steps[i].line; i++) {
    TraceVerdict got = trace_next(&st, steps[i].line, strlen(steps[i].line));
    if (got != steps[i].want) {
      check_fail(file, line, "%s trace, line %zu \"%s\": %s, want %s", pattern, i + 1,
                 steps[i].line, trace_verdict_name(got), trace_verdict_name(steps[i].want));
      return;
    }
  }
}

#define TRACE(pattern, header, ...) \
  check_trace(__FILE__, __LINE__, pattern, header, (const Step[]){__VA_ARGS__, {NULL, E}})

TEST(node_throw_with_source_excerpt)
{
  TRACE("node-source-header", "/app/server.js:12",
        {"    throw new Error('boom');", J},
        {"    ^", J},
        {"", M},
        {"Error: boom", N},
        {"    at Object.<anonymous> (/app/server.js:12:11)", J},
        {"    at Module._compile (node:internal/modules/cjs/loader:1256:14)", J},
        {"    at node:internal/main/run_main_module:23:47", J},
        {"", M},
        {"Node.js v20.1.0", L},
        {"[nodemon] app crashed - waiting for file changes before starting...", E});
  /* A value that is not an Error: no blank before it. */
  TRACE("node-source-header", "/app/x.js:1",
        {"throw \"boom\";", J},
        {"^", J},
        {"boom", N},
        {"(Use `node --trace-uncaught ...` to show where the exception was thrown)", J},
        {"", M},
        {"Node.js v18.19.0", L});
}

TEST(node_module_not_found)
{
  TRACE("node-internal-header", "node:internal/modules/cjs/loader:1080",
        {"  throw err;", J},
        {"  ^", J},
        {"", M},
        {"Error: Cannot find module 'express'", N},
        {"Require stack:", J},
        {"- /app/server.js", J},
        {"    at Module._resolveFilename (node:internal/modules/cjs/loader:1077:15)", J},
        {"    at Module._load (node:internal/modules/cjs/loader:922:27)", J},
        {"    at node:internal/main/run_main_module:23:47 {", J},
        {"  code: 'MODULE_NOT_FOUND',", J},
        {"  requireStack: [ '/app/server.js' ]", J},
        {"}", J},
        {"", M},
        {"Node.js v20.1.0", L});
}

TEST(node_unhandled_error_event_and_rejection)
{
  TRACE("node-internal-header", "node:events:492",
        {"      throw er; // Unhandled 'error' event", J},
        {"      ^", J},
        {"", M},
        {"Error: listen EADDRINUSE: address already in use :::3000", N},
        {"    at Server.setupListenHandle [as _listen2] (node:net:1872:16)", J},
        {"    at listenInCluster (node:net:1920:12)", J},
        {"Emitted 'error' event on Server instance at:", J},
        {"    at emitErrorNT (node:net:1899:8)", J},
        {"    at process.processTicksAndRejections (node:internal/process/task_queues:82:21) {",
         J},
        {"  code: 'EADDRINUSE',", J},
        {"  errno: -98,", J},
        {"  syscall: 'listen',", J},
        {"  port: 3000", J},
        {"}", J},
        {"", M},
        {"Node.js v20.1.0", L},
        {"anything after the end", E});
  /* The rejection line matches a pattern of its own, but it fits the open
   * trace: the trace says it joins (and names the failure). */
  TRACE("node-internal-header", "node:internal/process/promises:288",
        {"            triggerUncaughtException(err, true /* fromPromise */);", J},
        {"            ^", J},
        {"", M},
        {"[UnhandledPromiseRejection: This error originated either by throwing inside of an "
         "async function without a catch block, or by rejecting a promise which was not "
         "handled with .catch(). The promise rejected with the reason \"boom\".] {",
         N},
        {"  code: 'ERR_UNHANDLED_REJECTION'", J},
        {"}", J},
        {"", M},
        {"Node.js v20.1.0", L});
}

TEST(node_error_line_frames_cause_and_end)
{
  TRACE("error", "TypeError: Cannot read properties of undefined (reading 'map')",
        {"    at renderList (/app/src/list.js:4:18)", J},
        {"    at async handler (/app/src/server.js:22:5)", J},
        {"GET /api/users 500 12.345 ms - 123", E});
  TRACE("error", "Error: could not save order",
        {"    at save (/app/orders.js:9:11) {", J},
        {"  [cause]: Error: connect ECONNREFUSED 127.0.0.1:5432", J},
        {"      at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16) {", J},
        {"    errno: -111,", J},
        {"    code: 'ECONNREFUSED'", J},
        {"  }", J},
        {"}", J},
        {"Server listening on http://localhost:3000", E});
  /* The next crash right after an error line without frames is not held:
   * it ends the first and opens its own incident. */
  TRACE("error", "TypeError: a is undefined", {"panic: other", E});
  TRACE("error", "Error: Command failed: ls /nope",
        {"ls: cannot access '/nope': No such file or directory", E});
  /* Only blank lines are held, at most TRACE_MAYBE_MAX in a row. */
  TRACE("error", "Error: boom",
        {"", M},
        {"", M},
        {"", M},
        {"", E});
  TRACE("node-err-code", "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'express' "
                         "imported from /app/index.js",
        {"    at packageResolve (node:internal/modules/esm/resolve:854:9)", J},
        {"    at moduleResolve (node:internal/modules/esm/resolve:927:20) {", J},
        {"  code: 'ERR_MODULE_NOT_FOUND'", J},
        {"}", J},
        {"", M},
        {"Node.js v20.1.0", L});
}

TEST(tags_and_timestamps_are_stripped_like_the_header)
{
  TRACE("error", "web-1  | TypeError: x is not a function",
        {"web-1  |     at f (/app/a.js:1:2)", J},
        {"web-1  |     at g (/app/a.js:5:3)", J},
        {"db-1   | LOG:  checkpoint starting: time", E});
  TRACE("error", "[0] Error: boom",
        {"[0]     at f (/app/a.js:1:2)", J},
        {"[1] Server listening on :3000", E});
  TRACE("error", "0|api  | Error: boom",
        {"0|api  |     at f (/app/a.js:1:2)", J},
        {"0|api  | ", M},
        {"0|api  | Node.js v20.1.0", L});
  TRACE("error", "2026-01-01T10:00:00.000Z Error: boom",
        {"2026-01-01T10:00:00.001Z     at f (/app/a.js:1:2)", J},
        {"2026-01-01T10:00:00.002Z request done", E});
  /* A tag the header did not have is not stripped. */
  TRACE("error", "Error: boom", {"[0]     at f (/app/a.js:1:2)", E});
  /* Python in docker compose. */
  TRACE("python-traceback", "api-1  | Traceback (most recent call last):",
        {"api-1  |   File \"/app/main.py\", line 3, in <module>", J},
        {"api-1  |     run()", J},
        {"api-1  | RuntimeError: boom", N},
        {"api-1  | INFO:     Shutting down", E});
}

TEST(python_traceback)
{
  TRACE("python-traceback", "Traceback (most recent call last):",
        {"  File \"/app/app.py\", line 8, in <module>", J},
        {"    main()", J},
        {"  File \"/app/app.py\", line 5, in main", J},
        {"    return int(value)", J},
        {"           ^^^^^^^^^^", J},
        {"ValueError: invalid literal for int() with base 10: 'abc'", N},
        {"INFO:     Shutting down", E});
  /* The header and then the final line at once. */
  TRACE("python-traceback", "Traceback (most recent call last):",
        {"KeyboardInterrupt", N},
        {"$ ", E});
  /* A dotted final line, which a pattern matches too: it joins. */
  TRACE("python-traceback", "Traceback (most recent call last):",
        {"  File \"/app/client.py\", line 4, in fetch", J},
        {"    return requests.get(url, timeout=2)", J},
        {"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api', port=443)", N},
        {"", M},
        {"[worker] restarting in 1s", E});
}

TEST(python_chained_tracebacks_are_one_incident)
{
  TRACE("python-traceback", "Traceback (most recent call last):",
        {"  File \"/app/users.py\", line 10, in get_user", J},
        {"    return cache[user_id]", J},
        {"           ~~~~~^^^^^^^^^", J},
        {"KeyError: 'user_id'", N},
        {"", M},
        {"During handling of the above exception, another exception occurred:", J},
        {"", M},
        {"Traceback (most recent call last):", J},
        {"  File \"/app/users.py\", line 12, in get_user", J},
        {"    raise LookupError(\"no user\")", J},
        {"LookupError: no user", N},
        {"", M},
        {"127.0.0.1 - - [01/Jan/2026 10:00:00] \"GET /users/7 HTTP/1.1\" 500 -", E});
  TRACE("python-traceback", "Traceback (most recent call last):",
        {"  File \"/app/db.py\", line 3, in connect", J},
        {"    sock.connect(addr)", J},
        {"ConnectionRefusedError: [Errno 111] Connection refused", N},
        {"", M},
        {"The above exception was the direct cause of the following exception:", J},
        {"", M},
        {"Traceback (most recent call last):", J},
        {"  File \"/app/main.py\", line 9, in <module>", J},
        {"    db.connect()", J},
        {"  File \"/app/db.py\", line 5, in connect", J},
        {"    raise DatabaseError(\"cannot connect\") from e", J},
        {"db.DatabaseError: cannot connect", N});
  /* After a final line, only a chain may follow. */
  TRACE("python-traceback", "Traceback (most recent call last):",
        {"  File \"/app/a.py\", line 1, in <module>", J},
        {"ValueError: x", N},
        {"", M},
        {"Listening on :8000", E});
}

TEST(python_syntax_error_and_exception_group)
{
  TRACE("python-file-header", "  File \"/app/app.py\", line 3",
        {"    x = = 1", J},
        {"        ^", J},
        {"SyntaxError: invalid syntax", N},
        {"", M},
        {"[uvicorn] reloading", E});
  TRACE("python-traceback", "  + Exception Group Traceback (most recent call last):",
        {"  |   File \"/app/x.py\", line 3, in <module>", J},
        {"  |     raise ExceptionGroup(\"many\", [ValueError(1), TypeError(2)])", J},
        {"  | ExceptionGroup: many (2 sub-exceptions)", J},
        {"  +-+---------------- 1 ----------------", J},
        {"    | ValueError: 1", J},
        {"    +---------------- 2 ----------------", J},
        {"    | TypeError: 2", J},
        {"    +------------------------------------", J},
        {"INFO: next request", E});
}

TEST(go_panic_with_several_goroutines)
{
  TRACE("go-panic", "panic: assignment to entry in nil map",
        {"", M},
        {"goroutine 1 [running]:", J},
        {"main.main()", J},
        {"\t/app/main.go:7 +0x2c", J},
        {"exit status 2", J},
        {"2026/01/01 10:00:00 server restarting", E});
  TRACE("go-panic", "panic: runtime error: invalid memory address or nil pointer dereference",
        {"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x48f4c5]", J},
        {"", M},
        {"goroutine 18 [running]:", J},
        {"main.(*Server).handle(0x0, {0x4b5e20, 0xc000012345})", J},
        {"\t/app/server.go:42 +0x25", J},
        {"created by main.main in goroutine 1", J},
        {"\t/app/main.go:15 +0x8f", J},
        {"", M},
        {"goroutine 1 [chan receive]:", J},
        {"main.main()", J},
        {"\t/app/main.go:20 +0xa5", J},
        {"", M},
        {"goroutine 7 gp=0xc000007c00 m=nil [select]:", J},
        {"net/http.(*persistConn).writeLoop(0xc0001b4000)", J},
        {"\t/usr/local/go/src/net/http/transport.go:2421 +0xe5", J},
        {"...additional frames elided...", J},
        {"exit status 2", J},
        {"FAIL\tgithub.com/acme/api\t0.015s", L});
  TRACE("go-panic", "panic: boom [recovered]",
        {"\tpanic: boom", J},
        {"", M},
        {"goroutine 1 [running]:", J},
        {"panic({0x4a1b20?, 0x4e37c0?})", J},
        {"\t/usr/local/go/src/runtime/panic.go:914 +0x21f", J},
        {"main.main()", J},
        {"\t/app/main.go:9 +0x3d", J},
        {"listening on :8080", E});
  /* A blank line and then something else: the blank is let go. */
  TRACE("go-panic", "panic: boom", {"", M}, {"INFO restarting", E});
}

TEST(go_fatal_error)
{
  TRACE("go-fatal-error", "fatal error: all goroutines are asleep - deadlock!",
        {"", M},
        {"goroutine 1 [chan receive]:", J},
        {"main.main()", J},
        {"\t/app/main.go:5 +0x2d", J},
        {"exit status 2", J},
        {"listening on :8080", E});
  TRACE("go-fatal-error", "fatal error: concurrent map writes",
        {"", M},
        {"runtime stack:", J},
        {"runtime.throw({0x4b1c2e?, 0x0?})", J},
        {"\t/usr/local/go/src/runtime/panic.go:1077 +0x5c fp=0x7ffc sp=0x7ffc pc=0x436b3c", J},
        {"", M},
        {"goroutine 6 [running]:", J},
        {"main.worker()", J});
}

TEST(rust_panic_with_and_without_backtrace)
{
  TRACE("rust-panic", "thread 'main' panicked at src/main.rs:2:5:",
        {"called `Option::unwrap()` on a `None` value", N},
        {"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace", L},
        {"anything", E});
  TRACE("rust-panic", "thread 'main' panicked at src/main.rs:3:13:",
        {"index out of bounds: the len is 3 but the index is 5", N},
        {"stack backtrace:", J},
        {"   0: rust_begin_unwind", J},
        {"             at /rustc/82e1608dfa6e0b5569232559e3d385fea5a93112/library/std/src/"
         "panicking.rs:645:5",
         J},
        {"   1: core::panicking::panic_fmt", J},
        {"             at /rustc/82e1608dfa6e0b5569232559e3d385fea5a93112/library/core/src/"
         "panicking.rs:72:14",
         J},
        {"   2: app::main", J},
        {"             at ./src/main.rs:3:13", J},
        {"note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose "
         "backtrace.",
         L});
  TRACE("rust-panic", "thread 'main' panicked at src/lib.rs:9:5:",
        {"assertion `left == right` failed", N},
        {"  left: 1", J},
        {" right: 2", J},
        {"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace", L});
  /* Before Rust 1.73 the message was in the header. */
  TRACE("rust-panic", "thread 'main' panicked at 'boom', src/main.rs:2:5",
        {"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace", L});
  TRACE("rust-panic", "thread 'main' panicked at 'boom', src/main.rs:2:5",
        {"Listening on 0.0.0.0:8080", E});
  /* A second panic (which prints no note) ends the first, and so does a
   * log line. */
  TRACE("rust-panic", "thread 'tokio-runtime-worker' panicked at src/handlers.rs:41:27:",
        {"called `Result::unwrap()` on an `Err` value: Timeout", N},
        {"thread 'tokio-runtime-worker' panicked at src/handlers.rs:41:27:", E});
  TRACE("rust-panic", "thread 'main' panicked at src/main.rs:2:5:",
        {"boom", N},
        {"2026-01-01T10:00:00Z  INFO app: request served", E});
}

TEST(rust_compiler_diagnostic)
{
  TRACE("rust-compile-error", "error[E0382]: borrow of moved value: `x`",
        {" --> src/main.rs:4:20", J},
        {"  |", J},
        {"2 |     let x = vec![1];", J},
        {"  |         - move occurs because `x` has type `Vec<i32>`, which does not "
         "implement the `Copy` trait",
         J},
        {"3 |     let y = x;", J},
        {"  |             - value moved here", J},
        {"4 |     println!(\"{:?}\", x);", J},
        {"  |                      ^ value borrowed here after move", J},
        {"  |", J},
        {"help: consider cloning the value if the performance cost is acceptable", J},
        {"  |", J},
        {"3 |     let y = x.clone();", J},
        {"  |              ++++++++", J},
        {"", M},
        {"For more information about this error, try `rustc --explain E0382`.", L});
  TRACE("rust-compile-error", "error[E0425]: cannot find value `y` in this scope",
        {" --> src/main.rs:3:13", J},
        {"  |", J},
        {"3 |     let z = y;", J},
        {"  |             ^ not found in this scope", J},
        {"", M},
        {"error[E0308]: mismatched types", E});
}

TEST(jvm_caused_by_and_more)
{
  TRACE("jvm-thread",
        "Exception in thread \"main\" java.lang.IllegalStateException: Failed to start",
        {"\tat com.acme.App.start(App.java:42)", J},
        {"\tat com.acme.App.main(App.java:12)", J},
        {"Caused by: java.net.ConnectException: Connection refused", J},
        {"\tat java.base/sun.nio.ch.Net.connect0(Native Method)", J},
        {"\tat java.base/sun.nio.ch.Net.connect(Net.java:579)", J},
        {"\t... 2 more", J},
        {"\tSuppressed: java.io.IOException: close failed", J},
        {"\t\tat com.acme.Db.close(Db.java:88)", J},
        {"\t\t... 3 more", J},
        {"2026-01-01 10:00:00.000  INFO 1 --- [main] o.s.b.SpringApplication : Started", E});
  TRACE("exception", "java.lang.NullPointerException: null",
        {"\tat com.acme.Svc.run(Svc.java:9)", J},
        {"\tat java.base/java.lang.Thread.run(Thread.java:840)", J},
        {"Caused by: java.lang.IllegalArgumentException: id", J},
        {"\tat com.acme.Repo.find(Repo.java:31)", J},
        {"\t... 12 common frames omitted", J},
        {"10:00:00.000 [main] INFO  com.acme.App - next", E});
  /* Python's final line whose traceback was not seen: nothing follows. */
  TRACE("dotted-error", "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api')",
        {"INFO: retrying in 1s", E});
  /* .NET frames read alike. */
  TRACE("exception", "System.InvalidOperationException: Sequence contains no elements",
        {"   at System.Linq.ThrowHelper.ThrowNoElementsException()", J},
        {"   at Program.Main() in /app/Program.cs:line 5", J},
        {"info: Microsoft.Hosting.Lifetime[0]", E});
}

TEST(native_sanitizer_reports)
{
  TRACE("sanitizer",
        "==12345==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at "
        "pc 0x55d5c1a2b3c4 bp 0x7ffd1a2b3c40 sp 0x7ffd1a2b3c38",
        {"READ of size 4 at 0x602000000010 thread T0", J},
        {"    #0 0x55d5c1a2b3c3 in main /app/x.c:6", J},
        {"    #1 0x7f1e2d3c4b5a in __libc_start_main (/lib/x86_64-linux-gnu/libc.so.6+0x21bf6)",
         J},
        {"", M},
        {"0x602000000010 is located 0 bytes inside of 4-byte region "
         "[0x602000000010,0x602000000014)",
         J},
        {"freed by thread T0 here:", J},
        {"    #0 0x7f1e2d6f7b8a in free (/usr/lib/x86_64-linux-gnu/libasan.so.6+0xb4b8a)", J},
        {"    #1 0x55d5c1a2b3a1 in main /app/x.c:5", J},
        {"", M},
        {"previously allocated by thread T0 here:", J},
        {"    #0 0x7f1e2d6f7e4f in malloc (/usr/lib/x86_64-linux-gnu/libasan.so.6+0xb4e4f)", J},
        {"", M},
        {"SUMMARY: AddressSanitizer: heap-use-after-free /app/x.c:6 in main", J},
        {"Shadow bytes around the buggy address:", J},
        {"  0x0c047fff7fb0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00", J},
        {"=>0x0c047fff8000: fa fa[fd]fa fa fa fa fa fa fa fa fa fa fa fa fa", J},
        {"Shadow byte legend (one shadow byte represents 8 application bytes):", J},
        {"  Addressable:           00", J},
        {"  Heap left redzone:       fa", J},
        {"==12345==ABORTING", L});
  TRACE("sanitizer", "AddressSanitizer:DEADLYSIGNAL",
        {"=================================================================", J},
        {"==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc "
         "0x55d5c1a2b3c4 bp 0x7ffd sp 0x7ffd T0)",
         J},
        {"==1==The signal is caused by a READ memory access.", J},
        {"==1==Hint: address points to the zero page.", J},
        {"    #0 0x55d5c1a2b3c4 in main /app/x.c:4", J},
        {"", M},
        {"AddressSanitizer can not provide additional info.", J},
        {"SUMMARY: AddressSanitizer: SEGV /app/x.c:4 in main", J},
        {"==1==ABORTING", L});
  TRACE("ubsan",
        "src/parse.c:42:17: runtime error: signed integer overflow: 2147483647 + 1 cannot be "
        "represented in type 'int'",
        {"    #0 0x4f5a2b in parse src/parse.c:42", J},
        {"SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior src/parse.c:42:17 in ", J},
        {"parsed 12 records", E});
}

TEST(generic_indented_lines_and_npm)
{
  TRACE("test-fail", "FAIL src/app.test.ts",
        {"  ● sum › adds", J},
        {"", M},
        {"    expect(received).toBe(expected) // Object.is equality", J},
        {"", M},
        {"    Expected: 3", J},
        {"    Received: 4", J},
        {"", M},
        {"      3 | test('adds', () => {", J},
        {"    > 4 |   expect(sum(1, 2)).toBe(3);", J},
        {"        |                     ^", J},
        {"", M},
        {"      at Object.<anonymous> (src/app.test.ts:4:21)", J},
        {"", M},
        {"Test Suites: 1 failed, 1 total", E});
  TRACE("test-fail", "--- FAIL: TestCreateUser (0.00s)",
        {"    users_test.go:12: got 201, want 200", J},
        {"FAIL", E});
  TRACE("npm-error", "npm ERR! code ELIFECYCLE",
        {"npm ERR! errno 1", J},
        {"npm ERR! web@1.0.0 dev: `vite`", J},
        {"npm ERR! Exit status 1", J},
        {"", M},
        {"npm ERR! A complete log of this run can be found in:", J},
        {"npm ERR!     /root/.npm/_logs/2026-01-01T10_00_00_000Z-debug-0.log", J},
        {"Done.", E});
  TRACE("ts-error", "src/app.ts(3,5): error TS2322: Type 'X' is not assignable to type 'Y'.",
        {"  Property 'a' is missing in type 'X' but required in type 'Y'.", J},
        {"src/app.ts(9,1): error TS2304: Cannot find name 'foo'.", E});
  /* npm's prefix joins only after npm's own header. */
  TRACE("test-fail", "FAIL src/b.test.ts", {"npm ERR! Test failed.", E});
}

TEST(one_line_messages_take_nothing)
{
  TRACE("segfault", "Segmentation fault (core dumped)", {"    indented", E});
  TRACE("http-5xx-dev", "GET /api/users 500 12.345 ms - 123", {"    at handler", E});
  TRACE("http-5xx-access-log",
        "127.0.0.1 - - [01/Jan/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 502 157 \"-\" \"curl\"",
        {"", E});
}

/* Whatever the lines (blank ones only, or blank and plain in turn), a
 * trace holds at most TRACE_MAYBE_MAX in a row, and once it has ended it
 * stays ended. */
TEST(holding_is_bounded_and_the_end_is_final)
{
  static const char *const headers[TRACE_FAMILY_COUNT] = {
    "x", "Error: x", "Traceback (most recent call last):", "panic: x",
    "thread 'main' panicked at src/main.rs:1:1:", "java.lang.X: y", "==1==ERROR: x", "FAIL x",
  };
  static const char *const odd[2] = {"plain words", " \t"};
  for (int f = 0; f < TRACE_FAMILY_COUNT * 2; f++) {
    TraceState st;
    trace_begin(&st, (TraceFamily)(f / 2), headers[f / 2], strlen(headers[f / 2]));
    int in_row = 0, ended = 0;
    for (int i = 0; i < 20; i++) {
      const char *line = i % 2 ? "" : odd[f % 2];
      TraceVerdict v = trace_next(&st, line, strlen(line));
      if (ended) {
        CHECK_INT(v, kTraceEnds);
        continue;
      }
      in_row = v == kTraceMaybe ? in_row + 1 : 0;
      CHECK(in_row <= TRACE_MAYBE_MAX);
      if (v == kTraceEnds || v == kTraceJoinsLast)
        ended = 1;
    }
    CHECK(ended);
  }
  CHECK_STR(trace_family_name(kTraceGeneric), "generic");
  CHECK(trace_family_name((TraceFamily)TRACE_FAMILY_COUNT) == NULL);
  CHECK_STR(trace_verdict_name(kTraceJoinsNaming), "joins-naming");
}

int
main(void)
{
  VigilSettings s;
  settings_defaults(&s);
  MatchLimits lim = {(size_t)s.max_patterns, (size_t)s.pattern_max_length,
                     (uint32_t)s.match_limit, (uint32_t)s.depth_limit};
  VigilError err = VIGIL_ERROR_INIT;
  table = match_compile(crashpatterns_sources(), crashpatterns_count(), &lim, "patterns", &err);
  if (table == NULL) {
    fprintf(stderr, "the crash pattern table does not compile: %s\n", err.msg);
    return 1;
  }
  RUN(node_throw_with_source_excerpt);
  RUN(node_module_not_found);
  RUN(node_unhandled_error_event_and_rejection);
  RUN(node_error_line_frames_cause_and_end);
  RUN(tags_and_timestamps_are_stripped_like_the_header);
  RUN(python_traceback);
  RUN(python_chained_tracebacks_are_one_incident);
  RUN(python_syntax_error_and_exception_group);
  RUN(go_panic_with_several_goroutines);
  RUN(go_fatal_error);
  RUN(rust_panic_with_and_without_backtrace);
  RUN(rust_compiler_diagnostic);
  RUN(jvm_caused_by_and_more);
  RUN(native_sanitizer_reports);
  RUN(generic_indented_lines_and_npm);
  RUN(one_line_messages_take_nothing);
  RUN(holding_is_bounded_and_the_end_is_final);
  match_free(table);
  return check_summary();
}
