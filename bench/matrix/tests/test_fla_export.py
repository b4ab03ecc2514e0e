"""fla_tune.export/coverage against stand-ins for Triton's autotuner and
fla's config-file key (the real ones need torch and a GPU; the matrix run
on the GPU reports the real coverage)."""

import hashlib
import json
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

from bench.matrix import fla_tune


class _Autotuner:
    def __init__(self, name, cache):
        self.fn = types.SimpleNamespace(__name__=name)
        self.cache = cache


class _Cached(_Autotuner):
    def __init__(self, name, cache):
        super().__init__(name, cache)
        self.kernel_name = name


class _Heuristics:  # @triton.heuristics wraps the autotuner
    def __init__(self, fn):
        self.fn = fn


class _Key:
    @staticmethod
    def key_hash(key):
        return hashlib.md5(json.dumps(key, separators=(",", ":"), sort_keys=True).encode()).hexdigest()


def _config(**kw):
    return types.SimpleNamespace(kwargs=kw, num_warps=4, num_stages=2, num_ctas=1, maxnreg=None)


class Export(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.k1 = (32, 128, True, "torch.bfloat16")
        self.intra = _Cached("intra_kernel", {self.k1: _config(BK=64)})
        self.plain = _Autotuner("h_split_kernel", {(64,): _config(BV=32)})
        mod = types.ModuleType("fla.ops.fake")
        mod.intra = _Heuristics(self.intra)
        mod.plain = self.plain
        mod.alias = self.intra  # the same tuner twice counts once
        fake = {
            "triton": types.ModuleType("triton"),
            "triton.runtime": types.ModuleType("triton.runtime"),
            "triton.runtime.autotuner": types.SimpleNamespace(Autotuner=_Autotuner),
            "fla.ops.utils.cache": types.SimpleNamespace(AutotuneKey=_Key, CachedAutotuner=_Cached),
            "fla.ops.fake": mod,
        }
        self.patch = mock.patch.dict(sys.modules, fake)
        self.patch.start()

    def tearDown(self):
        self.patch.stop()
        self.tmp.cleanup()

    def test_files_fla_can_read(self):
        d = self.tmp.name
        self.assertEqual(fla_tune.export(d, {"gpu": "H200", "tuned_on": "w1"}), {"intra_kernel": 1})
        doc = json.load(open(os.path.join(d, "intra_kernel.json")))
        entry = doc["autotune_entries"][_Key.key_hash(list(self.k1))]
        self.assertEqual(entry["autotune_key"], list(self.k1))
        self.assertEqual(entry["config"], {"kwargs": {"BK": 64}, "num_warps": 4, "num_stages": 2,
                                           "num_ctas": 1, "maxnreg": None})
        self.assertEqual((doc["gpu"], entry["tuned_on"]), ("H200", "w1"))
        self.assertEqual(json.load(open(os.path.join(d, "_not_loadable.json"))), {"h_split_kernel": 1})

    def test_merge_keeps_first_tuning(self):
        d = self.tmp.name
        fla_tune.export(d, {"tuned_on": "w1"})
        self.intra.cache[self.k1] = _config(BK=32)
        self.intra.cache[(16, 128, True, "torch.bfloat16")] = _config(BK=32)
        self.assertEqual(fla_tune.export(d, {"tuned_on": "w2"}), {"intra_kernel": 2})
        doc = json.load(open(os.path.join(d, "intra_kernel.json")))
        self.assertEqual(doc["autotune_entries"][_Key.key_hash(list(self.k1))]["tuned_on"], "w1")

    def test_coverage(self):
        d = self.tmp.name
        fla_tune.export(d, {})
        self.intra.cache[(16, 128, True, "torch.bfloat16")] = _config(BK=32)
        with mock.patch.dict(os.environ, {"FLA_CACHE_MODE": "strict", "FLA_CONFIG_DIR": d}):
            cov = fla_tune.coverage()
        self.assertEqual((cov["keys"], cov["from_files"]), (3, 1))
        self.assertEqual(sorted(cov["tuned_in_run"]), ["h_split_kernel", "intra_kernel"])
        self.intra.cache[self.k1] = _config(BK=32)  # fla rejected the file's config and tuned
        with mock.patch.dict(os.environ, {"FLA_CACHE_MODE": "strict", "FLA_CONFIG_DIR": d}):
            self.assertEqual(fla_tune.coverage()["from_files"], 0)
        with mock.patch.dict(os.environ, {"FLA_CACHE_MODE": "disabled", "FLA_CONFIG_DIR": d}):
            self.assertEqual(fla_tune.coverage()["from_files"], 0)


if __name__ == "__main__":
    unittest.main()
