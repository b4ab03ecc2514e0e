#!/usr/bin/env python3
"""ctest model.all_workloads: run loom-model over bench/workloads/ and check
that its JSON parses, has every workload exactly once under its documented key
and that each row is consistent, and that the Markdown has a row per workload
and chip.

The workload files are read here without loom-model's code (and without
PyYAML, which CI does not install): the trace with json, the YAML files with a
small reader of their one-mapping-per-line layout. Generated MLA tier lengths
are recomputed with the rule in bench/model/README.md.

usage: check-model-output.py LOOM_MODEL WORKLOADS_DIR OUT_DIR
"""
import json
import math
import os
import re
import subprocess
import sys
from statistics import NormalDist

LABEL = "model, not measured"
BYTE_FIELDS = ["kv_read", "kv_write", "weights", "inputs", "outputs",
               "state_read", "state_write", "meta"]
failures = []


def fail(message):
    failures.append(message)


def split_top(text):
    """Splits at commas outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, None, ""
    for c in text:
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += c
    if cur.strip():
        parts.append(cur)
    return parts


def scalar(text):
    text = text.strip()
    if text.startswith("["):
        return [scalar(x) for x in split_top(text[1:-1])]
    if text[:1] in "\"'":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return text


def flow_map(line):
    """The mapping of a line '- {key: value, ...}  # comment'."""
    body = line[line.index("{") + 1:line.rindex("}")]
    out = {}
    for part in split_top(body):
        key, _, value = part.partition(":")
        out[key.strip()] = scalar(value)
    return out


def lines(path):
    with open(path) as f:
        return [l.rstrip("\n") for l in f]


def quantile_lengths(gen, batch):
    """README.md's rule for generated MLA lengths."""
    kind, *args = gen.split(":")
    z = lambda i: NormalDist().inv_cdf((i + 0.5) / batch)
    if kind == "uniform":
        return [int(args[0])] * batch
    if kind == "lognormal":
        median, sigma, clip = float(args[0]), float(args[1]), int(args[2])
        return [min(max(math.floor(median * math.exp(sigma * z(i)) + 0.5), 1), clip)
                for i in range(batch)]
    if kind == "normal":
        mean, std = float(args[0]), float(args[1])
        return [max(math.floor(mean + std * z(i) + 0.5), 1) for i in range(batch)]
    raise ValueError(gen)


def expected_workloads(wdir):
    """key -> (family, batch or None, lengths or None)."""
    exp = {}
    index = 0
    for line in lines(os.path.join(wdir, "mla_decode_trace47.jsonl")):
        if not line.strip():
            continue
        row = json.loads(line)
        exp[f"mla_decode/trace/{index}/{row['uuid']}"] = (
            "mla_decode", row["batch"], row["kv_lens"])
        index += 1
    if index != 47:
        fail(f"the trace has {index} workloads, its README says 47")

    tier = None
    for line in lines(os.path.join(wdir, "mla_decode_tiers.yaml")):
        m = re.match(r"\s*-\s*name:\s*(\S+)", line)
        if m:
            tier, index = m.group(1), 0
            continue
        if re.match(r"\s*-\s*\{", line) and tier:
            w = flow_map(line)
            lens = w["lengths"]
            if isinstance(lens, str):
                lens = quantile_lengths(lens, w["batch"])
            exp[f"mla_decode/{tier}/{index}"] = ("mla_decode", w["batch"], lens)
            index += 1

    for line in lines(os.path.join(wdir, "kda_prefill.yaml")):
        if re.match(r"\s*-\s*\{", line):
            w = flow_map(line)
            lens = w["lengths"]
            if isinstance(lens, str):
                count, length = lens.split(":")[1].split("x")
                lens = [int(length)] * int(count)
            exp[f"kda_prefill/{w['name']}"] = ("kda_prefill", len(lens), lens)

    for line in lines(os.path.join(wdir, "decoder.yaml")):
        if re.match(r"\s*-\s*\{", line):
            w = flow_map(line)
            key = (f"decoder/{w['model']}/layers={w['layers']}/batch={w['batch']}"
                   f"/context={w['context']}")
            exp[key] = ("decoder", w["batch"], [w["context"]] * w["batch"])
    return exp


