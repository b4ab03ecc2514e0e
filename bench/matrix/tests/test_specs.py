"""Which spec runs which workload; the bench-only specs (no torch)."""

import glob
import os
import unittest

import yaml

from bench.matrix import specs as S
from bench.matrix import workloads as W


class Mapping(unittest.TestCase):
    def setUp(self):
        self.by = W.load_all()

    def test_every_workload_has_a_spec_that_covers_it(self):
        arts = S.artifacts_needed(self.by)
        self.assertEqual(len({a.key for a in arts}), len(arts))
        for a in arts:
            self.assertTrue(os.path.exists(os.path.join(S.ROOT, a.spec.path)), a.spec.path)
        for w in self.by["mla_decode"]:
            a = S.artifact_for(w)
            pages = sum((x + w.page_size - 1) // w.page_size for x in w.lengths)
            self.assertEqual((a.spec["num_heads"], a.spec["page_size"]), (w.num_heads, w.page_size))
            self.assertLessEqual(w.batch, a.spec["max_batch"])
            self.assertLessEqual(pages, a.spec["max_pages"])
        for w in self.by["kda_prefill"]:
            for gate in S.KDA_GATES:
                a = S.artifact_for(w, gate)
                self.assertEqual((a.spec["num_heads"], a.spec["gate"]), (w.num_heads, gate))
                self.assertLessEqual(w.total, a.spec["max_tokens"])
                self.assertLessEqual(w.batch, a.spec["max_seqs"])
                self.assertTrue(a.spec["initial_state"])
                if gate == "bounded":
                    self.assertEqual(a.spec["lower_bound"], -5.0)

    def test_shipped_specs_first(self):
        t = {w.key: w for w in self.by["mla_decode"]}
        self.assertEqual(S.artifact_for(t["mla_decode/trace/46/5bef8d88-0f74-4ccb-a256-b02842951df3"]).key,
                         "deepseek_v3_tp8")
        self.assertEqual(S.artifact_for(t["mla_decode/h16_ps64/5"]).key, "deepseek_v3_tp8_ps64")
        self.assertEqual(S.artifact_for(t["mla_decode/h16_ps64/6"]).key, "bench_mla_h16_ps64")  # batch 256
        self.assertEqual(S.artifact_for(t["mla_decode/h128_ps64/4"]).key, "deepseek_v3_dp")
        k = self.by["kda_prefill"][0]
        self.assertEqual(S.artifact_for(k, "unbounded").key, "kimi_linear_48b")
        self.assertEqual(S.artifact_for(k, "bounded").key, "bench_kda_h32_bounded")

    def test_kda_groups_by_gate(self):
        kda = self.by["kda_prefill"]
        both = S.kda_groups(kda)
        self.assertEqual(sum(len(ws) for _, _, ws in both), 2 * len(kda))
        self.assertEqual([g for _, g, _ in both][0], "unbounded")  # the matrix runs unbounded first
        bounded = S.kda_groups(kda, ("bounded",))
        self.assertEqual({g for _, g, _ in bounded}, {"bounded"})
        self.assertEqual([(a.key, len(ws)) for a, _, ws in bounded],
                         [(a.key, len(ws)) for a, g, ws in both if g == "bounded"])

    def test_decoder_layers(self):
        keys = [S.artifact_for(w) for w in self.by["decoder"]]
        self.assertEqual([a.key for a in keys],
                         ["llama3_8b"] * 4 + ["llama3_8b_L1", "qwen3_8b", "llama3_1_8b"])
        self.assertEqual(keys[4].args, ["--layers=1"])
        self.assertEqual(keys[4].layers, 1)
        self.assertTrue(keys[4].so_path("/x").endswith("/x/llama3_8b_L1/llama3_8b.h200.so"))

    def test_no_spec_is_a_clear_error(self):
        w = W.Workload(family="kda_prefill", key="kda_prefill/x", name="x", set="kda_prefill", index=0,
                       lengths=[10], source="f.yaml:3", num_heads=7)
        with self.assertRaises(S.NoSpecError) as e:
            S.artifact_for(w, "bounded")
        self.assertIn("kda_prefill/x with the bounded gate (f.yaml:3)", str(e.exception))
        self.assertIn("bench/configs/kda_prefill/", str(e.exception))

    def test_yaml_numbers(self):
        q = S.load_spec("configs/decoder/qwen3_8b.yaml")
        self.assertEqual(q["rms_eps"], 1e-6)  # PyYAML reads 1e-6 as a string
        self.assertEqual(q["rope_theta"], 1e6)
        l31 = S.load_spec("configs/decoder/llama3_1_8b.yaml")
        self.assertEqual(l31["rope_scaling"]["factor"], 8)
        self.assertEqual(l31["rope_scaling"]["original_max_position_embeddings"], 8192)
        self.assertIsNone(S.load_spec("configs/decoder/llama3_8b.yaml").shape.get("rope_scaling"))


class BenchConfigs(unittest.TestCase):
    def test_names_match_files_and_all_are_used(self):
        used = {a.spec.path for a in S.artifacts_needed(W.load_all())}
        files = sorted(glob.glob(os.path.join(S.ROOT, "bench", "configs", "*", "*.yaml")))
        self.assertTrue(files)
        for f in files:
            doc = yaml.safe_load(open(f))
            self.assertEqual(doc["name"], os.path.basename(f)[:-5], f)
            self.assertIn(os.path.basename(os.path.dirname(f)), doc, f)
            self.assertIn(os.path.relpath(f, S.ROOT), used, f"{f} is not used by any workload")


if __name__ == "__main__":
    unittest.main()
