"""Loom's row entry (context.finish_loom / close_row): the queued launch's
time is primary, baselines timed with their host work compare with Loom as
issued."""

import tempfile
import unittest

from bench.matrix import context as C
from bench.matrix.workloads import Workload


def _t(us):
    return {"time_us": us, "p10_us": us, "p90_us": us, "min_us": us, "reps": 5}


class FinishLoom(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.ctx = C.Context(device="cuda", loom_kind="cuda", target="h200",
                             artifacts_dir=self.dir.name, out_dir=self.dir.name, seed=1,
                             timer=None, copy_gbps=4000.0, baselines={})

    def tearDown(self):
        self.dir.cleanup()

    def row(self):
        w = Workload(family="mla_decode", key="mla_decode/x/0", name="x", set="x", index=0,
                     lengths=[8], source="t:1")
        return self.ctx.new_row(w, None)

    def test_queued_is_primary(self):
        r = self.row()
        self.ctx.finish_loom(r, dict(_t(30.0), queued=_t(20.0)), {"ok": True, "metrics": {}})
        self.ctx.finish_baseline(r, "flashinfer_kernel", "k", _t(10.0), None)
        self.ctx.finish_baseline(r, "flashinfer_with_plan", "p", _t(60.0), None)
        self.ctx.close_row(r, 0.0)
        self.assertEqual(r["loom"]["launch"], "queued")
        self.assertEqual(r["loom"]["time_us"], 20.0)
        self.assertEqual(r["loom"]["as_issued"]["time_us"], 30.0)
        self.assertAlmostEqual(r["baselines"]["flashinfer_kernel"]["speedup"], 0.5)
        self.assertAlmostEqual(r["baselines"]["flashinfer_with_plan"]["speedup"], 2.0)

    def test_as_issued_when_it_cannot_queue(self):
        r = self.row()
        self.ctx.finish_loom(r, dict(_t(30.0), queued={"error": "no wait-value"}),
                             {"ok": True, "metrics": {}})
        self.ctx.finish_baseline(r, "flashinfer_kernel", "k", _t(15.0), None)
        self.ctx.close_row(r, 0.0)
        self.assertEqual(r["loom"]["launch"], "as issued")
        self.assertEqual(r["loom"]["time_us"], 30.0)
        self.assertEqual(r["loom"]["queued"], {"error": "no wait-value"})
        self.assertAlmostEqual(r["baselines"]["flashinfer_kernel"]["speedup"], 0.5)


if __name__ == "__main__":
    unittest.main()
