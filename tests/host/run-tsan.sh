#!/usr/bin/env bash
# Compile SPEC for the host with the flags in LOOM_HOST_CXXFLAGS, then run it
# with the ThreadSanitizer build of loom-run. Usage: run-tsan.sh LOOMC RUNNER SPEC DIR
set -euo pipefail
loomc=$1 runner=$2 spec=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
"$loomc" "$spec" --target=host --emit=artifact -o "$dir"
exec "$runner" "$spec" "$dir"/*.host.so --launches 2
