#!/bin/sh
# A loom-opt that crashes on every input: fuzz.ir_sees_crashes checks that
# mutate_ir.py fails the run when the tool dies by a signal.
cat >/dev/null
kill -SEGV $$
