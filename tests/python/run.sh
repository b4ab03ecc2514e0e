#!/usr/bin/env bash
# ctest python.package: installs the Python package from the repository root
# (pip install ., not editable: the wheel's layout is what is tested) into
# the build's venv, then runs tests/python with that venv's pytest.
#   run.sh <venv> <cmake build dir of the wheel>
# LOOMC (set by ctest) is the loomc the tests build their programs with.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$1
wheel_build=$2

"$root/scripts/python-venv" "$venv"
py="$venv/bin/python"
# The venv holds the pinned backend: no build isolation, so no download. The
# wheel's CMake build folder is kept: a rebuild compiles only what changed.
"$py" -m pip install -q --disable-pip-version-check --no-build-isolation --force-reinstall \
  --no-deps --config-settings="build-dir=$wheel_build" "$root"
# Outside the source tree, so `import loom` can only be the installed package.
cd "$venv"
unset LOOMRT_LIB
export LOOM_EXPECT_INSTALLED=1 PYTHONDONTWRITEBYTECODE=1
exec "$py" -m pytest -p no:cacheprovider -q -rs "$here"
