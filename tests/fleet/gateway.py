"""A gateway of the fleet tests: reads a durable consumer with the Python
client's FleetSubscriber and "injects" each notification into its model,
an append-only file of JSON lines, before it acks.

The model is the host's own record, so it is also where the cursor comes
from at start: the last (epoch, seq) written per (engine, session). A
gateway killed between its write and its ack gets that message again from
JetStream, and the cursor makes the subscriber skip it: each notification
is in the model once. Two gateways may take turns on one durable and one
model (a second takes over when the first dies), never run at once.

  gateway.py URL DURABLE MODEL [--ack-wait S]

It prints "ready" once bound, and runs until killed.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "clients", "python"))
from vigil_client.fleet import FleetSubscriber, FleetUnavailable  # noqa: E402


def read_cursor(model):
    """The host's records: the last (epoch, seq) of each (engine, session)."""
    cursor = {}
    if not os.path.exists(model):
        return cursor
    with open(model) as f:
        for line in f:
            if not line.endswith("\n"):
                break  # a write the kill cut short: not injected
            rec = json.loads(line)
            cursor[(rec["engine"], rec["session"])] = (rec["epoch"], rec["seq"])
    return cursor


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("durable")
    ap.add_argument("model")
    ap.add_argument("--ack-wait", type=float, default=2.0)
    args = ap.parse_args()
    sub = FleetSubscriber(args.url, args.durable, cursor=read_cursor(args.model),
                          ack_wait_s=args.ack_wait, batch=4, reconnect_wait_s=60)
    print("ready", flush=True)
    with open(args.model, "a") as model:
        while True:
            try:
                n = sub.next(timeout=1.0)
            except FleetUnavailable:
                continue
            if n is None:
                continue
            rec = {"engine": n.engine, "session": n.session, "epoch": n.epoch, "seq": n.seq,
                   "type": n.type, "monitor_id": n.monitor_id, "pid": os.getpid()}
            model.write(json.dumps(rec) + "\n")
            model.flush()
            os.fsync(model.fileno())
            n.ack()


if __name__ == "__main__":
    main()
