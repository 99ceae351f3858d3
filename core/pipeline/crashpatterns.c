/*
 * The built-in crash pattern table (see crashpatterns.h) and its rendering
 * as docs/crash-patterns.md.
 *
 * Reading an entry: its regex, the trace family whose lines may follow it,
 * whether the line names the failure, then real lines it must match and
 * lines it must not. The unit test compiles the table as a monitor would
 * and holds every entry to its lines; a change to a regex that breaks a
 * line fails there, naming the entry.
 *
 * The line start. Most entries fire only on the first word of a message,
 * which is what keeps ordinary words out ("Error:" starts a crash line,
 * "retrying after Error: x" does not). Output often reaches the engine
 * with something in front of that word, so LINE_START allows, in this
 * order and each optional: up to 3 blanks; a process manager's tag ("[0] "
 * and "[web] " of concurrently, "web-1  | " of docker compose, "0|app  | "
 * of pm2) and up to 4 blanks after it; a timestamp (ISO 8601 date and
 * time, or a time of day; perhaps in brackets); a log level that says
 * something failed ("ERROR", "[FATAL]", "error:"); a dev server's error
 * mark (Next.js's "⨯"). Four blanks are a frame's indentation, never a
 * header's. A level alone never fires: "2026-01-01T00:00:00Z ERROR request
 * failed" is an application's own log line, not a crash;
 * "2026-01-01T00:00:00Z ERROR Traceback (most recent call last):" is one.
 * trace.c strips the same tag and timestamp from the lines after a header.
 *
 * Why three entries for what reads as one idea ("a line that starts with an
 * exception's name"): each regex must keep a literal that prefilter.c can
 * require, and an alternation such as (?:Error|Exception) has none; and a
 * dotted name (java.lang.X, requests.exceptions.X) is followed by other
 * lines than Node's "TypeError: x", so it gets another family.
 */
#include "pipeline/crashpatterns.h"

#include <string.h>
#include <uv.h>

/* See the paragraph on the line start above. Groups only, so every entry
 * that begins with it still has its own literal for the prefilter. */
#define LINE_START                                                                    \
  "^[ \\t]{0,3}"                                                                      \
  "(?:(?:\\[[^\\]]{1,40}\\]|[\\w.@/|-]{1,40}[ \\t]*\\|)[ \\t]{0,4})?"                    \
  "(?:\\[?(?:\\d{4}-\\d\\d-\\d\\d[T ])?\\d\\d:\\d\\d:\\d\\d(?:[.,]\\d{1,9})?"         \
  "(?:Z|[+-]\\d\\d:?\\d\\d)?\\]?[ \\t]+)?"                                            \
  "(?:\\[?(?:ERROR|FATAL|CRITICAL|SEVERE|error|fatal)\\]?:?[ \\t]+)?"                 \
  "(?:[⨯✖✗✘×][ \\t]*)?"

/* How the line start reads in docs/crash-patterns.md. */
#define LINE_START_SHOWN "⟨start⟩"

/* A NULL-terminated list of lines, with static storage. */
#define LINES(...) ((const char *const[]){__VA_ARGS__, NULL})

