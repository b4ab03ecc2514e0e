#!/usr/bin/env python3
"""Builds one spec's MI350X artifact with loomc and inspects it (no GPU).

    check-artifact.py --loomc BIN --spec SPEC.yaml --out DIR [--fake-hip LIB
                      --loom-run BIN] [-- extra loomc arguments]

The artifact is what `loomc SPEC --target=mi350x --emit=artifact` writes: the
HIP source, the code object (.hsaco), the host library embedding it (.so)
and the metadata (.json). Checked, one line each:

  chip table   the metadata's launch matches the graph's #loom.target
               (loomc --emit=graph): grid = the scheduled workers <= CUs,
               dynamic LDS = smem_per_block - 4096 (the static reserve);
  code object  an AMDGPU ELF for gfx950 with exactly the one kernel the
               metadata names, wave64, 256 threads per workgroup, no scratch
               (private segment 0, no dynamic stack, no scratch_*
               instructions), no VGPR and no SGPR spills, VGPRs + AGPRs
               <= 512 (arch VGPRs <= 256, AGPRs <= 256), static LDS <= 4096
               and static + dynamic <= 160 KB, and the occupancy the schedule
               assumes: one workgroup of the program fits a CU (its waves
               get their registers, its LDS fits), one per CU for all
               workers; its by-value argument is sizeof(LoomKernelArgs);
  MFMA         the family's matrix instruction is in the disassembly (KDA:
               v_mfma_f32_16x16x4_f32; MLA and decoders: the 16x16x32 MFMA
               of the spec's dtype);
  memory model release = buffer_wbl2 sc1, acquire = buffer_inv sc1, no
               system-wide write-back / invalidate, counter adds are
               global_atomic_add_x2 at agent scope, no flat atomics;
  host library exports loom_device_program and embeds the hsaco's bytes;
  runtime      (--fake-hip) runtime/hip, pointed at the fake libamdhip64 of
               tests/unit, opens the artifact, checks it against a gfx950
               device and hands hipModuleLoadData exactly the hsaco's bytes
               (the fake then refuses the image: it runs only its own).

Prints the compile time, "N passed, M failed"; exits 1 on any failure.
Tools: $LLVM_OBJDUMP, $LLVM_READELF, $LLVM_NM (default *-22), $CXX.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# gfx950 (MI350X) hardware, independent of the chip table under test.
WAVE = 64
SIMDS_PER_CU = 4
VGPRS_PER_LANE = 512      # per SIMD lane: arch VGPRs + AGPRs
VGPR_GRANULE = 8
LDS_PER_CU = 160 * 1024
STATIC_LDS_RESERVE = 4096  # targets/common/DeviceEmitter.h
MI350X_CUS = 256

passed = 0
failed = 0


def check(what, ok):
    global passed, failed
    if ok:
        passed += 1
        print("PASS  " + what)
    else:
        failed += 1
        print("FAIL  " + what)
    return ok


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def tool(env, default):
    return os.environ.get(env) or default


def kernels_from_notes(text):
    """The amdhsa.kernels entries of `llvm-readelf --notes` as dicts of
    their scalar keys (four-space keys; .args are read separately)."""
    kernels = []
    current = None
    in_args = False
    for line in text.splitlines():
        m = re.match(r"^  - \.([a-z_]+):\s*(.*)$", line)
        if m and not line.startswith("      "):
            current = {}
            kernels.append(current)
            line = "    ." + m.group(1) + ": " + m.group(2)
        if current is None:
            continue
        m = re.match(r"^    \.([a-z_]+):\s*(.*)$", line)
        if m:
            in_args = m.group(1) == "args"
            if not in_args:
                current[m.group(1)] = m.group(2).strip()
            else:
                current["args"] = []
            continue
        if in_args:
            m = re.match(r"^      - \.([a-z_]+):\s*(.*)$", line)
            if m:
                current["args"].append({m.group(1): m.group(2).strip()})
                continue
            m = re.match(r"^        \.([a-z_]+):\s*(.*)$", line)
            if m and current["args"]:
                current["args"][-1][m.group(1)] = m.group(2).strip()
        if re.match(r"^amdhsa\.", line):
            current = None
    return kernels


def target_of(loomc, spec, extra):
    """(workers, lanes, smem_per_block) of the graph's #loom.target."""
    r = run([loomc, spec, "--target=mi350x", "--emit=graph"] + extra)
    m = re.search(r"#loom\.target<[^>]*>", r.stdout)
    if r.returncode != 0 or not m:
        return None
    fields = dict(re.findall(r"(\w+) = (\d+)", m.group(0)))
    return {k: int(v) for k, v in fields.items()}


