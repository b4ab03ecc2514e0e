#!/usr/bin/env bash
# ctest host.trace_*: compile SPEC for the host, run it through loom-run
# with --trace and the given loom-run arguments, then check the trace and
# the RESULT line (check-trace.py). Usage:
#   run-trace.sh LOOMC LOOM_RUN SPEC DIR "CHECK_ARGS" "LOOMC_ARGS" RUN_ARGS...
set -euo pipefail
loomc=$1 run=$2 spec=$3 dir=$4 check_args=$5 loomc_args=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
name=$(basename "$spec" .yaml)
rm -rf "$dir" && mkdir -p "$dir"
# shellcheck disable=SC2086
"$loomc" "$spec" --target=host --emit=artifact -o "$dir" $loomc_args
"$run" "$spec" "$dir/$name.host.so" --trace "$dir/trace.json" "$@" \
  >"$dir/run.txt" || { cat "$dir/run.txt"; exit 1; }
cat "$dir/run.txt"
# shellcheck disable=SC2086
python3 "$here/check-trace.py" "$dir/trace.json" "$dir/$name.host.json" \
  "$dir/run.txt" $check_args