static const CrashPattern crashpatterns_table[] = {
  /* Node prints the source line it died on before the error:
   *   node:internal/modules/cjs/loader:1080 / "  throw err;" / "  ^" / "" /
   *   "Error: Cannot find module 'x'" / "    at ..." / "" / "Node.js v20.1.0".
   * The location says nothing; the error two lines later names it. */
  {"node-internal-header", LINE_START "node:[a-z_][\\w/.-]*:\\d+$", kTraceNode, true,
   LINES("node:internal/modules/cjs/loader:1080", "node:internal/process/promises:288",
         "node:events:492", "web-1  | node:internal/modules/cjs/loader:1147"),
   LINES("node: v20.1.0", "FROM node:20-alpine",
         "    at Module._load (node:internal/modules/cjs/loader:1023:12)")},
  /* The same for a throw in the program's own file (CommonJS or ESM). Only
   * JavaScript files: ".[cm]?[jt]s:" would leave "s:" as the literal the
   * prefilter looks for, which half the lines of a log hold. */
  {"node-source-header",
   LINE_START "(?:/|[A-Za-z]:\\\\|file:///|\\.{1,2}/)[^\\s:()'\"]*\\.[cm]?js:\\d+$", kTraceNode,
   true,
   LINES("/app/server.js:12", "file:///app/src/index.mjs:3", "C:\\app\\server.js:7",
         "[0] /home/dev/api/dist/main.js:48", "/app/lib/db.cjs:31"),
   LINES("/app/server.js:12:5", "    at /app/server.js:12:5", "loaded /app/server.js:12",
         "/app/server.js:12 ok")},
  /* Seed 000's default, anchored: Node's report of a rejected promise nobody
   * handled ("[UnhandledPromiseRejection: ..." at the line's start, or the
   * old "(node:PID) UnhandledPromiseRejectionWarning:"), not a log line
   * that merely names it. */
  {"node-unhandled-rejection",
   LINE_START "(?:\\(node:\\d+\\) )?\\[?UnhandledPromiseRejection(?:Warning)?:", kTraceNode,
   false,
   LINES("[UnhandledPromiseRejection: This error originated either by throwing inside of an "
         "async function without a catch block, or by rejecting a promise which was not handled "
         "with .catch(). The promise rejected with the reason \"boom\".] {",
         "(node:4242) UnhandledPromiseRejectionWarning: Error: connect ECONNREFUSED "
         "127.0.0.1:5432"),
   LINES("process.on('unhandledRejection', onRejection)", "unhandled promise rejections: 0",
         "  app:config unhandled-rejections=strict (an UnhandledPromiseRejection will exit the "
         "process) +0ms")},
  /* Node's coded errors, "Error [ERR_X]: ...", and pnpm's " ERR_PNPM_X". */
  {"node-err-code", LINE_START "(?:\\w*(?:Error|Exception) \\[)?ERR_[A-Z][A-Z0-9_]*\\b",
   kTraceNode, false,
   LINES("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'express' imported from "
         "/app/index.js",
         "TypeError [ERR_INVALID_ARG_TYPE]: The \"path\" argument must be of type string. "
         "Received undefined",
         " ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL  web@1.0.0 dev: `vite`"),
   LINES("  code: 'ERR_MODULE_NOT_FOUND'", "retrying after ERR_CONNECTION_RESET",
         "error_code=ERR_NONE")},
  /* Seed 000's \buncaught\b, anchored: "uncaught" (or Node's
   * "uncaughtException") starts the message or follows a colon, and names
   * an exception that a colon, "in", "at" or the end of the line follows
   * (browsers, Deno, PHP, winston's exception handler). */
  {"uncaught",
   "(?:" LINE_START "|[:\\]][ \\t]+)[Uu]ncaught(?:Exception\\b|(?: \\(in promise\\))? "
   "[\\w$.]*(?:Error|Exception|Rejection|error|exception|rejection)\\b)"
   "(?=[ \\t]*:|[ \\t]+(?:in|at|from)\\b|[ \\t]+[A-Z][\\w$.]*:|[ \\t]*$)",
   kTraceNode, false,
   LINES("Uncaught TypeError: Cannot read properties of undefined (reading 'id')",
         "error: Uncaught (in promise) Error: boom",
         "PHP Fatal error:  Uncaught Exception: Database unreachable in /var/www/index.php:12",
         "Exception in worker: uncaught TypeError: x is undefined",
         "error: uncaughtException: Cannot find module './config'",
         "Uncaught exception in thread main"),
   LINES("uncaught exception handler installed", "0 uncaught exceptions",
         "registered uncaughtException handler", "process.on('uncaughtException', onCrash)")},
  /* Python: the header names nothing, the final line does. Also an
   * exception group's header (3.11). */
  {"python-traceback",
   LINE_START "(?:\\+ Exception Group )?Traceback \\(most recent call last\\):", kTracePython,
   true,
   LINES("Traceback (most recent call last):", "web-1  | Traceback (most recent call last):",
         "  + Exception Group Traceback (most recent call last):",
         "2026-01-01 10:00:00,123 Traceback (most recent call last):"),
   LINES("see the Traceback above", "traceback: disabled")},
  /* Python's SyntaxError in the main script has no "Traceback" line: it
   * starts with the file and line, then the source, a caret and the error. */
  {"python-file-header", LINE_START "File \"[^\"]+\", line \\d+$", kTracePython, true,
   LINES("  File \"/app/app.py\", line 12", "  File \"<string>\", line 1"),
   LINES("  File \"/app/app.py\", line 12, in main", "File \"/app/app.py\" saved")},
  /* JVM: an uncaught exception in a thread. */
  {"jvm-thread", LINE_START "Exception in thread \"[^\"]*\" ", kTraceJvm, false,
   LINES("Exception in thread \"main\" java.lang.NullPointerException: Cannot invoke "
         "\"String.length()\" because \"s\" is null",
         "Exception in thread \"pool-1-thread-3\" java.lang.OutOfMemoryError: Java heap space"),
   LINES("Exception in thread handling: none")},
  /* A cause printed on its own (inside an open JVM trace it joins it). */
  {"jvm-caused-by", LINE_START "Caused by: [\\w$.]+", kTraceJvm, false,
   LINES("Caused by: java.net.ConnectException: Connection refused",
         "Caused by: org.postgresql.util.PSQLException: FATAL: password authentication failed "
         "for user \"app\""),
   LINES("caused by: network blip", "Root cause: none")},
  /* A dotted class or module name ending in Error: a JVM error, or
   * Python's final line whose traceback was not seen (nothing follows it,
   * so the JVM's rules are right for both). Before "error", which would
   * take "Foo.BarError" too. */
  {"dotted-error", LINE_START "(?:[A-Za-z_$][\\w$]*\\.)+[A-Z][\\w$]*Error(?::|$)", kTraceJvm,
   false,
   LINES("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.example.com', "
         "port=443): Max retries exceeded with url: /v1/users (Caused by NewConnectionError("
         "'Failed to establish a new connection: [Errno 111] Connection refused'))",
         "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at "
         "\"localhost\" (127.0.0.1), port 5432 failed: Connection refused",
         "java.lang.OutOfMemoryError: Java heap space", "java.lang.StackOverflowError"),
   LINES("config.lastError: null", "app.ErrorHandler: registered")},
  /* An exception's name, dotted or not, starting the line: the JVM's
   * "java.lang.IllegalStateException: ...", Python's "Exception: boom". */
  {"exception", LINE_START "(?:[A-Za-z_$][\\w$]*\\.)*(?:[A-Z][\\w$]*)?Exception(?::|$)",
   kTraceJvm, false,
   LINES("java.lang.IllegalStateException: Failed to load ApplicationContext",
         "org.springframework.beans.factory.BeanCreationException: Error creating bean with "
         "name 'dataSource'",
         "kotlin.UninitializedPropertyAccessException: lateinit property repo has not been "
         "initialized",
         "Exception: boom"),
   LINES("Exceptions: 0", "ExceptionHandler registered", "lastException: null",
         "exception: none")},
  /* Seed 000's "^Error:", and every "SomethingError:" that starts a
   * message: Node's TypeError, ReferenceError, SyntaxError, RangeError,
   * AggregateError, Python's ValueError, KeyError... Node's frames follow
   * (Python's final line comes inside its traceback, which it joins). */
  {"error", LINE_START "(?:[A-Z][\\w$]*)?Error(?: \\[[\\w-]+\\])?:", kTraceNode, false,
   LINES("Error: listen EADDRINUSE: address already in use :::3000",
         "TypeError: Cannot read properties of undefined (reading 'map')",
         "ReferenceError: fetchUser is not defined", "SyntaxError: Unexpected token '}'",
         "RangeError: Maximum call stack size exceeded",
         "ValueError: invalid literal for int() with base 10: 'abc'",
         "AggregateError [ECONNREFUSED]: ",
         " ⨯ TypeError: Cannot read properties of null (reading 'id')",
         "[0] Error: Cannot find module './routes'",
         "2026-01-01T10:00:00.123Z Error: connect ECONNREFUSED 127.0.0.1:6379",
         "2026-01-01 10:00:00 ERROR Error: boom"),
   LINES("ErrorBoundary rendered", "lastError: null", "Error handling middleware loaded",
         "errors: 0", "    at new ValidationError (/app/models/user.js:3:9)",
         "retry policy: on Error: retry 3 times")},
  /* Go: seed 000's "^panic:". */
  {"go-panic", LINE_START "panic:", kTraceGo, false,
   LINES("panic: runtime error: invalid memory address or nil pointer dereference",
         "panic: assignment to entry in nil map", "panic: boom [recovered]"),
   LINES("no panic: all good", "panicked=false")},
  /* Go's runtime gave up: deadlock, concurrent map writes, out of memory. */
  {"go-fatal-error", LINE_START "fatal error: ", kTraceGo, false,
   LINES("fatal error: all goroutines are asleep - deadlock!",
         "fatal error: concurrent map writes"),
   LINES("no fatal errors", "fatal error count: 0")},
  /* Seed 000's "^Fatal:", and Python's crash of the interpreter itself. */
  {"fatal", LINE_START "Fatal(?: Python error)?:", kTraceGeneric, false,
   LINES("Fatal: unable to access 'https://github.com/org/repo.git/': Could not resolve host",
         "Fatal Python error: Segmentation fault"),
   LINES("Fatalities: 0", "Fatal errors are reported to Sentry")},
  /* Rust: since 1.73 the message is on the next line ("panicked at
   * src/main.rs:2:5:"); before, it was quoted in the header. */
  {"rust-panic", LINE_START "thread '[^']*' panicked at ", kTraceRust, true,
   LINES("thread 'main' panicked at src/main.rs:2:5:",
         "thread 'tokio-runtime-worker' panicked at 'called `Option::unwrap()` on a `None` "
         "value', src/handlers.rs:41:27",
         "thread '<unnamed>' panicked at library/core/src/panicking.rs:221:5:"),
   LINES("thread 'main' exited normally", "no thread panicked")},
  /* rustc's errors, with their code: the excerpt and help follow. */
  {"rust-compile-error", LINE_START "error\\[E\\d{4}\\]:", kTraceRust, false,
   LINES("error[E0382]: borrow of moved value: `x`",
         "error[E0425]: cannot find value `y` in this scope"),
   LINES("warning: unused variable: `x`", "rustc --explain E0382")},
  /* A sanitizer's report: ASan, LSan, TSan, MSan, UBSan's summary. */
  {"sanitizer", "\\b(?:Address|Leak|Thread|Memory|UndefinedBehavior)Sanitizer:", kTraceNative,
   false,
   LINES("==12345==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at "
         "pc 0x55d5c1a2b3c4 bp 0x7ffd1a2b3c40 sp 0x7ffd1a2b3c38",
         "==4242==ERROR: LeakSanitizer: detected memory leaks",
         "WARNING: ThreadSanitizer: data race (pid=4242)", "AddressSanitizer:DEADLYSIGNAL"),
   LINES("built with -fsanitize=address (AddressSanitizer enabled)")},
  /* UndefinedBehaviorSanitizer's line: file:line:column: runtime error. */
  {"ubsan", "^\\S+:\\d+:\\d+: runtime error: ", kTraceNative, false,
   LINES("src/parse.c:42:17: runtime error: signed integer overflow: 2147483647 + 1 cannot be "
         "represented in type 'int'",
         "/app/x.cc:7:12: runtime error: load of null pointer of type 'int'"),
   LINES("checked 12 files: runtime errors: 0")},
  /* The shell's or the kernel's word for SIGSEGV. */
  {"segfault", "\\b[Ss]egmentation fault\\b", kTraceNone, false,
   LINES("Segmentation fault (core dumped)", "bash: line 1:  4242 Segmentation fault      ./server",
         "zsh: segmentation fault  ./a.out"),
   LINES("segmentation faults: 0")},
  /* Any other signal that dumped core: SIGABRT, SIGBUS, SIGILL... */
  {"core-dumped", "\\bcore dumped\\b", kTraceNone, false,
   LINES("Aborted (core dumped)", "Bus error (core dumped)", "Illegal instruction (core dumped)"),
   LINES("core dump size: unlimited")},
  /* tsc, plain ("src/app.ts(3,5): error TS2304") and pretty ("- error TS2322"). */
  {"ts-error", "\\berror TS\\d+:", kTraceGeneric, false,
   LINES("src/app.ts(3,5): error TS2304: Cannot find name 'foo'.",
         "src/index.ts:12:7 - error TS2322: Type 'string' is not assignable to type 'number'.",
         "error TS18003: No inputs were found in config file '/app/tsconfig.json'."),
   LINES("Found 0 errors. Watching for file changes.",
         "[10:00:00 AM] Found 0 errors. Watching for file changes.")},
  /* C and C++ compilers and linkers: gcc's and clang's "file:line:col:
   * error:" (their code excerpt, indented, joins), and the driver's own
   * "gcc: error:" / "collect2: error:". */
  {"cc-error",
   "^(?:[^\\s:]+:\\d+(?::\\d+)?|gcc|g\\+\\+|clang(?:\\+\\+)?|cc|c\\+\\+|ld|collect2): "
   "(?:fatal )?error: ",
   kTraceGeneric, false,
   LINES("src/main.c:12:5: error: implicit declaration of function 'foo' "
         "[-Werror=implicit-function-declaration]",
         "server.cpp:41:10: fatal error: 'boost/asio.hpp' file not found",
         "gcc: error: foo.c: No such file or directory",
         "collect2: error: ld returned 1 exit status"),
   LINES("src/main.c:12:5: warning: unused variable 'x' [-Wunused-variable]",
         "cc -c -o main.o main.c -Werror=implicit-function-declaration",
         "error: 0 errors generated")},
  /* webpack (and webpack-dev-server) failing to build a module. (make's
   * "*** [target] Error 2" is left out: the table is full, and the
   * compiler's own error before it is what cc-error takes.) */
  {"webpack-error", "^ERROR in (?!0 )\\S", kTraceGeneric, false,
   LINES("ERROR in ./src/index.js 5:10-26", "ERROR in src/App.tsx:12:7"),
   LINES("webpack 5.89.0 compiled with 1 error in 523 ms", "ERROR in 0 modules",
         "LOG ERROR in request handler")},
  /* npm's failure report (npm 6-9 "npm ERR!", npm 10 "npm error"). */
  {"npm-error", LINE_START "npm (?:ERR!|error) ", kTraceGeneric, false,
   LINES("npm ERR! code ELIFECYCLE", "npm ERR! Missing script: \"dev\"", "npm error code 1",
         "npm error Missing script: \"start\""),
   LINES("npm WARN deprecated inflight@1.0.6: This module is not supported",
         "npm notice New minor version of npm available!")},
  /* A failed test file or test: Jest and Vitest's "FAIL src/x.test.ts", Go's
   * "--- FAIL: TestX" and "FAIL\tpkg", unittest's "FAIL: test_x (...)". */
  {"test-fail", LINE_START "(?:--- )?FAIL(?::|[ \\t]|$)", kTraceGeneric, false,
   LINES("FAIL src/app.test.ts", "--- FAIL: TestCreateUser (0.00s)",
         "FAIL\tgithub.com/acme/api/users\t0.012s", "FAIL",
         "FAIL: test_create (app.tests.UserTests.test_create)"),
   LINES("PASS src/app.test.ts", "FAILURE_THRESHOLD=3")},
  /* "FAILED" as a word anywhere (pytest, cargo test, GoogleTest, CTest,
   * Gradle), unless it counts zero failures. */
  {"failed", "(?<!\\b0 )\\bFAILED\\b(?![ \\t]*[:=][ \\t]*0\\b)", kTraceGeneric, false,
   LINES("FAILED app/test_users.py::test_create - AssertionError: assert 201 == 200",
         "test result: FAILED. 11 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
         "test parser::tests::parses_empty ... FAILED", "[  FAILED  ] MathTest.Adds (0 ms)",
         "BUILD FAILED in 3s", "The following tests FAILED:"),
   LINES("Tests: 12 PASSED, 0 FAILED", "FAILED: 0", "FAILED_LOGIN_ATTEMPTS=0")},
  /* HTTP 5xx in a request line's access log: nginx, Apache, morgan's
   * combined and common formats, Django's runserver, uvicorn, werkzeug. The
   * status follows the quoted request, so a 500 in the path or the size
   * does not count. */
  {"http-5xx-access-log", "\"[A-Z]+ [^\"]* HTTP/[\\d.]+\" 5\\d\\d\\b", kTraceNone, false,
   LINES("127.0.0.1 - - [01/Jan/2026:10:00:00 +0000] \"GET /api/orders HTTP/1.1\" 500 1234 "
         "\"-\" \"curl/8.5.0\"",
         "[01/Jan/2026 10:00:00] \"POST /checkout HTTP/1.1\" 500 145",
         "INFO:     127.0.0.1:54321 - \"GET /items HTTP/1.1\" 500 Internal Server Error",
         "172.18.0.1 - - [01/Jan/2026:10:00:00 +0000] \"GET / HTTP/2.0\" 502 157 \"-\" "
         "\"Mozilla/5.0\""),
   LINES("127.0.0.1 - - [01/Jan/2026:10:00:00 +0000] \"GET /img/500.png HTTP/1.1\" 200 500",
         "INFO:     127.0.0.1:54321 - \"GET /items/500 HTTP/1.1\" 404 Not Found")},
  /* HTTP 5xx in morgan's dev, tiny and short formats (Express): the status
   * follows the path, the time in " ms" ends the line's fields. (Next.js's
   * "GET / 500 in 33ms" is left out: " 5" would be the only literal, and
   * Next prints the error itself, which "error" takes.) */
  {"http-5xx-dev",
   "\\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \\S+(?: HTTP/[\\d.]+)? 5\\d\\d "
   "(?:[\\w.-]+ ){0,3}[\\d.]+ ms\\b",
   kTraceNone, false,
   LINES("GET /api/users 500 12.345 ms - 123", "POST /api/orders 503 - - 87.012 ms",
         "::1 - GET /health HTTP/1.1 502 - - 0.845 ms"),
   LINES("GET /api/users 200 500 ms", "GET /api/users 404 500.123 ms - 9",
         "GET /reports/500 200 3.120 ms - 512")},
  /* Rails (and Rack apps that log alike). */
  {"http-5xx-rails", "\\bCompleted 5\\d\\d\\b", kTraceNone, false,
   LINES("Completed 500 Internal Server Error in 23ms (ActiveRecord: 1.2ms | Allocations: 4521)"),
   LINES("Completed 200 OK in 500ms (Views: 12.0ms | ActiveRecord: 1.1ms)",
         "Completed 5 of 12 jobs")},
  /* Structured access logs: JSON ("status":500, pino's "statusCode":500)
   * and logfmt (status=500). */
  {"http-5xx-status-field", "(?<![\\w-])\"?status(?:_?[Cc]ode)?\"?[=:] ?5\\d\\d\\b", kTraceNone,
   false,
   LINES("{\"level\":50,\"time\":1767261600000,\"req\":{\"method\":\"GET\",\"url\":\"/api\"},"
         "\"res\":{\"statusCode\":500},\"responseTime\":12}",
         "time=2026-01-01T10:00:00Z level=INFO msg=request method=GET path=/api status=502 "
         "duration=1.2ms",
         "{\"status\":503,\"path\":\"/health\"}"),
   LINES("{\"status\":200,\"bytes\":500}", "status=404 duration=500ms",
         "http_status=200 size=500")},
  /* Gin's access log: "[GIN] date | status | latency | ip | method path". */
  {"http-5xx-gin", "^\\[GIN\\] [^|]*\\| *5\\d\\d *\\|", kTraceNone, false,
   LINES("[GIN] 2026/01/01 - 10:00:00 | 500 |    1.234567ms |       127.0.0.1 | GET      "
         "\"/api/users\""),
   LINES("[GIN] 2026/01/01 - 10:00:00 | 200 |     500µs |       127.0.0.1 | GET      \"/\"")},
};