def no_duplicates(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            fail(f"JSON key {k!r} appears twice")
        seen[k] = v
    return seen


def close(a, b):
    return abs(a - b) <= 1e-7 * max(abs(a), abs(b), 1e-12)


def check_row(key, row, chips, expect):
    family, batch, lengths = expect
    if row.get("family") != family or not key.startswith(family + "/"):
        fail(f"{key}: family {row.get('family')!r}, expected {family!r}")
    if row.get("label") != LABEL:
        fail(f"{key}: label {row.get('label')!r}")
    if row.get("batch") != batch:
        fail(f"{key}: batch {row.get('batch')}, the workload file says {batch}")
    if row.get("lengths") != lengths:
        fail(f"{key}: lengths differ from the workload file")
    if row.get("total_length") != sum(lengths):
        fail(f"{key}: total_length {row.get('total_length')} != {sum(lengths)}")
    b = row.get("bytes", {})
    for f in BYTE_FIELDS + ["total"]:
        if not isinstance(b.get(f), int) or b[f] < 0:
            fail(f"{key}: bytes.{f} is {b.get(f)!r}")
            return
    if b["total"] != sum(b[f] for f in BYTE_FIELDS) or b["total"] <= 0:
        fail(f"{key}: bytes.total {b['total']} is not the sum of its parts")
    flops = row.get("flops")
    if not isinstance(flops, int) or flops <= 0:
        fail(f"{key}: flops {flops!r}")
        return
    if set(row.get("estimate", {})) != set(chips):
        fail(f"{key}: estimates for {sorted(row.get('estimate', {}))}, chips are {sorted(chips)}")
        return
    for name, chip in chips.items():
        m = row["estimate"][name]
        mem = b["total"] / (chip["hbm_gbps"] * 1e3)
        comp = flops / (chip["bf16_tflops"] * 1e6)
        if not (close(m["memory_us"], mem) and close(m["compute_us"], comp)
                and close(m["time_us"], max(mem, comp))):
            fail(f"{key} on {name}: times {m} do not follow from bytes and flops")
        if m["bound"] != ("compute" if comp > mem else "memory"):
            fail(f"{key} on {name}: bound {m['bound']!r}")
    if family == "mla_decode":
        s = row["shape"]
        if b["kv_read"] != sum(lengths) * (s["head_dim_ckv"] + s["head_dim_kpe"]) * 2:
            fail(f"{key}: kv_read {b['kv_read']} is not the tokens' ckv + kpe rows")


def main():
    model, wdir, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    jpath, mpath = os.path.join(out, "model.json"), os.path.join(out, "model.md")
    run = subprocess.run([model, "--workloads", wdir, "--json", jpath, "--md", mpath],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout + run.stderr)
        sys.exit(f"loom-model exited with {run.returncode}")
    with open(jpath) as f:
        data = json.load(f, object_pairs_hook=no_duplicates)
    if data.get("schema") != "loom-model/1" or data.get("label") != LABEL:
        fail(f"schema {data.get('schema')!r}, label {data.get('label')!r}")
    chips = data.get("chips", {})
    if sorted(chips) != ["b200", "h100", "h200", "mi350x"]:
        fail(f"default chips are {sorted(chips)}")

    expected = expected_workloads(wdir)
    rows = data.get("workloads", {})
    for key in sorted(set(expected) - set(rows)):
        fail(f"missing workload {key}")
    for key in sorted(set(rows) - set(expected)):
        fail(f"unexpected workload {key}")
    for key in expected.keys() & rows.keys():
        check_row(key, rows[key], chips, expected[key])

    with open(mpath) as f:
        md_rows = [l for l in f if l.startswith("| ") and l.rstrip().endswith(f"| {LABEL} |")]
    if len(md_rows) != len(expected) * len(chips):
        fail(f"the Markdown has {len(md_rows)} labelled rows, expected "
             f"{len(expected)} workloads x {len(chips)} chips")

    for message in failures[:50]:
        print("FAIL:", message)
    if failures:
        sys.exit(f"{len(failures)} problem(s)")
    print(f"ok: {len(expected)} workloads x {len(chips)} chips")


if __name__ == "__main__":
    main()
