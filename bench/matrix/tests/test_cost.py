"""Bytes and FLOPs per workload (no torch); against loom-model when built."""

import json
import os
import subprocess
import tempfile
import unittest

from bench.matrix import cost as C
from bench.matrix import specs as S
from bench.matrix import workloads as W


class Cost(unittest.TestCase):
    def test_mla_by_hand(self):
        w = W.Workload(family="mla_decode", key="k", name="k", set="t", index=0, lengths=[8, 100],
                       source="", num_heads=16, page_size=64)
        shape = {"head_dim_ckv": 512, "head_dim_kpe": 64}
        c = C.mla_cost(w, shape)
        kv = 108 * 576 * 2
        q = 2 * 16 * 576 * 2
        o = 2 * 16 * 512 * 2 + 2 * 16 * 4
        meta = 3 * 4 + (1 + 2) * 4 + 2 * 4
        self.assertEqual(c["bytes"], kv + q + o + meta)
        self.assertEqual(c["flops"], 108 * 16 * (2 * 576 + 2 * 512))

    def test_kda_chunks(self):
        w = W.Workload(family="kda_prefill", key="k", name="k", set="t", index=0, lengths=[65, 1],
                       source="", num_heads=2)
        shape = {"head_dim_k": 128, "head_dim_v": 128, "chunk_size": 64}
        c = C.kda_cost(w, shape, with_state=False)
        f = C.kda_chunk_flops
        self.assertEqual(c["flops"], 2 * (f(64, 128, 128) + f(1, 128, 128) + f(1, 128, 128)))
        self.assertEqual(c["parts"]["state_read"], 0)
        self.assertEqual(C.kda_cost(w, shape, True)["parts"]["state_read"], 2 * 2 * 128 * 128 * 4)

    def test_llama_weights(self):
        w = W.load_all()["decoder"][0]
        c = C.decoder_cost(w, S.artifact_for(w).spec.shape)
        # Llama-3.1-8B without embedding and LM head: about 6.98e9 parameters.
        self.assertAlmostEqual(c["parts"]["weights"] / 2 / 1e9, 6.98, delta=0.01)

    def test_against_loom_model(self):
        exe = os.environ.get("LOOM_MODEL") or os.path.join(S.ROOT, "build", "bin", "loom-model")
        if not os.path.exists(exe):
            self.skipTest(f"{exe} not built (bench/model)")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "model.json")
            subprocess.run([exe, "--json", path], check=True, capture_output=True)
            model = json.load(open(path))["workloads"]
        by = W.load_all()
        n = 0
        for ws in by.values():
            for w in ws:
                m = model[w.key]
                a = S.artifact_for(w, "unbounded" if w.family == "kda_prefill" else None)
                c = C.cost(w, a.spec.shape, with_state=bool(m["bytes"]["state_read"]))
                self.assertEqual(c["bytes"], m["bytes"]["total"], w.key)
                self.assertEqual(c["flops"], m["flops"], w.key)
                n += 1
        self.assertEqual(n, len(model))


if __name__ == "__main__":
    unittest.main()
