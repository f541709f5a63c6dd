#!/bin/bash
# The device command of the prepared GPU check (issue 37; docs/gpu.md, "The prepared GPU
# check"): run from the repository root on the GPU machine, with the folder that
# `python scripts/gpu_check.py prepare` filled carried (default .gpucheck).
#   1. installs the carried wheels (mpich, mpi4py, pymetis, mtkahypar) into python3
#      (pip --no-index --no-deps); where that fails, under the prefix /tmp/gpu_check_site
#      instead, with PATH, PYTHONPATH and LD_LIBRARY_PATH pointing there;
#   2. puts this checkout first on PYTHONPATH (no editable install: nothing is written
#      into the checkout);
#   3. runs `scripts/gpu_check.py run "$OUT"`, which writes gpu_check.json and
#      gpu_check.log there; pip's output goes to $OUT/install.log.
# Arguments are passed on to `gpu_check.py run` (e.g. --emulated --small for a dry run).
# GPU_CHECK_PYTHON: the interpreter (default python3); GPU_CHECK_DATA: the carried folder;
# GPU_CHECK_TARGET=1: install under /tmp/gpu_check_site straight away.
set -u
DATA=${GPU_CHECK_DATA:-.gpucheck}
PY=${GPU_CHECK_PYTHON:-python3}
OUT=${OUT:-/tmp/gpu_check_out}
SITE=/tmp/gpu_check_site
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
PIP=(-m pip install -q --no-index --no-deps --no-compile --no-cache-dir)
date -u +"start %FT%TZ, load $(cut -d' ' -f1 /proc/loadavg)"
: >"$OUT/install.log"
if [ "${GPU_CHECK_TARGET:-0}" = 1 ] ||
    ! "$PY" "${PIP[@]}" --force-reinstall "$DATA"/*.whl >>"$OUT/install.log" 2>&1; then
    echo "not into $PY (GPU_CHECK_TARGET=1, or it failed: install.log); under $SITE" | tee -a "$OUT/install.log"
    # --prefix, not --target: the mpich wheel's lib/libmpi.so.12 must land in $SITE/lib
    "$PY" "${PIP[@]}" --ignore-installed --prefix "$SITE" "$DATA"/*.whl >>"$OUT/install.log" 2>&1 || {
        echo "the wheels did not install: see install.log"
        tail -5 "$OUT/install.log"
    }
    LIBS=$("$PY" -c "import sysconfig as s; v={'base': '$SITE', 'platbase': '$SITE'};
print(s.get_path('platlib', 'posix_prefix', v) + ':' + s.get_path('purelib', 'posix_prefix', v))")
    export PATH="$SITE/bin:$PATH" PYTHONPATH="$LIBS${PYTHONPATH:+:$PYTHONPATH}"
    export LD_LIBRARY_PATH="$SITE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import mpi4py.MPI as M; print('MPI:', M.Get_library_version().splitlines()[0])" ||
    echo "mpi4py does not load its MPI library: the MPI parts will fail"
timeout -k 10 570 "$PY" scripts/gpu_check.py run "$OUT" --data "$DATA" "$@"
echo "gpu_check.py exit status $?; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
