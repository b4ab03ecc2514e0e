"""The installed `loom` package against real host programs.

Builds the MLA decode spec of conftest.py for the host (f32 and bf16), binds
random non-zero numpy inputs, poisons the outputs with NaN, runs, and checks
o and lse against mla_reference.py's fp64 numpy reference. Then the errors:
each binding mistake is refused with a LoomError that says what to pass.
"""

import gc
import os
import weakref

import numpy as np
import pytest

import loom
from conftest import MLA
from mla_reference import from_bf16, mla_decode, page_table, scaled_error, to_bf16

H, DC, DP, P = MLA["num_heads"], MLA["head_dim_ckv"], MLA["head_dim_kpe"], MLA["page_size"]
POOL, MAX_B, SM_SCALE = MLA["max_pages"], MLA["max_batch"], MLA["sm_scale"]
# Tolerances as |d| <= atol + rtol |ref|: bf16 as tools/check (its output
# is rounded to 8 bits); f32 a hundred times tighter.
TOL = {"f32": dict(o=(1e-4, 1e-4), lse=(1e-5, 1e-5)),
       "bf16": dict(o=(1e-2, 1e-2), lse=(1e-3, 1e-4))}


def make_inputs(lens, dtype, rng):
    """Random non-zero inputs for one launch, as numpy arrays of the buffers'
    dtypes, with NaN in every cache slot no request should read."""
    B = len(lens)
    indptr, indices, kv_lens = page_table(lens, P, POOL, rng)
    q_nope = (0.5 * rng.standard_normal((B, H, DC)) + 0.1).astype(np.float32)
    q_pe = (0.5 * rng.standard_normal((B, H, DP)) + 0.1).astype(np.float32)
    ckv = rng.standard_normal((POOL, P, DC)).astype(np.float32)
    kpe = rng.standard_normal((POOL, P, DP)).astype(np.float32)
    used = np.zeros((POOL, P), dtype=bool)
    for b, n in enumerate(lens):
        t = np.arange(n)
        used[indices[indptr[b] + t // P], t % P] = True
    ckv[~used] = np.nan
    kpe[~used] = np.nan
    conv = to_bf16 if dtype == "bf16" else (lambda x: x)
    arrays = dict(q_nope=conv(q_nope), q_pe=conv(q_pe), ckv_cache=conv(ckv), kpe_cache=conv(kpe),
                  kv_indptr=indptr, kv_indices=indices, kv_lens=kv_lens)
    if dtype == "bf16":
        arrays["o"] = np.full((B, H, DC), 0x7FC0, dtype=np.uint16)  # bf16 NaN
    else:
        arrays["o"] = np.full((B, H, DC), np.nan, dtype=np.float32)
    arrays["lse"] = np.full((B, H), np.nan, dtype=np.float32)
    return arrays


def as_f32(a, dtype):
    return from_bf16(a) if dtype == "bf16" else a


def reference(arrays, dtype):
    f = lambda name: as_f32(arrays[name], dtype)  # noqa: E731
    return mla_decode(f("q_nope"), f("q_pe"), f("ckv_cache"), f("kpe_cache"), arrays["kv_indptr"],
                      arrays["kv_indices"], arrays["kv_lens"], SM_SCALE)


def bind_all(prog, arrays, skip=()):
    for name, a in arrays.items():
        if name not in skip:
            prog.bind(name, a)


# --- The package itself ---------------------------------------------------------


def test_library_is_the_packages_own():
    assert loom.runtime_version() == "0.1"
    if os.environ.get("LOOMRT_LIB"):
        assert loom.runtime_path() == os.environ["LOOMRT_LIB"]
    else:
        pkg = os.path.dirname(os.path.abspath(loom.__file__))
        assert loom.runtime_path() == os.path.join(pkg, "lib", "libloomrt.so")
        assert os.path.isfile(loom.runtime_path())
    if os.environ.get("LOOM_EXPECT_INSTALLED"):  # ctest: the wheel, not the source tree
        assert "site-packages" in loom.__file__, loom.__file__


def test_host_device(device):
    assert loom.device_count("host") == 1
    assert device.kind == "host" and device.ordinal == 0
    assert device.describe() == "host device 0"


def test_buffers_describe_the_program(program):
    assert program.name == "py_mla_f32" and program.target == "host"
    by = {b.name: b for b in program.buffers}
    assert [b.name for b in program.buffers] == [
        "q_nope", "q_pe", "ckv_cache", "kpe_cache", "kv_indptr", "kv_indices", "kv_lens", "o", "lse"]
    assert [b.index for b in program.buffers] == list(range(9))
    q = by["q_nope"]
    assert (q.role, q.dtype, q.dims, q.bound) == ("input", "f32", (-1, H, DC), MAX_B)
    assert q.dynamic and q.max_dims == (MAX_B, H, DC)
    c = by["ckv_cache"]
    assert (c.role, c.dtype, c.dims, c.bound, c.dynamic) == ("cache", "f32", (POOL, P, DC), 0, False)
    assert (by["kv_indptr"].role, by["kv_indptr"].dtype, by["kv_indptr"].dims,
            by["kv_indptr"].bound) == ("meta", "i32", (-1,), MAX_B + 1)
    assert (by["lse"].role, by["lse"].dims) == ("output", (-1, H))
    assert str(q) == "input q_nope: f32[?<=4, 4, 64]"
    assert program.buffer("o") is by["o"]


# --- Results against the fp64 reference ---------------------------------------------


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_mla_matches_fp64_reference(device, build_program, dtype):
    rng = np.random.default_rng(20261202)
    tol = TOL[dtype]
    with device.load(build_program(dtype)) as prog:
        assert prog.buffer("q_nope").dtype == dtype
        # An empty request, one token, partial last pages, every page of the
        # pool's worth; then another batch size on the same program.
        for launch, lens in enumerate([[0, 1, 7, 13], [16, 5, 30]], start=1):
            arrays = make_inputs(lens, dtype, rng)
            inputs = {k: v.copy() for k, v in arrays.items() if k not in ("o", "lse")}
            bind_all(prog, arrays)
            prog.run()
            assert prog.epoch() == launch
            assert prog.last_launch_ns() > 0

            ref_o, ref_lse = reference(arrays, dtype)
            o = as_f32(arrays["o"], dtype).astype(np.float64)
            lse = arrays["lse"].astype(np.float64)
            assert np.isfinite(o).all(), "an output element was not written (still NaN)"
            err_o = scaled_error(o, ref_o, *tol["o"])
            assert err_o <= 1.0, f"o: max |d|/(atol+rtol|ref|) = {err_o}"
            full = np.asarray(lens) > 0
            err_lse = scaled_error(lse[full], ref_lse[full], *tol["lse"])
            assert err_lse <= 1.0, f"lse: max |d|/(atol+rtol|ref|) = {err_lse}"
            assert (o[~full] == 0).all() and np.isneginf(lse[~full]).all(), "empty requests"
            # The checks can fail: a wrong scale or a wrong page table is caught.
            wrong_o, wrong_lse = mla_decode(
                *(as_f32(arrays[k], dtype) for k in ("q_nope", "q_pe", "ckv_cache", "kpe_cache")),
                arrays["kv_indptr"], arrays["kv_indices"], arrays["kv_lens"], 1.5 * SM_SCALE)
            assert scaled_error(o, wrong_o, *tol["o"]) > 1.0
            assert scaled_error(lse[full], wrong_lse[full], *tol["lse"]) > 1.0
            # Nothing but the outputs was written.
            for name, before in inputs.items():
                np.testing.assert_array_equal(arrays[name], before, err_msg=name)


def test_launch_and_synchronize_apart(program):
    arrays = make_inputs([3, 9], "f32", np.random.default_rng(7))
    bind_all(program, arrays)
    program.launch()
    program.synchronize()
    program.synchronize()  # nothing in flight: success
    ref_o, _ = reference(arrays, "f32")
    assert scaled_error(arrays["o"], ref_o, *TOL["f32"]["o"]) <= 1.0


def test_bound_arrays_are_kept_alive(device, build_program):
    prog = device.load(build_program("f32"))
    arrays = make_inputs([2], "f32", np.random.default_rng(3))
    bind_all(prog, arrays)
    q = weakref.ref(arrays["q_nope"])
    del arrays
    gc.collect()
    assert q() is not None, "a bound array was freed while the program can still read it"
    assert set(prog.bound) == {b.name for b in prog.buffers}
    prog.run()
    prog.close()
    gc.collect()
    assert q() is None, "close() should release the bound arrays"


def test_stream_launches(program):
    """Queued launches are CUDA's: the host backend refuses them with the
    runtime's reason, the stream argument is checked before the call, and
    check() is a success while nothing was queued."""
    bind_all(program, make_inputs([2], "f32", np.random.default_rng(5)))
    program.check()
    with raises(loom.Status.UNSUPPORTED) as e:
        program.launch_on_stream(0)
    assert e.error.call == "loomrt_launch_on_stream" and e.error.message
    with raises(loom.Status.INVALID_ARGUMENT, "stream must be", "str"):
        program.launch_on_stream("default")
    with raises(loom.Status.INVALID_ARGUMENT, "stream must be", "bool"):
        program.launch_on_stream(True)
    program.check()
    program.run()  # the program is still usable


# --- Errors -----------------------------------------------------------------------


class raises:
    """with raises(Status.X, words...): the block raises a LoomError of that
    status whose text has every word; `as e` gives the LoomError."""

    def __init__(self, status, *words):
        self.status, self.words = status, words
        self.error = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if value is None:
            pytest.fail(f"no LoomError raised (expected {self.status.c_name})")
        if not isinstance(value, loom.LoomError):
            return False  # let it propagate
        assert value.status == self.status and value.status_name == self.status.c_name, str(value)
        for w in self.words:
            assert w in str(value), f"{w!r} not in: {value}"
        self.error = value
        return True


def test_wrong_dtype(program):
    with raises(loom.Status.BINDING, "q_nope", "numpy float64", "numpy.float32"):
        program.bind("q_nope", np.ones((2, H, DC)))
    with raises(loom.Status.BINDING, "kv_lens", "numpy int64", "numpy.int32"):
        program.bind("kv_lens", np.ones(2, dtype=np.int64))
    with raises(loom.Status.BINDING, "non-native byte order"):
        program.bind("q_nope", np.ones((2, H, DC), dtype=">f4"))


def test_wrong_dtype_bf16(device, build_program):
    with device.load(build_program("bf16")) as prog:
        with raises(loom.Status.BINDING, "numpy float32", "bf16"):
            prog.bind("q_nope", np.ones((2, H, DC), dtype=np.float32))
        with raises(loom.Status.BINDING, "numpy float16"):
            prog.bind("q_nope", np.ones((2, H, DC), dtype=np.float16))
        prog.bind("q_nope", np.ones((2, H, DC), dtype=np.uint16))  # bf16 bits


def test_wrong_shape(program):
    with raises(loom.Status.BINDING, "rank 2", "rank 3"):
        program.bind("q_nope", np.ones((2, H * DC), dtype=np.float32))
    with raises(loom.Status.BINDING, "dim 2 is 32", "declared 64"):
        program.bind("q_nope", np.ones((2, H, 32), dtype=np.float32))
    with raises(loom.Status.BINDING, "dim 0 is 31", "declared 32"):
        program.bind("ckv_cache", np.ones((POOL - 1, P, DC), dtype=np.float32))
    with raises(loom.Status.BINDING, "dim 0 is 5", "above its bound 4"):
        program.bind("q_nope", np.ones((MAX_B + 1, H, DC), dtype=np.float32))
    program.bind("q_nope", np.ones((MAX_B, H, DC), dtype=np.float32))  # at the bound: fine


def test_unknown_buffer(program):
    with raises(loom.Status.NOT_FOUND, "q_nopee", "it has q_nope, q_pe"):
        program.bind("q_nopee", np.ones((2, H, DC), dtype=np.float32))
    with raises(loom.Status.NOT_FOUND, "'x'"):
        program.buffer("x")


def test_non_contiguous(program):
    base = np.ones((2, H, 2 * DC), dtype=np.float32)
    with raises(loom.Status.BINDING, "not C-contiguous", "strides (512, 128, 2)",
                "strides (256, 64, 1)", "numpy.ascontiguousarray"):
        program.bind("q_nope", base[:, :, ::2])
    with raises(loom.Status.BINDING, "not C-contiguous", "copy the results back"):
        program.bind("o", np.ones((DC, H, 2), dtype=np.float32).T)  # Fortran order
    program.bind("q_nope", np.ascontiguousarray(base[:, :, ::2]))


def test_read_only_output_and_not_an_array(program):
    o = np.ones((2, H, DC), dtype=np.float32)
    o.flags.writeable = False
    with raises(loom.Status.BINDING, "read-only"):
        program.bind("o", o)
    with raises(loom.Status.INVALID_ARGUMENT, "expected a numpy.ndarray or a torch.Tensor", "list"):
        program.bind("kv_lens", [1, 2])


def test_launch_with_a_buffer_unbound(program):
    bind_all(program, make_inputs([3, 4], "f32", np.random.default_rng(5)), skip=("lse",))
    with raises(loom.Status.NOT_BOUND, "loomrt_launch", "'lse'") as r:
        program.run()
    assert "'q_nope'" not in r.error.message  # only what is missing


def test_runtime_errors_carry_its_message(device, build_program, tmp_path):
    with raises(loom.Status.LOAD_FAILED, "loomrt_program_load", "missing.so"):
        device.load(tmp_path / "missing.so")
    with raises(loom.Status.UNKNOWN_DEVICE, "loomrt_device_create", "abacus"):
        loom.Device("abacus")
    prog = device.load(build_program("f32"))
    with raises(loom.Status.BUSY, "loomrt_device_destroy", "still loaded"):
        device.close()
    prog.close()
    prog.close()  # twice: nothing
    with raises(loom.Status.INVALID_ARGUMENT, "closed"):
        prog.run()


def test_context_managers_close():
    with loom.Device("host") as dev:
        pass
    assert dev.closed


# --- torch (only where it is installed) -------------------------------------------


def test_torch_cpu_tensors(program):
    torch = pytest.importorskip("torch")
    arrays = make_inputs([6, 1], "f32", np.random.default_rng(11))
    tensors = {k: torch.from_numpy(v) for k, v in arrays.items()}  # shares the memory
    for name, t in tensors.items():
        program.bind(name, t)
    program.run()
    ref_o, _ = reference(arrays, "f32")
    assert scaled_error(tensors["o"].numpy(), ref_o, *TOL["f32"]["o"]) <= 1.0
    with raises(loom.Status.BINDING, "torch.float64", "torch.float32"):
        program.bind("q_nope", torch.ones((2, H, DC), dtype=torch.float64))
    with raises(loom.Status.BINDING, "not C-contiguous", "x.contiguous()"):
        program.bind("q_nope", torch.ones((2, H, 2 * DC))[:, :, ::2])
