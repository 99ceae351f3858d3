#!/usr/bin/env python3
"""The child of bench/signal: replays a schedule's lines at their times.

    python3 bench/signal_child.py SCHEDULE [SIDEFILE]

SCHEDULE is the JSON bench/signal_scenario.py makes. Each write group
(consecutive lines with the same t_ms and stream) is one write(2) to fd 1 or 2
at t0 + t_ms, t0 being an absolute CLOCK_MONOTONIC target: the child sleeps
until each target, never for a relative interval, so lateness does not
accumulate. Nothing is buffered (os.write on the raw descriptors).

SIDEFILE, when given, is the side channel the benchmark reads (the child's
stdout and stderr are the scenario and nothing else): "t0 SECONDS" (the
CLOCK_MONOTONIC time of t_ms = 0) is written before the first line, and when
the last line is out "done groups=N late_p50_ms=.. late_p99_ms=.. late_max_ms=.."
(how late the writes were against their targets). Only the standard library is
used: any python3 runs it.
"""

import json
import os
import sys
import time


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write("usage: signal_child.py SCHEDULE [SIDEFILE]\n")
        return 2
    with open(sys.argv[1]) as f:
        sched = json.load(f)
    side = sys.argv[2] if len(sys.argv) == 3 else None

    groups = []
    for t, stream, text, *_ in sched["lines"]:
        fd = 1 if stream == "stdout" else 2
        if groups and groups[-1][0] == t and groups[-1][1] == fd:
            groups[-1][2].append(text)
        else:
            groups.append((t, fd, [text]))
    writes = [(t / 1000.0, fd, ("\n".join(ls) + "\n").encode("utf-8")) for t, fd, ls in groups]

    t0 = time.monotonic() + 0.02
    if side:
        with open(side, "w") as f:
            f.write("t0 %.6f\n" % t0)
    late = []
    for t, fd, data in writes:
        target = t0 + t
        wait = target - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        late.append(time.monotonic() - target)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    if side:
        late.sort()
        q = lambda p: late[min(len(late) - 1, int(p * len(late)))] * 1000.0
        with open(side, "a") as f:
            f.write("done groups=%d late_p50_ms=%.3f late_p99_ms=%.3f late_max_ms=%.3f\n"
                    % (len(late), q(0.5), q(0.99), late[-1] * 1000.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
