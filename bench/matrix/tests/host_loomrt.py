"""loomrt.py against a real Loom program on the host backend, with numpy
arrays (the host backend takes ordinary pointers, as "cuda" takes torch's).

Needs LOOMC (the loomc binary) and LOOMRT_LIB (libloomrt.so); ctest sets both
(bench/matrix/CMakeLists.txt). Compiles the test-only MLA spec
tests/data/configs/mla_decode/tiny_mla_ps64.yaml for the host, runs it on a
page table from workloads.make_page_table with NaN in the unused page tails,
and compares o and lse with an fp64 numpy reference (the tolerances of
tools/check). Also the errors: each names the call and carries
loomrt_last_error().
"""

import math
import os
import subprocess
import tempfile
import unittest

import numpy as np

from bench.matrix import loomrt
from bench.matrix import specs as S
from bench.matrix import workloads as W

SPEC = os.path.join(S.ROOT, "bench", "matrix", "tests", "data", "configs", "mla_decode", "tiny_mla_ps64.yaml")


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits (uint16), round to nearest even; NaN stays NaN."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r)


def from_bf16(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)


def mla_reference(qn, qp, ckv, kpe, table, sm_scale):
    B, H, Dc = qn.shape
    o = np.zeros((B, H, Dc))
    lse = np.full((B, H), -np.inf)
    for b in range(B):
        n = int(table.lens[b])
        if n == 0:
            continue
        pages = table.indices[table.indptr[b]:table.indptr[b + 1]]
        kc = ckv[pages].reshape(-1, Dc)[:n].astype(np.float64)
        kp = kpe[pages].reshape(-1, kpe.shape[-1])[:n].astype(np.float64)
        s = sm_scale * (qn[b].astype(np.float64) @ kc.T + qp[b].astype(np.float64) @ kp.T)
        m = s.max(axis=1, keepdims=True)
        p = np.exp(s - m)
        o[b] = p @ kc / p.sum(axis=1, keepdims=True)
        lse[b] = (m[:, 0] + np.log(p.sum(axis=1))) / math.log(2.0)
    return o, lse


class HostProgram(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        loomc = os.environ.get("LOOMC") or os.path.join(S.ROOT, "build", "bin", "loomc")
        if not os.path.exists(loomc):
            raise unittest.SkipTest(f"no loomc at {loomc} (set LOOMC)")
        cls.tmp = tempfile.TemporaryDirectory()
        subprocess.run([loomc, SPEC, "--target=host", "--emit=artifact", "-o", cls.tmp.name],
                       check=True, capture_output=True, text=True)
        cls.so = os.path.join(cls.tmp.name, "tiny_mla_ps64.host.so")
        cls.rt = loomrt.Runtime()
        cls.dev = cls.rt.device("host")
        cls.spec = S.load_spec(SPEC)

    @classmethod
    def tearDownClass(cls):
        cls.dev.close()
        cls.tmp.cleanup()

    def test_mla_matches_reference(self):
        sh = self.spec.shape
        H, Dc, Dp, P, pool = 16, 512, 64, sh["page_size"], sh["max_pages"]
        prog = self.dev.load(self.so)
        self.assertEqual(prog.buffers["q_nope"].dims, [-1, H, Dc])
        self.assertEqual(prog.buffers["ckv_cache"].role, "cache")
        self.assertEqual(prog.buffers["lse"].elem, "f32")
        rng = np.random.default_rng(1234)
        for launch, lengths in enumerate([[1000, 63, 1, 130], [64, 2000]]):
            t = W.make_page_table(lengths, P, pool, 0.5, rng)
            B = len(lengths)
            ckv = rng.standard_normal((pool, P, Dc)).astype(np.float32)
            kpe = rng.standard_normal((pool, P, Dp)).astype(np.float32)
            last = t.last_page_len()
            for b in range(B):  # NaN in the unused tail of each last page
                ckv[t.indices[t.indptr[b + 1] - 1], last[b]:] = np.nan
                kpe[t.indices[t.indptr[b + 1] - 1], last[b]:] = np.nan
            qn = (0.5 * rng.standard_normal((B, H, Dc))).astype(np.float32)
            qp = (0.5 * rng.standard_normal((B, H, Dp))).astype(np.float32)
            bufs = {"q_nope": to_bf16(qn), "q_pe": to_bf16(qp), "ckv_cache": to_bf16(ckv),
                    "kpe_cache": to_bf16(kpe), "kv_indptr": t.indptr, "kv_indices": t.indices,
                    "kv_lens": t.lens, "o": np.full((B, H, Dc), 0x7FC0, dtype=np.uint16),
                    "lse": np.full((B, H), np.nan, dtype=np.float32)}
            for name, a in bufs.items():
                dims = None if prog.buffers[name].role == "cache" else list(a.shape)
                prog.bind(name, a.ctypes.data, dims)
            ns = prog.run()
            self.assertGreater(ns, 0)
            self.assertEqual(prog.epoch(), launch + 1)
            ref_o, ref_lse = mla_reference(from_bf16(bufs["q_nope"]), from_bf16(bufs["q_pe"]),
                                           from_bf16(bufs["ckv_cache"]), from_bf16(bufs["kpe_cache"]),
                                           t, sh["sm_scale"])
            o = from_bf16(bufs["o"]).astype(np.float64)
            self.assertTrue(np.isfinite(o).all())
            self.assertLessEqual(np.max(np.abs(o - ref_o) / (1e-2 + 1e-2 * np.abs(ref_o))), 1.0)
            lse = bufs["lse"].astype(np.float64)
            self.assertLessEqual(np.max(np.abs(lse - ref_lse) / (1e-3 + 1e-4 * np.abs(ref_lse))), 1.0)
            # A wrong page table must not pass: the check itself can fail.
            self.assertGreater(np.max(np.abs(o[:, :, ::-1] - ref_o)), 1e-2)
        prog.close()

    def test_errors_name_the_call(self):
        prog = self.dev.load(self.so)
        with self.assertRaises(loomrt.LoomrtError) as e:
            prog.bind("q_nopee", 0x1000, [1, 16, 512])
        self.assertIn("q_nope", str(e.exception))
        buf = np.zeros((300, 16, 512), dtype=np.uint16)
        with self.assertRaises(loomrt.LoomrtError) as e:
            prog.bind("q_nope", buf.ctypes.data, [300, 16, 512])  # past max_batch 8
        self.assertEqual(e.exception.status_name, "LOOMRT_ERROR_BINDING")
        self.assertIn("loomrt_program_bind_by_name", str(e.exception))
        self.assertIn("q_nope", e.exception.message)
        with self.assertRaises(loomrt.LoomrtError) as e:
            prog.run()
        self.assertEqual(e.exception.status_name, "LOOMRT_ERROR_NOT_BOUND")
        prog.close()
        with self.assertRaises(loomrt.LoomrtError) as e:
            self.dev.load(os.path.join(self.tmp.name, "missing.so"))
        self.assertEqual(e.exception.status_name, "LOOMRT_ERROR_LOAD_FAILED")
        self.assertIn("missing.so", str(e.exception))
        with self.assertRaises(loomrt.LoomrtError) as e:
            self.rt.device("abacus")
        self.assertEqual(e.exception.status_name, "LOOMRT_ERROR_UNKNOWN_DEVICE")


if __name__ == "__main__":
    unittest.main()
