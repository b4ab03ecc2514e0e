#!/usr/bin/env python3
"""Checks what loom-run --trace / --bench wrote (ctest host.trace_*).

  check-trace.py TRACE.json PROGRAM.json RUN.txt [--bench N] [--unchecked]

TRACE.json must be valid JSON (Chrome trace format) with exactly one
complete ("X") event of category "task" per task of the program (its
loomc metadata, PROGRAM.json): named as the task table names it, on a
worker row that exists, with non-negative start, duration and wait; and,
if the schedule is static, on the worker the schedule gave it. RUN.txt is
loom-run's stdout: its last line must be `RESULT {json}` agreeing with the
run (the bench statistics ordered min <= median <= p90, the trace path),
and --unchecked runs must say that nothing was compared with the oracle.
"""
import json
import sys


def fail(message):
    print("check-trace: " + message, file=sys.stderr)
    sys.exit(1)


def main(argv):
    if len(argv) < 4:
        fail("usage: check-trace.py TRACE.json PROGRAM.json RUN.txt "
             "[--bench N] [--unchecked]")
    trace_path, meta_path, run_path = argv[1:4]
    rest = argv[4:]
    bench = int(rest[rest.index("--bench") + 1]) if "--bench" in rest else 0
    unchecked = "--unchecked" in rest

    with open(trace_path) as f:
        try:
            trace = json.load(f)
        except json.JSONDecodeError as e:
            fail(f"{trace_path} is not valid JSON: {e}")
    with open(meta_path) as f:
        meta = json.load(f)
    tasks = meta["task_table"]["tasks"]
    workers = meta["workers"]
    static_lists = meta["task_table"].get("worker_tasks")

    events = trace.get("traceEvents")
    if not isinstance(events, list):
        fail("no traceEvents list")
    seen = {}
    for e in events:
        if e.get("cat") != "task":
            continue
        if e.get("ph") != "X":
            fail(f"task event {e} is not a complete (X) event")
        task = e["args"]["task"]
        if task in seen:
            fail(f"task {task} has two events")
        seen[task] = e
        if not 0 <= task < len(tasks):
            fail(f"event for task {task}, the program has {len(tasks)}")
        if e["name"] != tasks[task]["name"]:
            fail(f"task {task} is named {e['name']!r}, the table says "
                 f"{tasks[task]['name']!r}")
        if not 0 <= e["tid"] < workers:
            fail(f"task {task} on worker row {e['tid']} of {workers}")
        for key, value in (("ts", e["ts"]), ("dur", e["dur"]),
                           ("wait_ns", e["args"]["wait_ns"])):
            if not value >= 0:
                fail(f"task {task}: {key} = {value} is negative")
        if static_lists is not None and task not in static_lists[e["tid"]]:
            fail(f"task {task} ran on worker {e['tid']}, the schedule put it "
                 f"elsewhere")
    if len(seen) != len(tasks):
        missing = sorted(set(range(len(tasks))) - set(seen))[:10]
        fail(f"{len(seen)} task events for {len(tasks)} tasks "
             f"(missing e.g. {missing})")

    with open(run_path) as f:
        lines = f.read().splitlines()
    if not lines or not lines[-1].startswith("RESULT "):
        fail("the run's last line is not RESULT {json}")
    result = json.loads(lines[-1][len("RESULT "):])
    if result["trace"] != trace_path:
        fail(f"RESULT trace is {result['trace']!r}, expected {trace_path!r}")
    if result["tasks"] != len(tasks) or result["workers"] != workers:
        fail("RESULT tasks/workers disagree with the program")
    if bench:
        b = result["bench"]
        if not b or b["launches"] != bench:
            fail(f"RESULT bench is {b}, expected {bench} launches")
        for key in ("device_ms", "wall_ms"):
            s = b[key]
            if s["count"] != bench or not 0 < s["min"] <= s["median"] <= s["p90"]:
                fail(f"RESULT bench {key} is not ordered: {s}")
    text = "\n".join(lines)
    if unchecked:
        if result["check"] != "none" or "NOT CHECKED" not in text or \
                not any(l.startswith("UNCHECKED ") for l in lines):
            fail("an unchecked run must say so (NOT CHECKED, UNCHECKED, "
                 "check: none)")
    elif result["check"] != "oracle" or not any(l.startswith("PASS ")
                                                for l in lines):
        fail("a checked run must end with PASS and check: oracle")
    if not result["ok"]:
        fail("RESULT ok is false")
    print(f"check-trace: {len(seen)} task events on {workers} workers, "
          f"RESULT consistent")


if __name__ == "__main__":
    main(sys.argv)
