#!/usr/bin/env bash
# Install and run gcntrain on aarch64 (Debian bookworm arm64 under QEMU user-mode emulation)
# with no C/C++ compiler in the root, and compare its losses and METIS partition with the
# same commands on this (x86-64) host.  Not part of the test suite: it takes many minutes.
#
#   sudo scripts/aarch64_check.sh [--prepare-only] [CACHE_DIR]
#
# CACHE_DIR (default /var/tmp/gcntrain-aarch64) keeps the arm64 root between runs
# (debootstrap and python3 in it are made once); each run copies the checkout in afresh,
# makes a new venv, and writes its logs to CACHE_DIR/logs.  --prepare-only stops after the
# root is ready.  Needs root (apt, chroot, mounts), Debian's mirror and PyPI.
#
# Environment: HOST_BIN (the host's venv bin with gcntrain, default .venv/bin of the
# checkout), EPOCHS (default 5), A64FX=0 to skip the run with the A64FX CPU model
# (QEMU_CPU=a64fx NUMBA_CPU_NAME=a64fx NUMBA_CPU_FEATURES=+sve,+neon,+fp-armv8).
#
# Traps of the emulation (not of real A64FX nodes): the PyPI MPICH needs
# MPIR_CVAR_CH4_CMA_ENABLE=0 (QEMU does not emulate process_vm_readv), and the first run
# spends minutes compiling the Numba kernels.
set -euo pipefail

PREPARE_ONLY=0
if [[ "${1:-}" == "--prepare-only" ]]; then
    PREPARE_ONLY=1
    shift
fi
CACHE=$(realpath -m "${1:-/var/tmp/gcntrain-aarch64}")
ROOT=$CACHE/bookworm-arm64
LOGS=$CACHE/logs
REPO=$(cd "$(dirname "$0")/.." && pwd)
HOST_BIN=${HOST_BIN:-$REPO/.venv/bin}
EPOCHS=${EPOCHS:-5}
A64FX=${A64FX:-1}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
CORA=${CORA:-$REPO/../shared/datasets/planetoid}
APT=(apt-get -y -q -o DPkg::Lock::Timeout=900 -o Acquire::Check-Valid-Until=false)

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() {
    log "FAILED: $*"
    exit 1
}

[[ $(id -u) == 0 ]] || die "run as root (apt, chroot and mounts)"
mkdir -p "$CACHE" "$LOGS"

