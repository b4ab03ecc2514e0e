"""Fixtures of the loom package's tests: small MLA decode programs built for
the host by loomc in this session, and a host device.

LOOMC names loomc (ctest sets it); default build/bin/loomc. Without it the
tests that need a program fail: they are the point of the suite.
"""

import os
import subprocess

import pytest

import loom

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The MLA shape of the tests: small enough that a program builds in about a
# second and the fp64 reference is instant, large enough for several pages
# per request and several workers' tasks.
MLA = dict(num_heads=4, head_dim_ckv=64, head_dim_kpe=16, page_size=4,
           sm_scale=0.125, max_batch=4, max_pages=32)


def mla_spec(name: str, dtype: str) -> str:
    body = "".join(f"  {k}: {v}\n" for k, v in MLA.items())
    return f"# Test-only (tests/python/conftest.py).\nname: {name}\nmla_decode:\n{body}  dtype: {dtype}\n"


@pytest.fixture(scope="session")
def loomc():
    path = os.environ.get("LOOMC") or os.path.join(ROOT, "build", "bin", "loomc")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no loomc at {path}: build it (scripts/setup) or set LOOMC")
    return path


@pytest.fixture(scope="session")
def build_program(loomc, tmp_path_factory):
    """build_program(dtype) -> path of a host .so of the test MLA spec."""
    built = {}

    def build(dtype: str) -> str:
        if dtype not in built:
            name = f"py_mla_{dtype}"
            out = tmp_path_factory.mktemp(name)
            spec = out / f"{name}.yaml"
            spec.write_text(mla_spec(name, dtype))
            r = subprocess.run([loomc, str(spec), "--target=host", "--emit=artifact", "-o", str(out)],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"loomc failed on {spec}:\n{r.stdout}\n{r.stderr}"
            built[dtype] = str(out / f"{name}.host.so")
        return built[dtype]

    return build


@pytest.fixture(scope="session")
def device():
    with loom.Device("host") as dev:
        yield dev


@pytest.fixture
def program(device, build_program):
    """A fresh f32 program per test (a failed launch would poison a shared one)."""
    with device.load(build_program("f32")) as prog:
        yield prog