#define CRASHPATTERNS_N (sizeof(crashpatterns_table) / sizeof(crashpatterns_table[0]))

_Static_assert(CRASHPATTERNS_N <= CRASHPATTERNS_MAX, "the table fits monitor.max_patterns");

/* Ordinary output that no entry may match: healthy lines that merely
 * mention an error word, counts of zero, successes, warnings, and access
 * lines whose 500 is a size or a time. */
static const char *const crashpatterns_never[] = {
  "error_count=0",
  "ErrorBoundary rendered",
  "0 errors",
  "no errors found",
  "Found 0 errors. Watching for file changes.",
  "errors: 0",
  "Errors: 0, Warnings: 2",
  "INFO request failed_count=0",
  "GET /api/users 200 500ms",
  "compiled successfully",
  "webpack 5.89.0 compiled successfully in 1234 ms",
  " ✓ Compiled /api/users in 500ms",
  "[info] retrying after TypeError handling disabled",
  "2026-01-01T00:00:00Z ERROR request failed: upstream returned 404",
  "2026-01-01T00:00:00Z INFO error budget at 99.9%",
  "warning: unused variable `x`",
  "PASS src/app.test.ts",
  "Tests: 0 failed, 12 passed",
  "Tests:       12 passed, 12 total",
  "Test Suites: 3 passed, 3 total",
  "--- PASS: TestCreateUser (0.00s)",
  "ok  \tgithub.com/acme/api/users\t0.012s",
  "test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
  "===== 12 passed in 0.42s =====",
  "Server listening on http://localhost:3000",
  "[nodemon] restarting due to changes...",
  "Completed 200 OK in 12ms (Views: 5.0ms | ActiveRecord: 0.4ms)",
  "127.0.0.1 - - [01/Jan/2026 10:00:00] \"GET /static/500.css HTTP/1.1\" 304 -",
  "INFO:     127.0.0.1:54321 - \"GET /items HTTP/1.1\" 200 OK",
  "Error rate: 0.0%",
  "log level: error",
  "Retrying request (attempt 2 of 5) after ECONNRESET",
  "deprecation warning: Buffer() is deprecated",
  "Exception handling: enabled",
  "panic_on_error=false",
  "Watching for file changes in /app/src",
  NULL,
};

