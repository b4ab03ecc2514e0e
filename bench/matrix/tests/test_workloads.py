"""Workload files, length generators and page tables (no torch)."""

import os
import tempfile
import unittest

import numpy as np

from bench.matrix import workloads as W


class WorkloadFiles(unittest.TestCase):
    def setUp(self):
        self.by = W.load_all()

    def test_counts_and_keys(self):
        self.assertEqual(len(self.by["mla_decode"]), 47 + 7 + 5 + 2)
        self.assertEqual(len(self.by["kda_prefill"]), 17)
        self.assertEqual(len(self.by["decoder"]), 7)
        keys = [w.key for ws in self.by.values() for w in ws]
        self.assertEqual(len(keys), len(set(keys)))

    def test_keys_follow_loom_model(self):
        mla = self.by["mla_decode"]
        self.assertTrue(mla[0].key.startswith("mla_decode/trace/0/00cb2bc2-"))
        self.assertEqual(mla[47].key, "mla_decode/h16_ps64/0")
        self.assertEqual(self.by["kda_prefill"][0].key, "kda_prefill/b1_t512_h32")
        self.assertEqual(self.by["decoder"][0].key, "decoder/llama3_8b/layers=32/batch=1/context=1024")

    def test_trace_fields(self):
        last = self.by["mla_decode"][46]
        self.assertEqual((last.batch, last.total, last.contig), (64, 75145, 0.25))
        self.assertEqual((last.num_heads, last.page_size), (16, 1))

    def test_tiers_expand(self):
        t = {w.key: w for w in self.by["mla_decode"]}
        self.assertEqual(t["mla_decode/h16_ps64/6"].lengths, [512] * 256)
        self.assertEqual(t["mla_decode/h128_ps64/4"].total, 128 * 16384)
        ln = t["mla_decode/h16_ps64/3"].lengths
        self.assertEqual(len(ln), 16)
        self.assertEqual(ln, sorted(ln))
        self.assertTrue(all(1 <= x <= 16384 for x in ln))
        # The middle requests sit around the median.
        self.assertTrue(ln[7] <= 700 <= ln[8])
        self.assertEqual(t["mla_decode/h8_ps1/1"].num_heads, 8)

    def test_kda_and_decoder(self):
        k = {w.name: w for w in self.by["kda_prefill"]}
        self.assertEqual(k["var_32x256_h32"].lengths, [256] * 32)
        self.assertTrue(k["b1_t16384_h4_h0"].initial_state)
        self.assertFalse(k["b1_t512_h32"].initial_state)
        d = self.by["decoder"][3]
        self.assertEqual((d.model, d.layers, d.batch, d.context), ("llama3_8b", 32, 32, 1024))
        self.assertEqual(d.lengths, [1024] * 32)
        self.assertEqual(self.by["decoder"][6].model, "llama3_1_8b")


class Generators(unittest.TestCase):
    def test_uniform_and_normal(self):
        self.assertEqual(W.expand_request_lengths("uniform:7", 3), [7, 7, 7])
        n = W.expand_request_lengths("normal:100:10", 5)
        self.assertEqual(n, sorted(n))
        self.assertEqual(n[2], 100)
        self.assertEqual(W.expand_request_lengths("normal:1:100", 4)[0], 1)  # at least 1

    def test_lognormal_clip(self):
        ln = W.expand_request_lengths("lognormal:1000:3.0:5000", 9)
        self.assertEqual(max(ln), 5000)
        self.assertEqual(ln[4], 1000)

    def test_quantile(self):
        self.assertAlmostEqual(W.normal_quantile(0.5), 0.0, places=12)
        self.assertAlmostEqual(W.normal_quantile(0.975), 1.959963984540054, places=9)

    def test_bad_generators(self):
        for g in ("uniform", "uniform:-1", "lognormal:0:1:10", "normal:1", "zipf:3"):
            with self.assertRaises(ValueError, msg=g):
                W.expand_request_lengths(g, 4)
        self.assertEqual(W.expand_sequence_lengths("uniform:3x5"), [5, 5, 5])
        with self.assertRaises(ValueError):
            W.expand_sequence_lengths("uniform:3")

    def test_errors_name_file_and_line(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "kda_prefill.yaml")
            with open(p, "w") as f:
                f.write("workloads:\n  - {name: a, lengths: [4], heads: 2}\n  - {name: b, lengths: [4]}\n")
            with self.assertRaises(W.WorkloadError) as e:
                W.read_kda(p)
            self.assertIn(f"{p}:3:1: error: missing key 'heads'", str(e.exception))
            with open(p, "w") as f:
                f.write("workloads:\n  - {name: a, lengths: [4], heads: [}\n")
            with self.assertRaises(W.WorkloadError) as e:
                W.read_kda(p)
            self.assertRegex(str(e.exception), rf"^{p}:\d+:\d+: error: invalid YAML")


