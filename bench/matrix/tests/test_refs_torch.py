"""The torch references (refs.py) against their definitions; skipped where
torch is not installed (CI), run on any machine that has it (CPU is enough)."""

import math
import unittest

try:
    import torch
except ImportError:  # pragma: no cover - CI has no torch
    torch = None


@unittest.skipIf(torch is None, "torch is not installed here (the GPU machine has it)")
class Refs(unittest.TestCase):
    def test_kda_chunked_equals_recurrence(self):
        from bench.matrix import refs
        g = torch.Generator().manual_seed(0)
        for gate in ("unbounded", "bounded"):
            for lens, chunk in (([1, 63, 64, 65, 130], 16), ([200], 64), ([3, 9], 64)):
                T, H, K, V = sum(lens), 3, 16, 8
                cu = [0]
                for n in lens:
                    cu.append(cu[-1] + n)
                q, k, gr = (torch.randn(T, H, K, generator=g).bfloat16() for _ in range(3))
                v = torch.randn(T, H, V, generator=g).bfloat16()
                beta = (2 * torch.randn(T, H, generator=g)).bfloat16()
                a_log = 0.01 + torch.rand(H, generator=g) * (math.log(16) - 0.01)
                dt = -5 + 7 * torch.rand(H, K, generator=g)  # includes strong decay
                h0 = torch.randn(len(lens), H, K, V, generator=g)
                o1, s1 = refs.kda_prefill(q, k, v, gr, beta, a_log, dt, cu, h0, gate, -5.0, K ** -0.5,
                                          chunk=chunk, max_batch_heads=4)
                o2, s2 = refs.kda_recurrent(q, k, v, gr, beta, a_log, dt, cu, h0, gate, -5.0, K ** -0.5)
                self.assertLess(((o1 - o2).norm() / o2.norm()).item(), 1e-12, (gate, lens))
                self.assertLess(((s1 - s2).norm() / s2.norm()).item(), 1e-12, (gate, lens))

    def test_mla_reference_by_loops(self):
        from bench.matrix import refs
        g = torch.Generator().manual_seed(1)
        B, H, Dc, Dp, P, pool = 3, 2, 16, 8, 4, 20
        ckv = torch.randn(pool, P, Dc, generator=g).bfloat16()
        kpe = torch.randn(pool, P, Dp, generator=g).bfloat16()
        qn = torch.randn(B, H, Dc, generator=g).bfloat16()
        qp = torch.randn(B, H, Dp, generator=g).bfloat16()
        lens, indptr = [5, 0, 9], [0, 2, 2, 5]
        indices = torch.tensor([7, 3, 11, 0, 19], dtype=torch.int32)
        o, lse = refs.mla_decode(qn, qp, ckv, kpe, indptr, indices, lens, 0.3)
        self.assertTrue(torch.all(o[1] == 0) and torch.all(torch.isinf(lse[1])))
        for b in (0, 2):
            rows = [(int(indices[indptr[b] + t // P]), t % P) for t in range(lens[b])]
            for h in range(H):
                s = [0.3 * (qn[b, h].double() @ ckv[p, r].double() + qp[b, h].double() @ kpe[p, r].double())
                     for p, r in rows]
                m = max(s)
                w = [math.exp(x - m) for x in s]
                ref = sum(wi * ckv[p, r].double() for wi, (p, r) in zip(w, rows)) / sum(w)
                self.assertLess((o[b, h] - ref).abs().max().item(), 1e-12)
                self.assertAlmostEqual(lse[b, h].item(), (m + math.log(sum(w))) / math.log(2), places=10)

    def test_rope_neox(self):
        from bench.matrix import refs
        x = torch.randn(2, 3, 8, dtype=torch.float64)
        pos = torch.tensor([0, 5])
        y = refs.rope_neox(x, pos, 10000.0)
        self.assertTrue(torch.allclose(y[0], x[0]))  # position 0: identity
        f = 5 * 10000.0 ** (-2 * 1 / 8)              # pair i = 1 of the halves
        self.assertAlmostEqual(y[1, 0, 1].item(), x[1, 0, 1].item() * math.cos(f) - x[1, 0, 5].item() * math.sin(f))
        self.assertAlmostEqual(y[1, 0, 5].item(), x[1, 0, 5].item() * math.cos(f) + x[1, 0, 1].item() * math.sin(f))

    def test_llama31_inv_freq_by_definition(self):
        from bench.matrix import refs
        sc = {"factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
              "original_max_position_embeddings": 8192}
        got = refs.rope_inv_freq(128, 500000.0, sc)
        kept = divided = blended = 0
        for i in range(64):
            inv = 500000.0 ** (-2.0 * i / 128)
            wavelen = 2 * math.pi / inv
            if wavelen < 8192 / 4:
                want, kept = inv, kept + 1
            elif wavelen > 8192 / 1:
                want, divided = inv / 8, divided + 1
            else:
                smooth = (8192 / wavelen - 1) / (4 - 1)
                want, blended = (1 - smooth) * inv / 8 + smooth * inv, blended + 1
            self.assertAlmostEqual(got[i].item() / want, 1.0, places=12)
        self.assertTrue(kept and divided and blended)  # every branch is exercised
        plain = 500000.0 ** (-2.0 * torch.arange(64, dtype=torch.float64) / 128)
        self.assertTrue(torch.allclose(refs.rope_inv_freq(128, 500000.0, None), plain,
                                       rtol=1e-14, atol=0))


if __name__ == "__main__":
    unittest.main()