def family_mfma(spec):
    text = open(spec).read()
    family = re.search(r"^(mla_decode|kda_prefill|decoder):", text, re.M)
    dtype = re.search(r"^\s+dtype:\s*(\w+)", text, re.M)
    dtype = dtype.group(1) if dtype else "bf16"
    if family and family.group(1) == "kda_prefill":
        return "v_mfma_f32_16x16x4_f32"
    return "v_mfma_f32_16x16x32_" + ("f16" if dtype == "f16" else "bf16")


def sizeof_kernel_args(root):
    cxx = os.environ.get("CXX") or "c++"
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "s.cpp")
        exe = os.path.join(tmp, "s")
        open(src, "w").write(
            '#include "kernels/common/DeviceAbi.h"\n#include <cstdio>\n'
            'int main() { std::printf("%zu", sizeof(LoomKernelArgs)); }\n')
        if run([cxx, "-I" + root, src, "-o", exe]).returncode != 0:
            return None
        return int(run([exe]).stdout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--loomc", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    p.add_argument("--fake-hip")
    p.add_argument("--loom-run")
    p.add_argument("extra", nargs="*")
    a = p.parse_args()
    objdump = tool("LLVM_OBJDUMP", "llvm-objdump-22")
    readelf = tool("LLVM_READELF", "llvm-readelf-22")
    nm = tool("LLVM_NM", "llvm-nm-22")

    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    start = time.monotonic()
    r = run([a.loomc, a.spec, "--target=mi350x", "--emit=artifact", "-o", a.out] + a.extra)
    seconds = time.monotonic() - start
    print("check-artifact: loomc %s --target=mi350x --emit=artifact %s: %.1f s"
          % (os.path.basename(a.spec), " ".join(a.extra), seconds))
    if not check("loomc builds the mi350x artifact", r.returncode == 0):
        print(r.stdout + r.stderr)
        return 1
    metas = [f for f in os.listdir(a.out) if f.endswith(".mi350x.json")]
    if not check("one metadata file (%s)" % ", ".join(metas), len(metas) == 1):
        return 1
    stem = os.path.join(a.out, metas[0][: -len(".json")])
    meta = json.load(open(stem + ".json"))
    launch = meta.get("launch", {})
    for ext in (".hip", ".hsaco", ".so", ".host.cpp", ".resources.txt"):
        check("writes %s" % os.path.basename(stem + ext), os.path.isfile(stem + ext))
    hsaco = stem + ".hsaco"
    if not os.path.isfile(hsaco):
        return 1

    # The launch against the chip table.
    target = target_of(a.loomc, a.spec, a.extra)
    if check("the graph has a #loom.target", target is not None):
        dyn = target["smem_per_block"] - STATIC_LDS_RESERVE
        check("dynamic LDS %s = smem_per_block %d - %d"
              % (launch.get("dynamic_shared_bytes"), target["smem_per_block"],
                 STATIC_LDS_RESERVE), launch.get("dynamic_shared_bytes") == dyn)
        check("grid %s = scheduled workers %s <= %d CUs of the target"
              % (launch.get("grid"), meta.get("workers"), target["workers"]),
              launch.get("grid") == [meta.get("workers"), 1, 1]
              and 0 < meta["workers"] <= target["workers"])
        check("target lanes %d = wave%d" % (target["lanes"], WAVE), target["lanes"] == WAVE)
    check("metadata arch gfx950", launch.get("arch") == "gfx950")
    check("metadata code_object names the hsaco",
          launch.get("code_object") == os.path.basename(hsaco))

    # The code object.
    header = run([readelf, "-h", hsaco]).stdout
    check("AMDGPU ELF for gfx950", "EM_AMDGPU" in header and "gfx950" in header)
    kernels = kernels_from_notes(run([readelf, "--notes", hsaco]).stdout)
    names = [k.get("name") for k in kernels]
    if not check("exactly the kernel %r (%s)" % (launch.get("kernel"), names),
                 names == [launch.get("kernel")]):
        return 1
    k = kernels[0]

    def num(key):
        try:
            return int(k.get(key, ""))
        except ValueError:
            return None

    vgpr, agpr, sgpr = num("vgpr_count"), num("agpr_count"), num("sgpr_count")
    static_lds = num("group_segment_fixed_size")
    block = launch.get("block", [0])[0]
    dyn = launch.get("dynamic_shared_bytes", 0)
    print("check-artifact: %s: %s VGPRs (%s AGPRs), %s SGPRs, %s B static + %s B dynamic LDS"
          % (k["name"], vgpr, agpr, sgpr, static_lds, dyn))
    check("no scratch (private_segment_fixed_size %s)" % k.get("private_segment_fixed_size"),
          num("private_segment_fixed_size") == 0)
    check("no dynamic stack", k.get("uses_dynamic_stack") == "false")
    check("no VGPR spills (%s)" % k.get("vgpr_spill_count"), num("vgpr_spill_count") == 0)
    check("no SGPR spills (%s)" % k.get("sgpr_spill_count"), num("sgpr_spill_count") == 0)
    check("VGPRs incl. AGPRs %s <= %d" % (vgpr, VGPRS_PER_LANE),
          vgpr is not None and vgpr <= VGPRS_PER_LANE)
    check("AGPRs %s <= 256, arch VGPRs %s <= 256"
          % (agpr, None if vgpr is None or agpr is None else vgpr - agpr),
          agpr is not None and vgpr is not None and agpr <= 256 and vgpr - agpr <= 256)
    check("wave64 (%s)" % k.get("wavefront_size"), num("wavefront_size") == WAVE)
    check("block %s = max_flat_workgroup_size %s = 256"
          % (block, k.get("max_flat_workgroup_size")),
          block == 256 and num("max_flat_workgroup_size") == block)
    check("static LDS %s <= reserve %d" % (static_lds, STATIC_LDS_RESERVE),
          static_lds is not None and static_lds <= STATIC_LDS_RESERVE)
    lds = (static_lds or 0) + dyn
    check("static + dynamic LDS %d <= %d" % (lds, LDS_PER_CU), 0 < lds <= LDS_PER_CU)
    # Occupancy: the workgroup's waves spread over the CU's SIMDs; each SIMD
    # must hold its share at the kernel's register count, and the CU the
    # workgroup's LDS. One workgroup per CU is what the schedule assumes.
    if vgpr is not None and block:
        waves_per_simd = math.ceil(block // WAVE / SIMDS_PER_CU)
        fit_regs = VGPRS_PER_LANE // (math.ceil(vgpr / VGPR_GRANULE) * VGPR_GRANULE)
        fit_lds = LDS_PER_CU // lds if lds else 0
        check("occupancy: %d wave(s) per SIMD needed, registers allow %d, "
              "LDS allows %d workgroup(s) per CU" % (waves_per_simd, fit_regs, fit_lds),
              fit_regs >= waves_per_simd and fit_lds >= 1)
        check("one workgroup per CU: %s workers <= %d CUs (MI350X)"
              % (meta.get("workers"), MI350X_CUS), meta.get("workers", 0) <= MI350X_CUS)
    by_value = [x for x in k.get("args", []) if x.get("value_kind") == "by_value"]
    args_size = sizeof_kernel_args(a.root)
    check("one by-value argument of sizeof(LoomKernelArgs) = %s (%s)"
          % (args_size, [x.get("size") for x in by_value]),
          args_size is not None and [x.get("size") for x in by_value] == [str(args_size)])

    asm = run([objdump, "-d", "--mcpu=gfx950", hsaco]).stdout
    mfma = family_mfma(a.spec)
    count = len(re.findall(r"\b%s\b" % mfma, asm))
    check("MFMA %s in the kernel (%d)" % (mfma, count), count > 0)
    check("no scratch instructions", not re.search(r"\bscratch_(load|store)", asm))
    functions = re.findall(r"^[0-9a-f]+ <([^>]+)>:$", asm, re.M)
    check("one function, no calls (%s)" % ", ".join(functions),
          functions == [launch.get("kernel")] and "s_swappc" not in asm)
    check("release = buffer_wbl2 sc1", re.search(r"buffer_wbl2 sc1( |$)", asm, re.M) is not None)
    check("acquire = buffer_inv sc1", re.search(r"buffer_inv sc1( |$)", asm, re.M) is not None)
    check("no system-wide write-back / invalidate",
          not re.search(r"buffer_(wbl2|inv) sc0 sc1", asm))
    check("counter add = global_atomic_add_x2", "global_atomic_add_x2 " in asm)
    check("atomics at agent scope (no sc1 on any atomic)",
          not re.search(r"global_atomic\S* .* sc1", asm))
    check("no flat atomics", "flat_atomic" not in asm)

    # The host library.
    symbols = run([nm, "-D", "--defined-only", stem + ".so"]).stdout
    check("host library exports loom_device_program",
          re.search(r"\bT loom_device_program$", symbols, re.M) is not None)
    blob = open(hsaco, "rb").read()
    check("host library embeds the hsaco (%d bytes)" % len(blob),
          blob in open(stem + ".so", "rb").read())

    # runtime/hip against the fake libamdhip64.
    if a.fake_hip and a.loom_run:
        layers = re.search(r"--layers=(\d+)", " ".join(a.extra))
        args = [a.loom_run, a.spec, stem + ".so", "--device", "hip"]
        if layers:
            args += ["--layers", layers.group(1)]
        r = run(args, env=dict(os.environ, LOOM_HIP_RUNTIME=a.fake_hip))
        want = "cannot load the code object of '%s' (gfx950, %d bytes)" % (stem + ".so", len(blob))
        if not check("runtime/hip loads it up to hipModuleLoadData with the "
                     "hsaco's %d bytes" % len(blob),
                     r.returncode != 0 and want in r.stderr):
            print(r.stdout + r.stderr)

    print("check-artifact: %.1f s to build; %d passed, %d failed" % (seconds, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