size_t
crashpatterns_count(void)
{
  return CRASHPATTERNS_N;
}

const CrashPattern *
crashpatterns_get(size_t index)
{
  return index < CRASHPATTERNS_N ? &crashpatterns_table[index] : NULL;
}

int
crashpatterns_find(const char *name)
{
  for (size_t i = 0; i < CRASHPATTERNS_N; i++)
    if (strcmp(crashpatterns_table[i].name, name) == 0)
      return (int)i;
  return -1;
}

/* The sources, filled once from the table (an array of pointers cannot be
 * initialised from the table's fields at compile time). */
static const char *crashpatterns_source_list[CRASHPATTERNS_N + 1];
static uv_once_t crashpatterns_once = UV_ONCE_INIT;

static void
crashpatterns_fill_sources(void)
{
  for (size_t i = 0; i < CRASHPATTERNS_N; i++)
    crashpatterns_source_list[i] = crashpatterns_table[i].regex;
  crashpatterns_source_list[CRASHPATTERNS_N] = NULL;
}

const char *const *
crashpatterns_sources(void)
{
  uv_once(&crashpatterns_once, crashpatterns_fill_sources);
  return crashpatterns_source_list;
}

const char *const *
crashpatterns_never_match(void)
{
  return crashpatterns_never;
}

