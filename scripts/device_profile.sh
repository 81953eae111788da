#!/usr/bin/env bash
# Where `envdoctor diagnose` spends its time on a real GPU machine: sampled stacks of every thread.
#
# Run from the repository root on the GPU machine, with py-spy and envdoctor's missing dependencies as wheels in
# WHEELS (default .whl), and an output folder OUT:
#
#     OUT=/some/dir scripts/device_profile.sh [WHEELS [OLDER]]
#
# envdoctor is laid out byte-compiled as pip installs it, warmed twice, then recorded by py-spy (collapsed
# stacks, 1000 Hz): runs sampling only the thread holding the GIL (what costs CPU on the critical path), runs
# sampling every active thread, one run with idle threads (where probes wait), an import-time trace, and wall
# times of diagnose inspecting the machine's own python3 against an empty venv, and (where OLDER, default .old,
# holds an older envdoctor/ package, e.g. from `git archive REV envdoctor recipes`) the older one's wall times. All in OUT/profile.tgz.
set -u
export PYTHONUNBUFFERED=1 LC_ALL=C
WHEELS=${1:-.whl}
OLDIR=$PWD/${2:-.old}
PY=${PY:-python3}
P=/tmp/profile
rm -rf "$P" /tmp/ed && mkdir -p "$P" /tmp/ed
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$WHEELS"/*.whl || exit 3
export PYTHONPATH=/tmp/ed:/tmp/site
cp -rL envdoctor /tmp/ed/ && find /tmp/ed -name __pycache__ -prune -exec rm -rf {} + && $PY -m compileall -q /tmp/ed >/dev/null
SPY=/tmp/site/bin/py-spy
cd /tmp
pack() { tar czf "$OUT/profile-new.tgz" -C /tmp profile && mv "$OUT/profile-new.tgz" "$OUT/profile.tgz"; }
run() { $PY -m envdoctor diagnose --format json "$@"; }
for i in 1 2; do run >/dev/null 2>&1; done
for i in 1 2 3 4 5 6; do
    /usr/bin/time -f "%e s wall %U s user %S s sys %M KB" -a -o "$P/times.txt" $PY -m envdoctor diagnose --format json \
        >"$P/report-$i.json" 2>>"$P/errors.txt"
done
$PY -m venv /tmp/bare
for i in 1 2 3 4 5 6; do
    /usr/bin/time -f "bare venv: %e s wall %U s user %S s sys %M KB" -a -o "$P/times.txt" $PY -m envdoctor diagnose \
        --format json --python /tmp/bare >"$P/bare-$i.json" 2>>"$P/errors.txt"
done
if [ -d "$OLDIR/envdoctor" ]; then  # an older envdoctor, laid out the same way, timed the same way
    rm -rf /tmp/old && mkdir -p /tmp/old && cp -rL "$OLDIR"/* /tmp/old/ && $PY -m compileall -q /tmp/old >/dev/null
    for i in 1 2 3 4 5 6; do
        PYTHONPATH=/tmp/old:/tmp/site /usr/bin/time -f "older: %e s wall %U s user %S s sys %M KB" -a -o "$P/times.txt" \
            $PY -m envdoctor diagnose --format json >"$P/older-$i.json" 2>>"$P/errors.txt"
    done
fi
pack
for i in 1 2 3 4 5 6; do
    timeout 60 $SPY record --format raw --rate 1000 --threads --gil -o "$P/gil-$i.txt" -- $PY -m envdoctor diagnose \
        --format json >/dev/null 2>>"$P/errors.txt"
done
pack
for i in 1 2 3; do
    timeout 60 $SPY record --format raw --rate 1000 --threads -o "$P/active-$i.txt" -- $PY -m envdoctor diagnose \
        --format json >/dev/null 2>>"$P/errors.txt"
done
timeout 60 $SPY record --format raw --rate 1000 --threads --idle -o "$P/idle-1.txt" -- $PY -m envdoctor diagnose \
    --format json >/dev/null 2>>"$P/errors.txt"
$PY -X importtime -m envdoctor diagnose --format json >/dev/null 2>"$P/importtime.txt"
pack
cat "$P/times.txt"
tail -5 "$P/errors.txt"
ls -la "$P" | head -40
