/*
 * The fingerprint of an incident: a 64-bit hash of its first line in a
 * normal form, plus the index of the pattern that matched it. Two
 * occurrences of one failure (a crash loop's restarts, which differ in pid,
 * port, time, request id, temp dir) get the same fingerprint, so the
 * coalescing window can count the repeats instead of notifying each one;
 * two different failures (another exception type, other words, another
 * file, another pattern) get different ones.
 *
 * The normal form. The input is a sanitized line (valid UTF-8, ANSI
 * removed). A "token start" is a position whose previous byte is not an
 * ASCII letter or digit (so `_`, `-`, `.`, `:`, `/` separate tokens, and
 * digits inside a word such as `TS2345`, `E0308`, `Uint8Array`, `worker3`
 * are kept). At a token start, the first rule that matches wins, and a
 * match must end where a letter or digit does not follow:
 *
 *   <U>  a UUID, 8-4-4-4-12 hex digits.
 *   <T>  a timestamp: an ISO 8601 / RFC 3339 date (`2024-01-05`, also with
 *        `/`), alone or with a time after `T` or a space (`HH:MM` or
 *        `HH:MM:SS`); a time alone (`12:03:04`, seconds required, so that
 *        `:12:34` stays a line and column); common log format
 *        (`10/Oct/2000:13:55:36`); syslog and ctime/JS dates
 *        (`[Sat ]Nov 24 [2024 ]06:48:01[ 2024]`). Each time may carry a
 *        fraction (`.123` or `,123`) and a zone (`Z`, `+01:00`, `+0100`,
 *        ` -0700`, ` UTC`, ` GMT+0000`).
 *   <H>  a hex id: `0x`/`0X` and hex digits, or a run of 8 or more hex digits
 *        holding a digit (git shas, pointers, request ids; all digits too,
 *        as a random id sometimes is, and so is a long number such as a
 *        millisecond time). An 8-letter word such as `deadbeef` stays.
 *   <V>  a version or an IPv4 address: three or more dotted numbers
 *        (`1.2.3`, `127.0.0.1`), or `v`/`V` and two or more (`v18.17.1`).
 *   <D>  a duration: numbers each glued to a unit, ns us µs μs ms s sec
 *        secs m min mins h hr hrs d (`12ms`, `1.5s`, `250µs`, `3m12s`).
 *        With a space between (`12 ms`) it is a number and a word.
 *   <N>  any other number, integer or decimal (pids, ports `:3000`, line and
 *        column `:12:5`, counts). Letters glued after it are kept as a unit
 *        (`512MB` -> `<N>MB`).
 *
 * Anywhere:
 *
 *   Quotes. `'...'`, `"..."` and `` `...` `` become `'<Q>'` (the quote
 *        characters kept, so the shape stays readable); a backslash escapes
 *        the next byte inside. A `'` right after a letter or digit is an
 *        apostrophe (`don't`), and a `'` closes only where no letter or
 *        digit follows. A quoted path (no whitespace, and a `/` in it or a
 *        file extension at its end, and not an e-mail address) is
 *        normalised inside instead, so `File "server.py"` and
 *        `File "worker.py"` stay apart. A quote closed nowhere in the line
 *        is a literal character; one still open where the scan stops short
 *        of the line's end runs to that stop (`'<Q>`). In a structured
 *        record (the line starts with `{`, JSON, or with `key=`, logfmt)
 *        double quotes are punctuation: there every key and value is quoted,
 *        and replacing them would make every record of a logger alike.
 *   Paths. At the start of a path, the directory right under `/tmp/`,
 *        `/var/tmp/`, `/dev/shm/`, `/private/tmp/`, `/home/`, `/Users/`,
 *        `/nix/store/`, and up to four under `/var/folders/` and
 *        `/private/var/folders/` (macOS's `xx/yyyy/T/tmp.X/`), and
 *        anywhere the one right under `/.pnpm/` (pnpm's
 *        `pkg@1.2.3_peer@4.5.6`; the package is named again after it),
 *        become `<P>`: `/tmp/tmp.abc123/server.js` ->
 *        `/tmp/<P>/server.js`. A file directly in such a directory keeps
 *        its name. Hex, versions and numbers in other segments follow the
 *        rules above (`pkg@<V>`, `/node/<V>/lib`); words are kept, so
 *        `server.js` and `worker.js` stay apart.
 *   Whitespace. A run of ASCII whitespace is one space; none leads or
 *        trails.
 *   Everything else (words, punctuation, other characters) is kept as is.
 *
 * Bounded work: the scan reads at most FINGERPRINT_SCAN_BYTES of the line
 * (cut at a character boundary), and the normal form holds at most
 * FINGERPRINT_MAX_BYTES bytes (a piece that does not fit ends it; a word is
 * cut at a character boundary). The bound is on the normal form, not on
 * the input, so that two long lines differing only in the width of a
 * varying part (pid 12 and pid 12345) still have the same first 512 bytes
 * to hash; the wider scan window leaves room for the parts that shrink.
 * Nothing is allocated beyond the caller's StrBuf; fingerprint_of hashes
 * as it goes and allocates nothing.
 */
#ifndef VIGIL_FINGERPRINT_H
#define VIGIL_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

/* The most a normal form holds, in bytes. */
#define FINGERPRINT_MAX_BYTES 512
/* The most of a line the normaliser reads, in bytes. */
#define FINGERPRINT_SCAN_BYTES 2048

/* Appends to out the normal form of text[0..len) (the rules above): at
 * most FINGERPRINT_MAX_BYTES bytes, valid UTF-8 when the input is; nothing
 * for an empty or all-blank line. out stays the caller's. */
void fingerprint_normalise(const char *text, size_t len, StrBuf *out);

/* The fingerprint of a line matched by pattern (its index in the monitor's
 * list; any int, -1 included): 64-bit FNV-1a over the pattern as 4 bytes,
 * little-endian, then the normal form. Stable across runs, restarts and
 * platforms, since fingerprints go on the wire and into event logs.
 * Allocates nothing. */
uint64_t fingerprint_of(const char *text, size_t len, int pattern);

/* Writes fp as 16 lowercase hex digits and a NUL. */
void fingerprint_hex(uint64_t fp, char out[17]);

#endif