/* Appends s as a Markdown code span: delimiters longer than any run of
 * backticks inside, and in a table cell (in_table) every pipe escaped. */
static void
crashpatterns_md_code(StrBuf *out, const char *s, bool in_table)
{
  size_t run = 0, longest = 0;
  for (const char *p = s; *p; p++) {
    run = *p == '`' ? run + 1 : 0;
    if (run > longest)
      longest = run;
  }
  for (size_t i = 0; i <= longest; i++)
    strbuf_putc(out, '`');
  if (longest > 0)
    strbuf_putc(out, ' ');
  for (const char *p = s; *p; p++) {
    if (*p == '|' && in_table)
      strbuf_putc(out, '\\');
    strbuf_putc(out, *p);
  }
  if (longest > 0)
    strbuf_putc(out, ' ');
  for (size_t i = 0; i <= longest; i++)
    strbuf_putc(out, '`');
}

/* Appends a regex as a code span, with LINE_START shown by its name. */
static void
crashpatterns_md_regex(StrBuf *out, const char *regex)
{
  StrBuf shown = STRBUF_INIT;
  const char *p = regex;
  const char *hit;
  size_t k = strlen(LINE_START);
  while ((hit = strstr(p, LINE_START)) != NULL) {
    strbuf_append(&shown, p, (size_t)(hit - p));
    strbuf_puts(&shown, LINE_START_SHOWN);
    p = hit + k;
  }
  strbuf_puts(&shown, p);
  crashpatterns_md_code(out, strbuf_cstr(&shown), true);
  strbuf_free(&shown);
}