# --- 1. host tools --------------------------------------------------------------------------
need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v update-binfmts >/dev/null || need+=(binfmt-support)
command -v debootstrap >/dev/null || need+=(debootstrap)
if ((${#need[@]})); then
    log "apt install ${need[*]}"
    "${APT[@]}" update >"$LOGS/apt-host.log" 2>&1
    DEBIAN_FRONTEND=noninteractive "${APT[@]}" install "${need[@]}" >>"$LOGS/apt-host.log" 2>&1 ||
        die "apt install ${need[*]} (see $LOGS/apt-host.log)"
fi
QEMU=$(command -v qemu-aarch64-static)
log "host: $(uname -m), $("$QEMU" --version | head -n1)"

# --- 2. binfmt_misc: arm64 executables run through qemu-aarch64-static ------------------------
BINFMT=/proc/sys/fs/binfmt_misc
if [[ ! -e $BINFMT/register ]]; then
    mount -t binfmt_misc binfmt_misc "$BINFMT" || die "cannot mount binfmt_misc in this container"
fi
if [[ ! -e $BINFMT/qemu-aarch64 ]]; then
    update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
fi
if [[ ! -e $BINFMT/qemu-aarch64 ]]; then
    # ELF64 little-endian, e_machine 0xb7 (AArch64); F: the kernel opens the interpreter now,
    # so it works inside the chroot as well
    magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
    mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
    echo ":qemu-aarch64:M::$magic:$mask:$QEMU:OCF" >"$BINFMT/register" ||
        die "cannot register qemu-aarch64 with binfmt_misc"
fi
log "binfmt: $(tr '\n' ' ' <"$BINFMT/qemu-aarch64" | cut -c1-120)"

# --- 3. the arm64 root (cached) ---------------------------------------------------------------
MOUNTED=()
unmount_all() {
    local m
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
        m=${MOUNTED[i]}
        umount -R "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    MOUNTED=()
}
trap unmount_all EXIT
mount_root() {
    mountpoint -q "$ROOT/proc" || { mount -t proc proc "$ROOT/proc" && MOUNTED+=("$ROOT/proc"); }
    for d in dev sys; do
        if ! mountpoint -q "$ROOT/$d"; then
            # rslave: unmounting the copy never unmounts anything of the host
            mount --rbind "/$d" "$ROOT/$d" && mount --make-rslave "$ROOT/$d" && MOUNTED+=("$ROOT/$d")
        fi
    done
    cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
    # the host's CA bundle (PyPI may be reached through a proxy with its own CA)
    cp -L /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/host-ca.crt"
}
in_root() { chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

if [[ ! -e $ROOT/.stage-debootstrap ]]; then
    rm -rf "$ROOT"
    mkdir -p "$ROOT"
    log "debootstrap --foreign bookworm arm64 (minbase)"
    t0=$SECONDS
    debootstrap --arch=arm64 --variant=minbase --foreign bookworm "$ROOT" "$MIRROR" \
        >"$LOGS/debootstrap.log" 2>&1 || die "debootstrap first stage (see $LOGS/debootstrap.log)"
    cp "$QEMU" "$ROOT/usr/bin/"
    log "debootstrap --second-stage (emulated)"
    chroot "$ROOT" /debootstrap/debootstrap --second-stage >>"$LOGS/debootstrap.log" 2>&1 ||
        die "debootstrap second stage (see $LOGS/debootstrap.log)"
    touch "$ROOT/.stage-debootstrap"
    log "root made in $((SECONDS - t0)) s"
fi
cp "$QEMU" "$ROOT/usr/bin/"
mount_root
if [[ ! -e $ROOT/.stage-python ]]; then
    log "apt install python3 python3-venv in the root (no compiler)"
    t0=$SECONDS
    echo "deb $MIRROR bookworm main" >"$ROOT/etc/apt/sources.list"
    in_root "${APT[@]}" update >"$LOGS/apt-root.log" 2>&1 || die "apt update in the root"
    in_root env DEBIAN_FRONTEND=noninteractive "${APT[@]}" install --no-install-recommends \
        python3 python3-venv ca-certificates >>"$LOGS/apt-root.log" 2>&1 ||
        die "apt install in the root (see $LOGS/apt-root.log)"
    touch "$ROOT/.stage-python"
    log "python3 installed in $((SECONDS - t0)) s"
fi
log "root: $(in_root uname -m), $(in_root python3 --version)"
if ((PREPARE_ONLY)); then
    log "root ready at $ROOT"
    exit 0
fi

# --- 4. the checkout and the data, copied in --------------------------------------------------
rm -rf "$ROOT/opt/gcntrain" "$ROOT/opt/venv" "$ROOT/opt/work"
mkdir -p "$ROOT/opt/gcntrain" "$ROOT/opt/work" "$ROOT/opt/data"
(cd "$REPO" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) |
    tar -xf - -C "$ROOT/opt/gcntrain"
cp "$CORA"/ind.cora.* "$ROOT/opt/data/"
log "checkout $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD || echo '+changes') copied in"

# the commands run on both machines (cwd: a work directory with the data in ./data)
cat >"$ROOT/opt/work/runs.sh" <<EOF
set -e
gcntrain convert data/ind.cora -o cora.h5 >/dev/null
for step in serial np2 partition; do
    t0=\$EPOCHREALTIME
    case \$step in
    serial) gcntrain train cora.h5 --epochs $EPOCHS --seed 1 -o serial >/dev/null ;;
    np2) mpiexec -n 2 gcntrain train cora.h5 --scheme 1d --partition metis --epochs $EPOCHS --seed 1 -o np2 >/dev/null ;;
    partition) gcntrain partition cora.h5 --method metis --parts 4 --seed 0 -o cora-m4.h5 --json >partition.json ;;
    esac
    t1=\$EPOCHREALTIME
    echo "\$step \$t0 \$t1" | awk '{printf "%-10s %8.1f s\n", \$1, \$3 - \$2}'
done
EOF

# which instructions Numba emits there: the vector registers of a float32 loop
# (SVE: z0.s ...; NEON: v0.4s ...)
cat >"$ROOT/opt/work/isa.py" <<'EOF'
import re

import numba
import numpy as np


@numba.njit
def axpy(a, x, y):
    for i in range(x.size):
        y[i] += a * x[i]


x = np.ones(4096, np.float32)
axpy(np.float32(2), x, x.copy())
asm = next(iter(axpy.inspect_asm().values()))
sve = len(re.findall(r"\bz\d+\.s\b", asm))
neon = len(re.findall(r"\bv\d+\.4s\b", asm))
name = numba.config.CPU_NAME or "host"
print(f"numba target {name}: SVE z-register operands {sve}, NEON v.4s operands {neon}")
EOF

# --- 5. install in the root: no compiler there ------------------------------------------------
cat >"$ROOT/opt/install.sh" <<'EOF'
set -e
echo "machine: $(uname -m); $(python3 --version)"
echo "compilers on PATH (command -v cc gcc g++ c++ clang; nothing below means none):"
command -v cc gcc g++ c++ clang || true
echo "compiler packages installed (dpkg; nothing below means none):"
dpkg-query -W -f '${Package}\n' | grep -E '^((gcc|g\+\+|cpp|clang)(-[0-9.]+)?|build-essential)$' || true
echo "--- end of compiler check"
python3 -m venv /opt/venv
. /opt/venv/bin/activate
cd /opt/gcntrain
export PIP_CERT=/etc/host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1
t0=$(date +%s)
pip install ".[mpich]"
echo "pip install finished with status $? in $(($(date +%s) - t0)) s"
pip list 2>/dev/null | grep -iE '^(gcntrain|numpy|numba|llvmlite|scipy|h5py|mpi4py|mpich|mtkahypar|pymetis) '
EOF
log "pip install .[mpich] in the root"
t0=$SECONDS
in_root bash /opt/install.sh >"$LOGS/install.log" 2>&1 || die "install in the root (see $LOGS/install.log)"
log "installed in $((SECONDS - t0)) s; log: $LOGS/install.log"
sed -n '/^machine:/,/^--- end/p' "$LOGS/install.log"
grep -E "^(Building wheel|Created wheel|Successfully installed|pip install finished)" "$LOGS/install.log" | cut -c1-200
sed -n '/^--- end of compiler check/,$p' "$LOGS/install.log" | tail -n +2 | { grep -ciE "gcc|g\+\+|compil|meson|cmake" || true; } |
    sed 's/^/lines of the pip log that name a compiler or build system: /'

# --- 6. the runs, emulated and on the host -----------------------------------------------------
run_arm() { # $1: label, rest: extra environment
    local label=$1
    shift
    rm -rf "$ROOT/opt/work/$label"
    mkdir -p "$ROOT/opt/work/$label"
    ln -s /opt/data "$ROOT/opt/work/$label/data"
    cp "$ROOT/opt/work/runs.sh" "$ROOT/opt/work/$label/"
    log "arm64 runs ($label) $*"
    in_root env PATH=/opt/venv/bin:/usr/bin:/bin MPIR_CVAR_CH4_CMA_ENABLE=0 \
        OPENBLAS_NUM_THREADS=1 "$@" bash -c "cd /opt/work/$label && gcntrain info --json >info.json && python /opt/work/isa.py && bash runs.sh" \
        2>&1 | tee "$LOGS/run-$label.log"
}
run_arm arm64
if ((A64FX)); then
    run_arm a64fx QEMU_CPU=a64fx NUMBA_CPU_NAME=a64fx NUMBA_CPU_FEATURES=+sve,+neon,+fp-armv8
fi
HOSTW=$CACHE/host
rm -rf "$HOSTW"
mkdir -p "$HOSTW"
ln -s "$ROOT/opt/data" "$HOSTW/data"
cp "$ROOT/opt/work/runs.sh" "$HOSTW/"
log "x86-64 host runs (pymetis left out: GCNTRAIN_METIS_BACKEND=mtkahypar)"
(cd "$HOSTW" && env PATH="$HOST_BIN:$PATH" OPENBLAS_NUM_THREADS=1 GCNTRAIN_METIS_BACKEND=mtkahypar \
    bash -c "gcntrain info --json >info.json && bash runs.sh") 2>&1 | tee "$LOGS/run-host.log"

# --- 7. side by side --------------------------------------------------------------------------
labels=(host arm64)
((A64FX)) && labels+=(a64fx)
dirs=()
for l in "${labels[@]}"; do
    if [[ $l == host ]]; then dirs+=("$HOSTW"); else dirs+=("$ROOT/opt/work/$l"); fi
done
"$HOST_BIN/python" - "${labels[*]}" "${dirs[@]}" <<'EOF' | tee "$LOGS/compare.txt"
import json
import sys

import h5py
import numpy as np

labels, dirs = sys.argv[1].split(), sys.argv[2:]
for label, d in zip(labels, dirs):
    print(f"{label}: metis_backend = {json.load(open(f'{d}/info.json'))['metis_backend']}")


def losses(d, run):
    with open(f"{d}/{run}/metrics.jsonl") as f:
        return np.array([json.loads(line)["loss"] for line in f], dtype=np.float64)


ok = True
for run in ("serial", "np2"):
    cols = [losses(d, run) for d in dirs]
    print(f"\n{run}: training loss per epoch")
    print("epoch  " + "  ".join(f"{lab:>12}" for lab in labels) + "  max rel. diff")
    for e in range(len(cols[0])):
        vals = [c[e] for c in cols]
        rel = max(abs(v - vals[0]) / abs(vals[0]) for v in vals)
        print(f"{e + 1:5d}  " + "  ".join(f"{v:12.8f}" for v in vals) + f"  {rel:.1e}")
        ok &= rel <= 2**-23 * 8
parts = []
for d in dirs:
    with h5py.File(f"{d}/cora-m4.h5") as f:
        parts.append(np.asarray(f["part"]))
same = all(np.array_equal(parts[0], p) for p in parts[1:])
cuts = [json.load(open(f"{d}/partition.json")).get("edge_cut") for d in dirs]
print(f"\npartition --method metis --parts 4: identical on all: {same}; edge cut {cuts}")
ok &= same
print("\nlosses equal to float32 rounding and partitions identical:", "yes" if ok else "NO")
sys.exit(0 if ok else 1)
EOF
log "done; logs in $LOGS"
