"""Which workload fla tunes each KDA head count and gate on (no torch)."""

import unittest

from bench.matrix import fla_tune
from bench.matrix.workloads import load_all


class TuneGroups(unittest.TestCase):
    def setUp(self):
        self.kda = load_all()["kda_prefill"]
        self.groups = fla_tune._groups(self.kda)

    def test_one_group_per_head_count_and_gate(self):
        keys = [(pairs[0][1].num_heads, gate) for gate, pairs in self.groups]
        heads = sorted({w.num_heads for w in self.kda})
        self.assertEqual(sorted(keys), sorted((h, g) for h in heads for g in ("bounded", "unbounded")))
        self.assertEqual(len(keys), len(set(keys)))

    def test_every_row_once_nearest_8192_first(self):
        seen = []
        for gate, pairs in self.groups:
            ws = [w for _, w in pairs]
            self.assertEqual({w.num_heads for w in ws}, {ws[0].num_heads})
            gaps = [abs(w.total - fla_tune.TUNE_TOKENS) for w in ws]
            self.assertEqual(gaps[0], min(gaps))
            seen += [(w.key, gate) for w in ws]
        self.assertEqual(len(seen), 2 * len(self.kda))
        self.assertEqual(len(set(seen)), len(seen))
        first = {(pairs[0][1].num_heads, gate): pairs[0][1].name for gate, pairs in self.groups}
        self.assertEqual(first[(32, "unbounded")], "b1_t8192_h32")
        self.assertEqual(first[(64, "bounded")], "b4_t4096_h64")




class CommittedConfigs(unittest.TestCase):
    """bench/fla-configs/<gpu>/*.json are what fla reads: a file it cannot
    parse, or an entry filed under another hash, would silently send fla
    back to autotuning in the run."""

    def test_files_as_fla_reads_them(self):
        import glob
        import hashlib
        import json
        import os
        files = glob.glob(os.path.join(fla_tune.DEFAULT_DIR, "*", "*.json"))
        self.assertTrue(files, "no committed fla configs")
        for path in files:
            doc = json.load(open(path))
            name = os.path.basename(path)[:-5]
            if name.startswith("_"):
                continue
            self.assertEqual(doc["kernel_name"], name, path)
            self.assertTrue(doc["autotune_entries"], path)
            for h, entry in doc["autotune_entries"].items():
                key = json.dumps(entry["autotune_key"], separators=(",", ":"), sort_keys=True)
                self.assertEqual(hashlib.md5(key.encode()).hexdigest(), h, f"{path}: {key}")
                cfg = entry["config"]
                self.assertIsInstance(cfg["kwargs"], dict, path)
                self.assertIsInstance(cfg["num_warps"], int, path)
                self.assertIsInstance(cfg["num_stages"], int, path)


if __name__ == "__main__":
    unittest.main()