void
crashpatterns_render_markdown(StrBuf *out)
{
  strbuf_puts(out,
              "# Built-in crash patterns\n\n"
              "What a monitor matches when its start gives no `patterns` (`patterns: []`\n"
              "matches nothing). Generated from the table in `core/pipeline/crashpatterns.c`;\n"
              "`test_crashpatterns` fails when this file and the table disagree, and holds\n"
              "every entry to its lines: each line it must match is matched, by it first,\n"
              "and no entry matches a line it must not match.\n\n"
              "Patterns are PCRE2 (UTF mode) and tried in this order; the first that\n"
              "matches a line wins. Lines are matched with ANSI escapes removed.\n"
              "**family** says which lines after a match belong to the same incident\n"
              "(`core/pipeline/trace.h`): `none` nothing, `node` frames and the error's properties up\n"
              "to `Node.js v20.1.0`, `python` the traceback up to its final line and any\n"
              "chained one, `go` the goroutine dumps, `rust` the message, note and backtrace\n"
              "or the compiler's excerpt, `jvm` frames and `Caused by:`, `native` a\n"
              "sanitizer's report, `generic` indented lines. **names it**: no means the line\n"
              "says nothing about the failure; the incident's fingerprint uses the line\n"
              "of its trace that names it.\n\n"
              "`" LINE_START_SHOWN "` stands for the start of a message, which may have, in\n"
              "this order and each optional: up to 3 blanks, a process manager's tag\n"
              "(`[0] `, `web-1  | `) and up to 4 blanks, a timestamp, a log level that\n"
              "says something failed (`ERROR`, `[FATAL]`, `error:`) and an error mark\n"
              "(Next.js's `⨯`). A log level alone matches nothing. In full:\n\n"
              "```\n" LINE_START "\n```\n\n"
              "| # | name | family | names it | regex | matches | does not match |\n"
              "|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < CRASHPATTERNS_N; i++) {
    const CrashPattern *cp = &crashpatterns_table[i];
    strbuf_printf(out, "| %zu | `%s` | %s | %s | ", i, cp->name, trace_family_name(cp->family),
                  cp->generic_header ? "no" : "yes");
    crashpatterns_md_regex(out, cp->regex);
    strbuf_puts(out, " | ");
    crashpatterns_md_code(out, cp->must_match[0], true);
    strbuf_puts(out, " | ");
    crashpatterns_md_code(out, cp->must_not[0], true);
    strbuf_puts(out, " |\n");
  }
  strbuf_puts(out, "\nLines no entry may match:\n\n");
  for (size_t i = 0; crashpatterns_never[i]; i++) {
    strbuf_puts(out, "- ");
    crashpatterns_md_code(out, crashpatterns_never[i], false);
    strbuf_putc(out, '\n');
  }
}
