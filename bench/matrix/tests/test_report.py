"""The report from a synthetic run (no torch, no GPU)."""

import json
import math
import os
import tempfile
import unittest

from bench.matrix import report as R


def _timing(us):
    return {"time_us": us, "p10_us": us * 0.9, "p90_us": us * 1.1, "min_us": us * 0.8, "reps": 5}


def _check(ok, value=0.1):
    return {"ok": ok, "metrics": {"o": {"value": value, "bound": 1.0, "ok": ok}}, "note": ""}


def _row(family, key, status, loom_us, baselines, wkey=None):
    r = {"family": family, "key": key, "workload_key": wkey or key, "name": key.split("/", 1)[1],
         "gate": None, "source": "f:1", "spec": "s", "spec_path": "configs/x.yaml", "artifact": "s",
         "batch": 1, "tokens": 100, "lengths": [100], "bytes": 10 ** 9, "flops": 10 ** 12,
         "bytes_parts": {}, "status": status, "why": "" if status == "pass" else "o 3 > 1", "seed": 1,
         "loom": None, "baselines": {}, "inputs": {}, "elapsed_s": 1.0}
    if loom_us:
        r["loom"] = dict(_timing(loom_us), gbps=1.0, tflops=1.0, roofline_fraction=0.5,
                         check=_check(status == "pass", 0.1 if status == "pass" else 3.0))
    for name, (us, ok) in baselines.items():
        if us is None:
            r["baselines"][name] = {"label": name, "impl": "", "error": "not run: x", "ok": False}
        else:
            r["baselines"][name] = dict(_timing(us), label=name, impl="", check=_check(ok), ok=ok,
                                        speedup=us / loom_us, roofline_fraction=0.25)
    return r


