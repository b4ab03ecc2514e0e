"""Two synthetic runs compared: within noise, and each way of not being so."""

import copy
import unittest

from bench.matrix import compare as C


def _t(us, spread=0.02):
    return {"time_us": us, "p10_us": us * (1 - spread / 2), "p90_us": us * (1 + spread / 2)}


def _row(key, loom_us, base_us, status="pass", agrees=True):
    return {"family": "mla_decode", "key": key, "status": status, "loom": _t(loom_us),
            "baselines": {"fi": dict(_t(base_us), speedup=base_us / loom_us, agrees=agrees)}}


def _run(rows):
    return {"rows": rows, "families": {}}


class Compare(unittest.TestCase):
    def setUp(self):
        self.old = _run([_row(f"mla_decode/r{i}", 100.0 + i, 50.0 + i) for i in range(20)])

    def test_identical_runs_agree(self):
        res = C.compare(self.old, copy.deepcopy(self.old))
        self.assertTrue(res["agree"])
        self.assertEqual(res["families"]["mla_decode"]["impl"]["loom"]["within"], 20)
        self.assertAlmostEqual(res["families"]["mla_decode"]["geomean_speedup"]["fi"]["change"], 0.0)

    def test_small_drift_agrees(self):
        new = copy.deepcopy(self.old)
        for r in new["rows"]:
            r["loom"]["time_us"] *= 1.03
            r["baselines"]["fi"]["speedup"] /= 1.03
        self.assertTrue(C.compare(self.old, new)["agree"])

    def test_one_slow_row_is_listed_but_the_runs_still_agree(self):
        new = copy.deepcopy(self.old)
        new["rows"][0]["loom"]["time_us"] *= 1.5
        res = C.compare(self.old, new)
        self.assertEqual([o["key"] for o in res["rows_outside"]], ["mla_decode/r0"])
        self.assertTrue(res["agree"])  # 19/20 rows within, geomean moved about 2 %

    def test_a_slower_loom_everywhere_disagrees(self):
        new = copy.deepcopy(self.old)
        for r in new["rows"]:
            r["loom"]["time_us"] *= 1.2
            r["baselines"]["fi"]["speedup"] /= 1.2
        res = C.compare(self.old, new)
        self.assertFalse(res["agree"])
        self.assertEqual(len(res["rows_outside"]), 20)
        self.assertIn("NOT within noise", C.markdown(res, "a", "b"))

    def test_noisy_rows_get_a_wider_band(self):
        old = _run([dict(_row("mla_decode/n", 100.0, 50.0), loom=_t(100.0, spread=0.3))])
        new = copy.deepcopy(old)
        new["rows"][0]["loom"]["time_us"] = 140.0  # 40 % off, band 2 x 30 %
        self.assertEqual(C.compare(old, new)["families"]["mla_decode"]["impl"]["loom"]["within"], 1)

    def test_a_check_that_flips_disagrees(self):
        new = copy.deepcopy(self.old)
        new["rows"][3]["status"] = "fail"
        res = C.compare(self.old, new)
        self.assertFalse(res["agree"])
        self.assertEqual(res["status_changes"], ["mla_decode/r3: pass -> fail"])

    def test_rows_timed_in_one_run_only_are_counted_not_compared(self):
        new = copy.deepcopy(self.old)
        new["rows"].append(_row("mla_decode/extra", 10.0, 5.0))
        del new["rows"][0]["baselines"]["fi"]["time_us"]
        res = C.compare(self.old, new)
        self.assertEqual(res["families"]["mla_decode"]["rows"], 20)
        self.assertEqual(res["families"]["mla_decode"]["timed_in_one_run_only"], 1)
        self.assertEqual(res["families"]["mla_decode"]["geomean_speedup"]["fi"]["rows"], 19)

    def test_baselines_that_do_not_agree_stay_out_of_the_geomean(self):
        new = copy.deepcopy(self.old)
        new["rows"][5]["baselines"]["fi"]["agrees"] = False
        self.assertEqual(C.compare(self.old, new)["families"]["mla_decode"]["geomean_speedup"]["fi"]["rows"], 19)


if __name__ == "__main__":
    unittest.main()
