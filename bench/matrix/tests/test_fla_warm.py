"""The fla warm-up's plan: every KDA row's shape and gate warmed exactly once."""

import unittest

from bench.matrix import fla_warm
from bench.matrix.specs import KDA_GATES, kda_groups
from bench.matrix.workloads import load_all


class Plan(unittest.TestCase):
    def setUp(self):
        self.kda = load_all()["kda_prefill"]
        self.plan = fla_warm.plan(self.kda)

    def test_every_workload_and_gate_once(self):
        warmed = sorted((k, p["gate"]) for p in self.plan for k in p["keys"])
        self.assertEqual(warmed, sorted((w.key, g) for w in self.kda for g in KDA_GATES))

    def test_processes_stay_small_and_one_group_each(self):
        groups = {art.key: {w.key for w in ws} for art, _, ws in kda_groups(self.kda)}
        for p in self.plan:
            self.assertLessEqual(len(p["keys"]), fla_warm.MAX_PER_PROCESS)
            self.assertTrue(any(set(p["keys"]) <= keys for keys in groups.values()), p["name"])
        self.assertEqual(len({p["name"] for p in self.plan}), len(self.plan))

    def test_most_work_first(self):
        work = [p["work"] for p in self.plan]
        self.assertEqual(work, sorted(work, reverse=True))


if __name__ == "__main__":
    unittest.main()