class PageTables(unittest.TestCase):
    def check_valid(self, t, lengths, P, pool):
        self.assertEqual(t.indptr[0], 0)
        self.assertEqual(list(np.diff(t.indptr)), [(x + P - 1) // P for x in lengths])
        self.assertEqual(len(set(t.indices.tolist())), t.nnz)  # distinct
        if t.nnz:
            self.assertGreaterEqual(int(t.indices.min()), 0)
            self.assertLess(int(t.indices.max()), pool)
        self.assertEqual(t.lens.tolist(), list(lengths))
        self.assertEqual(t.indices.dtype, np.int32)

    def test_contig_fraction(self):
        rng = np.random.default_rng(3)
        lengths = [3000] * 8
        for contig in (0.0, 0.25, 0.5, 0.9):
            t = W.make_page_table(lengths, 1, 1 << 20, contig, rng)
            self.check_valid(t, lengths, 1, 1 << 20)
            self.assertAlmostEqual(t.consecutive_fraction(), contig, delta=0.03, msg=f"contig {contig}")
        t = W.make_page_table(lengths, 1, 1 << 20, 1.0, rng)
        self.assertEqual(t.consecutive_fraction(), 1.0)

    def test_full_pool_and_pages(self):
        rng = np.random.default_rng(5)
        lengths = [64, 1, 0, 65, 127]
        t = W.make_page_table(lengths, 64, 6, 0.3, rng)  # exactly the pool
        self.check_valid(t, lengths, 64, 6)
        self.assertEqual(sorted(t.indices.tolist()), list(range(6)))
        self.assertEqual(t.last_page_len().tolist(), [64, 1, 0, 1, 63])
        with self.assertRaises(ValueError):
            W.make_page_table(lengths, 64, 5, 0.3, rng)

    def test_fresh_draws_differ(self):
        rng = np.random.default_rng(9)
        a = W.make_page_table([100] * 4, 1, 10000, 0.0, rng)
        b = W.make_page_table([100] * 4, 1, 10000, 0.0, rng)
        self.assertNotEqual(a.indices.tolist(), b.indices.tolist())

    def test_unused_neighbours(self):
        rng = np.random.default_rng(11)
        t = W.make_page_table([50, 70], 1, 1000, 0.8, rng)
        nb = W.unused_neighbours(t, 8)
        self.assertTrue(0 < len(nb) <= 8)
        used = set(t.indices.tolist())
        for p in nb:
            self.assertNotIn(int(p), used)
            self.assertIn(int(p) - 1, used)


class Select(unittest.TestCase):
    def test_select(self):
        ws = W.load_all()["kda_prefill"]
        self.assertEqual(len(W.select(ws, None)), 17)
        self.assertEqual([w.name for w in W.select(ws, "2")], ["b1_t512_h32", "b1_t2048_h32"])
        self.assertEqual([w.name for w in W.select(ws, "b1_t8192_h4")], ["b1_t8192_h4"])
        self.assertEqual(len(W.select(ws, "h64,h96")), 2)


if __name__ == "__main__":
    unittest.main()
