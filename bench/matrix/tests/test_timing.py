"""Timer.time_fn against a simulated GPU stream (no torch): kernel-only
timing must leave out the host's time between kernels, and must say so when
a call cannot be queued."""

import types
import unittest
from unittest import mock

from bench.matrix import timing


class FakeStream:
    """One in-order stream and a host clock, in microseconds."""

    def __init__(self):
        self.host = 0.0  # the host's clock
        self.free = 0.0  # when the GPU has done everything enqueued

    def kernel(self, gpu_us: float) -> None:
        self.free = max(self.free, self.host) + gpu_us

    def torch(self):
        s = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                self.at = max(s.free, s.host)

            def query(self):
                return self.at <= s.host

            def synchronize(self):
                s.host = max(s.host, self.at)

            def elapsed_time(self, end):
                return (end.at - self.at) / 1e3  # ms

        class Scratch:
            def sum(self):
                s.host += 5
                s.kernel(60)  # the L2 flush

        def synchronize():
            s.host = max(s.host, s.free)

        cuda = types.SimpleNamespace(Event=Event, synchronize=synchronize,
                                     _sleep=lambda cycles: s.kernel(cycles / 1000.0))
        return types.SimpleNamespace(cuda=cuda, float32="f32", ones=lambda *a, **k: Scratch())

    def call(self, host_us: float, gpu_us: float, waits: bool = False):
        def fn():
            self.host += host_us
            if waits:  # e.g. a .item() inside the call
                self.host = max(self.host, self.free)
            self.kernel(gpu_us)
        return fn


class TimeFn(unittest.TestCase):
    def time(self, fn_args, **kw):
        sim = FakeStream()
        with mock.patch.object(timing, "_torch", sim.torch), \
                mock.patch.object(timing.time, "perf_counter", lambda: sim.host / 1e6):
            timer = timing.Timer(device="cuda", flush_bytes=1024, min_reps=20, max_reps=20)
            return timer.time_fn(sim.call(*fn_args), **kw)

    def test_host_bound_call_is_timed_by_its_kernels(self):
        t = self.time((1000.0, 100.0))
        self.assertAlmostEqual(t["time_us"], 100.0, places=3)
        self.assertEqual(t["host_gaps"], 0)
        self.assertEqual(t["reps"], 20)

    def test_host_work_keeps_the_host_time(self):
        t = self.time((1000.0, 100.0), host_work=True)
        # The host's 1000 us, less what the previous call's kernel and the
        # flush, still running when the start event is recorded, hide.
        self.assertGreater(t["time_us"], 900.0)

    def test_gpu_bound_call(self):
        t = self.time((10.0, 500.0))
        self.assertAlmostEqual(t["time_us"], 500.0, places=3)
        self.assertEqual(t["host_gaps"], 0)

    def test_a_call_that_waits_on_the_gpu_is_reported(self):
        t = self.time((1000.0, 100.0, True))
        self.assertEqual(t["host_gaps"], 20)
        self.assertEqual(t["reps"], 20)
        self.assertGreater(t["time_us"], 1000.0)


class FakeProgram:
    """A Loom program on the simulated stream: each launch spends
    `submit_us` of host time after its start event unless queued."""

    def __init__(self, sim, submit_us, kernel_us, can_queue=True, queued_fails=False):
        self.sim, self.submit_us, self.kernel_us = sim, submit_us, kernel_us
        self.can_queue, self.queued, self.calls = can_queue, False, []
        self.queued_fails = queued_fails

    def set_queued_launch(self, queued):
        self.calls.append(queued)
        if queued and not self.can_queue:
            raise RuntimeError("loomrt_program_set_queued_launch(p, 1) failed: LOOMRT_ERROR_UNSUPPORTED")
        self.queued = queued

    def run(self):
        if self.queued and self.queued_fails:
            raise RuntimeError("loomrt_synchronize(p) failed: LOOMRT_ERROR_TIMEOUT")
        self.sim.host += 3.0
        return int(1000 * (self.kernel_us + (0 if self.queued else self.submit_us)))


class TimeLoom(unittest.TestCase):
    def time(self, device="cuda", **kw):
        sim = FakeStream()
        program = FakeProgram(sim, **kw)
        with mock.patch.object(timing, "_torch", sim.torch), \
                mock.patch.object(timing.time, "perf_counter", lambda: sim.host / 1e6):
            timer = timing.Timer(device=device, flush_bytes=1024, min_reps=5, max_reps=5)
            return timer.time_loom(program), program

    def test_queued_is_measured_apart(self):
        t, program = self.time(submit_us=7.0, kernel_us=20.0)
        self.assertAlmostEqual(t["time_us"], 27.0)
        self.assertAlmostEqual(t["queued"]["time_us"], 20.0)
        self.assertEqual(t["queued"]["reps"], 5)
        self.assertEqual(program.calls, [True, False])  # left as it was found

    def test_a_runtime_that_cannot_queue_says_why(self):
        t, program = self.time(submit_us=7.0, kernel_us=20.0, can_queue=False)
        self.assertAlmostEqual(t["time_us"], 27.0)
        self.assertIn("LOOMRT_ERROR_UNSUPPORTED", t["queued"]["error"])
        self.assertFalse(program.queued)

    def test_a_failed_queued_launch_keeps_the_first_time(self):
        t, program = self.time(submit_us=7.0, kernel_us=20.0, queued_fails=True)
        self.assertAlmostEqual(t["time_us"], 27.0)
        self.assertIn("LOOMRT_ERROR_TIMEOUT", t["queued"]["error"])
        self.assertTrue(t["program_failed"])
        self.assertFalse(program.queued)

    def test_no_queued_time_off_the_gpu(self):
        t, program = self.time(device="cpu", submit_us=7.0, kernel_us=20.0)
        self.assertNotIn("queued", t)
        self.assertEqual(program.calls, [])


if __name__ == "__main__":
    unittest.main()
