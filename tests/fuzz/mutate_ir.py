#!/usr/bin/env python3
"""Mutation fuzzing of the Loom dialect through loom-opt: parse, verify and
the Loom pipeline on mutants of the lit tests' IR.

Each seed file is split at `// -----` (as lit's -split-input-file does); each
mutant applies one to three edits that keep most of the text well formed, so
the parser accepts many of them and the verifiers and passes see odd but
plausible IR: an integer or dimension replaced by an edge value, a shape's
rank changed, a token swapped for another one of the corpus, a line
dropped, repeated or moved, the text cut short. loom-opt runs the pipeline
of the graph's target family (nvidia, amd or host).

A mutant fails the test when loom-opt crashes (a signal, or LLVM's crash
handler), runs past the time limit, or exits non-zero without an `error:`
diagnostic; rejecting a mutant with a diagnostic is the expected outcome.
Failing mutants are written to --out; the run is deterministic for a seed.
This is not coverage-guided (the libFuzzer targets beside it are): it finds
crashes the mutations reach, nothing more.
"""
import argparse
import os
import random
import re
import subprocess
import sys

EDGE_INTS = ["0", "1", "-1", "2", "3", "7", "16", "17", "255", "4096",
             "65536", "2147483647", "2147483648", "-2147483648",
             "9223372036854775807", "99999999999999999999"]
INT_RE = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
SHAPE_RE = re.compile(r"(memref|tensor)<([^<>]*)>")
TOKEN_RE = re.compile(r"[A-Za-z_][\w.]*|\d+|\S")


def chunks(paths):
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for part in text.split("// -----"):
            body = "\n".join(l for l in part.splitlines()
                             if not l.lstrip().startswith("// RUN"))
            if "loom." in body:
                yield path, body


def mutate_int(rng, text):
    hits = list(INT_RE.finditer(text))
    if not hits:
        return text
    m = rng.choice(hits)
    new = rng.choice(EDGE_INTS + [str(rng.randint(-5, 300))])
    return text[:m.start()] + new + text[m.end():]


def mutate_shape(rng, text):
    hits = list(SHAPE_RE.finditer(text))
    if not hits:
        return text
    m = rng.choice(hits)
    dims = m.group(2).split("x")
    op = rng.randrange(3)
    if op == 0 and len(dims) > 1:
        del dims[rng.randrange(len(dims) - 1)]
    elif op == 1:
        dims.insert(rng.randrange(len(dims)), rng.choice(["1", "?", "0", "3"]))
    else:
        i = rng.randrange(len(dims))
        if dims[i] not in ("bf16", "f16", "f32", "i32", "i64"):
            dims[i] = rng.choice(["?", "0", "1", "5", "1048576"])
        else:
            dims[i] = rng.choice(["bf16", "f16", "f32", "i32", "i8", "f64"])
    return text[:m.start()] + m.group(1) + "<" + "x".join(dims) + ">" + text[m.end():]


def mutate_token(rng, text, vocabulary):
    hits = list(TOKEN_RE.finditer(text))
    if not hits:
        return text
    m = rng.choice(hits)
    return text[:m.start()] + rng.choice(vocabulary) + text[m.end():]


def mutate_lines(rng, text):
    lines = text.splitlines()
    if len(lines) < 2:
        return text
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(3)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(j, lines[i])
    else:
        lines.insert(j, lines.pop(i))
    return "\n".join(lines)


def mutate(rng, text, vocabulary):
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if r < 0.35:
            text = mutate_int(rng, text)
        elif r < 0.55:
            text = mutate_shape(rng, text)
        elif r < 0.75:
            text = mutate_token(rng, text, vocabulary)
        elif r < 0.95:
            text = mutate_lines(rng, text)
        else:
            text = text[:rng.randrange(len(text) + 1)]
    return text


def family(text):
    if "sm_" in text:
        return "nvidia"
    if "gfx" in text:
        return "amd"
    return "host"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loom-opt", required=True)
    ap.add_argument("--seeds", nargs="+", required=True,
                    help=".mlir files or folders of them")
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--out", default="ir-fuzz-failures")
    args = ap.parse_args()

    paths = []
    for s in args.seeds:
        if os.path.isdir(s):
            paths += sorted(os.path.join(s, f) for f in os.listdir(s)
                            if f.endswith(".mlir"))
        else:
            paths.append(s)
    seeds = list(chunks(paths))
    if not seeds:
        sys.exit("mutate_ir: no seed IR found in " + " ".join(args.seeds))
    vocabulary = sorted({t for _, body in seeds for t in TOKEN_RE.findall(body)})
    # Mostly mutants of IR that verifies, so most reach the passes.
    valid = [s for s in seeds if "expected-error" not in s[1]] or seeds
    rng = random.Random(args.seed)
    failures = accepted = 0
    for n in range(args.runs):
        origin, body = rng.choice(valid if rng.random() < 0.8 else seeds)
        text = mutate(rng, body, vocabulary)
        cmd = [args.loom_opt, "--loom-pipeline-" + family(text), "-"]
        try:
            p = subprocess.run(cmd, input=text.encode(), capture_output=True,
                               timeout=args.timeout)
            err = p.stderr.decode(errors="replace")
            accepted += p.returncode == 0
            why = (None if p.returncode == 0 or
                   (p.returncode == 1 and "error:" in err) else
                   f"exit {p.returncode}" + ("" if "error:" in err else ", no diagnostic"))
        except subprocess.TimeoutExpired:
            why, err = f"no answer in {args.timeout:g} s", ""
        if why:
            failures += 1
            os.makedirs(args.out, exist_ok=True)
            dst = os.path.join(args.out, f"mutant-{args.seed}-{n}.mlir")
            with open(dst, "w", encoding="utf-8") as f:
                f.write(text)
            print(f"FAIL mutant {n} of {os.path.basename(origin)}: {why}: {dst}")
            print("\n".join(err.splitlines()[:8]))
    print(f"mutate_ir: {args.runs} mutants of {len(seeds)} seed graphs "
          f"(seed {args.seed}): {accepted} through the pipeline, "
          f"{args.runs - accepted - failures} rejected with a diagnostic, "
          f"{failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
