#!/usr/bin/env bash
# What envdoctor says on a real GPU machine, beside what the vendor's tools and PyTorch say there.
#
# Run from the repository root on a machine with an NVIDIA GPU, with wheels in WHEELS (default .whl): envdoctor's
# dependencies the machine lacks (distro), the peers and what they lack (env-doctor, cuda-doctor, pydantic...),
# and py-spy; and an output folder OUT:
#
#     OUT=/some/dir [SKIP="measure-fit bench-libs"] scripts/device_capture.sh [WHEELS]
#
# The machine is captured as it is plus envdoctor's own dependency: distro goes to a folder of its own on
# envdoctor's PYTHONPATH (as `pip install envdoctor` would add it); the peers and py-spy go to folders that only
# their own runs see, so nothing of theirs is in the capture. SKIP names steps (by their output file's stem)
# to leave out.
#
# Everything goes into OUT/capture.tgz, rewritten after every step, so a run cut short keeps what it did:
# vendor-tools.txt (nvidia-smi, the driver's own files, nvcc, torch's view, cuobjdump of libtorch_cuda.so),
# envdoctor's snapshot (tests/live/ replays it), diagnose/advise/topo/check/libs/bench output, the bench held to
# torch's copies (scripts/bench_transfer_check.py), symbol predictions against the real loader
# (scripts/bench_libs.py), the side-by-side timing (scripts/bench_diagnose.py) and real model memory
# (scripts/measure_fit.py). steps.txt lists each step's exit code and seconds.
set -u
export PYTHONUNBUFFERED=1 LC_ALL=C
WHEELS=${1:-.whl}
ROOT=$PWD
C=/tmp/capture
PY=${PY:-python3}
rm -rf "$C" /tmp/eddeps /tmp/peers /tmp/tools && mkdir -p "$C" /tmp/eddeps /tmp/peers /tmp/tools
install() { $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$@" || exit 3; }
for w in "$WHEELS"/*.whl; do
    [ -e "$w" ] || continue
    case "$(basename "$w")" in
        distro-*) install /tmp/eddeps "$w" ;;
        py_spy-*) install /tmp/tools "$w" ;;
        *) install /tmp/peers "$w" ;;
    esac
done
export PYTHONPATH=/tmp/eddeps${PYTHONPATH:+:$PYTHONPATH}
ED="$PY -m envdoctor"
SKIP=" ${SKIP:-} "

pack() { tar czf "$OUT/capture-new.tgz" -C /tmp capture && mv "$OUT/capture-new.tgz" "$OUT/capture.tgz"; }
step() {  # step NAME SECONDS COMMAND...: output to NAME, exit code and time to steps.txt
    local name=$1 limit=$2 t0 rc
    shift 2
    case "$SKIP" in *" ${name%.*} "*) echo "$name skipped" | tee -a "$C/steps.txt"; return ;; esac
    t0=$(date +%s%N)
    if [ "$(type -t "$1")" = function ]; then "$@" >"$C/$name" 2>&1; else timeout "$limit" "$@" >"$C/$name" 2>&1; fi
    rc=$?
    echo "$name rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$C/steps.txt"
    pack
}
vendor() {
    for cmd in "nvidia-smi" "nvidia-smi -q" "nvidia-smi topo -m" "nvidia-smi nvlink -s" \
        "nvidia-smi --query-gpu=name,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,memory.total,clocks.max.memory --format=csv" \
        "cat /proc/driver/nvidia/version" "cat /proc/driver/nvidia/params" "nvcc --version" "uname -a" \
        "cat /etc/os-release" "cat /proc/devices" "ls -la /dev" "ls -la /usr/local /usr/local/nvidia /usr/local/nvidia/lib64" \
        "ldconfig -p" "$PY -m pip list" "nproc" "cat /proc/meminfo" "lscpu" "numactl -H"; do
        echo "\$ $cmd"
        timeout 60 $cmd 2>&1
        echo
    done
    for f in /proc/driver/nvidia/gpus/*/information /sys/bus/pci/devices/*/current_link_speed; do
        echo "\$ cat $f"; cat "$f" 2>&1; echo
    done
    echo "\$ torch"
    timeout 120 $PY - <<'EOF' 2>&1
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None)
print("available", torch.cuda.is_available(), "count", torch.cuda.device_count())
print("arch_list", torch.cuda.get_arch_list())
for i in range(torch.cuda.device_count()):
    print(i, torch.cuda.get_device_name(i), torch.cuda.get_device_capability(i), torch.cuda.get_device_properties(i))
print("lib", os.path.join(os.path.dirname(torch.__file__), "lib"))
EOF
    lib=$($PY -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))' 2>/dev/null)
    echo "\$ cuobjdump --list-elf $lib (architectures, counted)"
    timeout 120 cuobjdump --list-elf "$lib" 2>&1 | grep -o 'sm_[0-9a-z]*' | sort | uniq -c
    echo "\$ cuobjdump --list-ptx $lib (architectures, counted)"
    timeout 120 cuobjdump --list-ptx "$lib" 2>&1 | grep -o 'sm_[0-9a-z]*' | sort | uniq -c
    echo "\$ jax / cupy"
    timeout 120 $PY -c 'import jax; print("jax", jax.__version__, jax.devices())' 2>&1 | tail -3
    timeout 60 $PY -c 'import cupy; print("cupy", cupy.__version__, cupy.cuda.runtime.runtimeGetVersion(), cupy.cuda.runtime.driverGetVersion())' 2>&1 | tail -3
}

step vendor-tools.txt 400 vendor
step live-snapshot.txt 60 $ED snapshot -o "$C/snapshot.json.gz"
step live-diagnose.json 60 $ED diagnose --format json
step live-diagnose.txt 60 $ED diagnose
step live-diagnose-v.txt 60 $ED diagnose -v
step live-advise.txt 60 $ED advise
step live-topo.txt 60 $ED topo
step live-topo.json 60 $ED topo --format json
step live-policy.txt 60 $ED policy init --from "$C/snapshot.json.gz" -o "$C/policy.toml"
step live-check.txt 60 $ED check --policy "$C/policy.toml"
step live-check-prometheus.txt 60 $ED check --policy "$C/policy.toml" --format prometheus
step live-libs.txt 60 $ED libs "$($PY -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')"
step live-bench.txt 120 $ED bench
step live-bench.json 120 $ED bench --format json
step live-bench-1g.txt 120 $ED bench --size 1G --trials 9
step bench-transfer.txt 180 $PY scripts/bench_transfer_check.py
step bench-transfer-1g.json 180 $PY scripts/bench_transfer_check.py --size 1G --trials 9 --json
step live-fit.txt 60 $ED fit tests/data/fit/configs/Qwen--Qwen3-8B.json --engine transformers --context 32768
step bench-libs.txt 180 $PY scripts/bench_libs.py --python "$PY" --runs 3
peers=()
[ -x /tmp/peers/bin/env-doctor ] && peers+=(--peer "env-doctor=env PYTHONPATH=/tmp/peers /tmp/peers/bin/env-doctor check")
[ -x /tmp/peers/bin/cuda-doctor ] && peers+=(--peer "cuda-doctor=env PYTHONPATH=/tmp/peers /tmp/peers/bin/cuda-doctor diagnose")
step bench-diagnose.txt 240 $PY scripts/bench_diagnose.py --runs 5 --python "$PY" --torch-python "$PY" "${peers[@]}" \
    --save "$C/bench-diagnose.json"
step measure-fit.txt 200 $PY scripts/measure_fit.py --out "$C/fit-measured.jsonl"
gil() {  # where diagnose spends the GIL: 6 runs sampled by py-spy (collapsed stacks of the thread holding it)
    for i in 1 2 3 4 5 6; do
        timeout 60 env PYTHONPATH=/tmp/tools:$PYTHONPATH /tmp/tools/bin/py-spy record --format raw --rate 1000 \
            --threads --gil -o "$C/gil-$i.txt" -- $PY -m envdoctor diagnose --format json >/dev/null
    done
}
[ -x /tmp/tools/bin/py-spy ] && step profile-gil.txt 120 gil
cat "$C/steps.txt"
tail -40 "$C/bench-diagnose.txt"
cat "$C/bench-transfer.txt"
