"""python3 -m bench.matrix.tests [PATTERN] — runs the tests in this folder
(default PATTERN test_*.py: no torch, no GPU; host_*.py: Loom's host
backend through loomrt.py, needs LOOMC and LOOMRT_LIB)."""
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
pattern = sys.argv[1] if len(sys.argv) > 1 else "test_*.py"
suite = unittest.defaultTestLoader.discover(start_dir=here, pattern=pattern, top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
if result.testsRun == 0:
    print(f"no tests matched {pattern}")
    sys.exit(1)
sys.exit(0 if result.wasSuccessful() else 1)