class Report(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        rows = {
            "mla_decode": [
                _row("mla_decode", "mla_decode/trace/0/u", "pass", 10.0,
                     {"flashinfer_kernel": (20.0, True), "flashinfer_with_plan": (40.0, True)}),
                _row("mla_decode", "mla_decode/trace/1/v", "pass", 10.0,
                     {"flashinfer_kernel": (5.0, True), "flashinfer_with_plan": (10.0, True)}),
                # Loom fails: not in the geometric mean.
                _row("mla_decode", "mla_decode/trace/2/w", "fail", 10.0,
                     {"flashinfer_kernel": (1000.0, True), "flashinfer_with_plan": (1000.0, True)}),
                # The baseline's output is wrong: not in its mean either.
                _row("mla_decode", "mla_decode/h16_ps64/0", "pass", 10.0,
                     {"flashinfer_kernel": (1000.0, False), "flashinfer_with_plan": (None, False),
                      "flash_mla": (30.0, True)}),
            ],
            "decoder": [_row("decoder", "decoder/m/layers=1/batch=1/context=8", "skipped", None,
                             {"per_op_graph": (None, False)})],
        }
        for fam, rs in rows.items():
            with open(os.path.join(d, f"rows-{fam}.jsonl"), "w") as f:
                for r in rs:
                    f.write(json.dumps(r) + "\n")
                f.write('{"family": "truncated')  # a process killed mid-write
            env = {"family": fam, "date": "2026-12-01", "machine": {"gpu": "NVIDIA H200", "sm_count": 132},
                   "software": {"torch": "2.11"}, "commit": "abc", "copy": {"gbps": 4300.0},
                   "timing": {"method": "m", "warmup": 2, "min_reps": 5, "max_reps": 50},
                   "baselines": {"flashinfer": {"available": True, "package": "flashinfer-python",
                                                "version": "0.6.6", "why": ""}}}
            if fam == "decoder":  # each family's env names only its own baselines
                env["baselines"] = {"fla": {"available": False, "package": "fla-core", "version": "",
                                            "why": "not installed"}}
            json.dump(env, open(os.path.join(d, f"env-{fam}.json"), "w"))
        self.model = os.path.join(d, "model.json")
        json.dump({"schema": "loom-model/1", "label": "model, not measured",
                   "chips": {"b200": {"hbm_gbps": 8000}, "mi350x": {"hbm_gbps": 8000}},
                   "workloads": {"mla_decode/trace/0/u": {"estimate": {"b200": {"time_us": 1.5},
                                                                       "mi350x": {"time_us": 2.5}}}}},
                  open(self.model, "w"))
        self.targets = os.path.join(d, "targets.json")
        json.dump({"b200": {"s": {"ok": True, "emit": "artifact"}},
                   "mi350x": {"s": {"ok": False, "emit": "artifact", "error": "x"}}}, open(self.targets, "w"))

    def tearDown(self):
        self.dir.cleanup()

    def test_summary(self):
        doc = R.build(self.dir.name, self.model, self.targets)
        self.assertEqual(R.validate(doc), [])
        s = doc["families"]["mla_decode"]
        self.assertEqual((s["rows"], s["pass"], s["fail"]), (4, 3, 1))
        self.assertAlmostEqual(s["geomean_speedup"]["flashinfer_kernel"], math.sqrt(2.0 * 0.5))
        self.assertEqual(s["geomean_rows"]["flashinfer_kernel"], 2)
        self.assertAlmostEqual(s["geomean_speedup"]["flashinfer_with_plan"], math.sqrt(4.0 * 1.0))
        self.assertAlmostEqual(s["geomean_speedup"]["flash_mla"], 3.0)
        self.assertEqual(doc["families"]["decoder"]["skipped"], 1)
        self.assertIsNone(doc["families"]["decoder"]["geomean_speedup"]["per_op_graph"])
        self.assertEqual(doc["rows"][0]["model_us"], {"b200": 1.5, "mi350x": 2.5})
        self.assertEqual(doc["targets"]["b200"]["status"], "compiled, not run")
        self.assertEqual(doc["targets"]["b200"]["model"]["rows_with_estimate"], 1)
        self.assertEqual(doc["copy_gbps"], {"decoder": 4300.0, "mla_decode": 4300.0})

    def test_baselines_of_every_family(self):
        doc = R.build(self.dir.name)
        self.assertEqual(sorted(doc["baselines"]), ["fla", "flashinfer"])
        self.assertIsNone(doc["fla_configs"])

    def test_fla_configs_line(self):
        json.dump({"mode": "strict", "dir": os.path.join(R.ROOT, "bench/fla-configs/h200"), "keys": 12,
                   "from_files": 11, "tuned_in_run": ["chunk_fwd_kernel_h_split"]},
                  open(os.path.join(self.dir.name, "fla-configs.json"), "w"))
        R.write(self.dir.name)
        md = open(os.path.join(self.dir.name, "matrix.md")).read()
        self.assertIn("fla ran with its tuned configs (bench/fla-configs/h200, FLA_CACHE_MODE=strict): "
                      "11 of its 12 autotune keys from the files; kernels that autotuned in the run: "
                      "chunk_fwd_kernel_h_split.", md)
        self.assertIn("| fla | fla-core | – | not available: not installed |", md)

    def test_host_gaps_line(self):
        R.write(self.dir.name)
        md = open(os.path.join(self.dir.name, "matrix.md")).read()
        self.assertNotIn("could not be queued", md)
        path = os.path.join(self.dir.name, "rows-mla_decode.jsonl")
        rows = [json.loads(x) for x in open(path) if x.rstrip().endswith("}")]
        rows[1]["baselines"]["flashinfer_kernel"]["host_gaps"] = 50
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        R.write(self.dir.name)
        md = open(os.path.join(self.dir.name, "matrix.md")).read()
        self.assertIn("could not be queued ahead of the GPU, so host time is in them (1): "
                      "mla_decode/trace/1/v (flashinfer_kernel).", md)

    def test_as_issued_loom_times(self):
        doc = R.build(self.dir.name)
        self.assertIsNone(doc["families"]["mla_decode"]["loom_as_issued"])
        self.assertNotIn("as issued", R.markdown(doc))
        path = os.path.join(self.dir.name, "rows-mla_decode.jsonl")
        rows = [json.loads(x) for x in open(path) if x.rstrip().endswith("}")]
        for r, issued in zip(rows, (12.0, 15.0, 2.0)):  # queued 10; row 2 failed
            r["loom"]["launch"] = "queued"
            r["loom"]["as_issued"] = _timing(issued)
        rows[3]["loom"]["queued"] = {"error": "loomrt_program_set_queued_launch failed"}
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        doc = R.build(self.dir.name)
        self.assertEqual(R.validate(doc), [])
        q = doc["families"]["mla_decode"]["loom_as_issued"]
        self.assertEqual(q["rows"], 2)
        self.assertAlmostEqual(q["time_ratio_geomean"], math.sqrt(1.2 * 1.5))
        self.assertIn("which took 1.34x its queued time in MLA paged decode (2 rows).", R.markdown(doc))
        rows[0]["loom"]["as_issued"] = {"time_us": "x"}
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        self.assertIn("rows[0].loom.as_issued: missing 'p10_us'", R.validate(R.build(self.dir.name)))

    def test_variant_run_says_so(self):
        doc = R.build(self.dir.name)
        self.assertIsNone(doc["variant"])
        self.assertNotIn("Loom variant", R.markdown(doc))
        json.dump({"name": "linear3", "nvcc_flags": "-DLOOM_LINEAR_STAGES=3", "families": "decoder"},
                  open(os.path.join(self.dir.name, "variant.json"), "w"))
        doc = R.build(self.dir.name)
        self.assertEqual(R.validate(doc), [])
        self.assertEqual(doc["variant"]["nvcc_flags"], "-DLOOM_LINEAR_STAGES=3")
        self.assertIn("**Loom variant `linear3`**: its artifacts built with nvcc flags "
                      "`-DLOOM_LINEAR_STAGES=3`", R.markdown(doc))

    def test_without_model_is_a_hook(self):
        doc = R.build(self.dir.name)
        self.assertIsNone(doc["targets"]["mi350x"]["model"])
        self.assertIn("loom-model", doc["targets"]["mi350x"]["model_note"])
        self.assertEqual(doc["targets"]["mi350x"]["status"], "not compiled in this run")

    def test_markdown_and_files(self):
        doc = R.write(self.dir.name, self.model, self.targets)
        md = open(os.path.join(self.dir.name, "matrix.md")).read()
        self.assertIn("# Loom benchmark matrix — NVIDIA H200, 2026-12-01", md)
        self.assertIn("## MLA paged decode", md)
        self.assertIn("**FAIL** o 3", md)              # Loom's failed check is in its row
        self.assertIn("FlashInfer kernel-only: **FAIL**", md)  # and a baseline's
        self.assertIn("| b200 | compiled, not run | 1/1 artifacts built", md)
        self.assertIn("| mi350x | compiled, not run | 0/1 artifacts built", md)
        self.assertIn("model µs b200", md)
        loaded = json.load(open(os.path.join(self.dir.name, "matrix.json")))
        self.assertEqual(R.validate(loaded), [])
        self.assertEqual(loaded["schema"], R.SCHEMA)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.assertEqual(doc["_plots"], [])
        else:
            self.assertEqual(sorted(os.path.basename(p) for p in doc["_plots"]), ["roofline.png", "speedup.png"])

    def test_validate_catches(self):
        doc = R.build(self.dir.name)
        doc["rows"][0]["status"] = "great"
        doc["rows"][1]["baselines"]["flashinfer_kernel"].pop("time_us")
        doc["rows"][2]["bytes"] = "many"
        del doc["targets"]["b200"]
        errs = R.validate(doc)
        self.assertTrue(any("rows[0].status" in e for e in errs), errs)
        self.assertTrue(any("rows[1].baselines.flashinfer_kernel" in e for e in errs), errs)
        self.assertTrue(any("rows[2].bytes" in e for e in errs), errs)
        self.assertTrue(any("missing 'b200'" in e for e in errs), errs)


if __name__ == "__main__":
    unittest.main()
