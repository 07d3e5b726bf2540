#!/usr/bin/env bash
# The speed and memory goals against the C++ tools, as a user runs the commands (issue 12):
#   hpcsa prof on the real 1,024-thread OpenMP run (meas-cxx1024, 18 MB of structure files), on the same
#   profiles with the issue's 10 MB of structure files, and on 16 profiles over python3.11d, libc and libm
#   (20.7 MB of structure files, benchmarks/realshape.py "bigc"), first run (structure files parsed) and warm
#   (parsed-structure cache); hpcsa struct -j 2 on python3.11d and on a copy of meas-cxx1024.
# Wall seconds and the largest resident set (GNU time's %M) of each command, median of --repeat runs, with the
# bytecode cache in place (as an installed package runs). Needs ../shared/data (the real run), Debian's
# python3.11-dbg and libc6-dbg.
#
# usage: benchmarks/bench_goals.sh [REPEAT] [RESULTS.md]     (about 2 minutes on 2 idle cores)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEAT=${1:-3}
OUT=${2:-benchmarks/results/goals.md}
REAL=${HPCSA_REAL_RUN:-../shared/data/hpctoolkit-extra/meas-cxx1024}
H=.venv/bin/hpcsa
[ -d "$REAL" ] || { echo "bench_goals: $REAL is missing (the real run lives in ../shared/data)" >&2; exit 2; }
T=$(mktemp -d /tmp/hpcsa-goals-XXXX)
trap 'rm -rf "$T"' EXIT
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=$T/pycache HPCSA_NO_PROGRESS=1 HPCSA_STRUCT_CACHE=

# one NAME CMD...: runs CMD REPEAT times (after $BEFORE each time), prints "NAME|median wall|median KB|walls"
one() {
  local name=$1; shift
  local walls=() kbs=()
  for _ in $(seq "$REPEAT"); do
    [ -n "${BEFORE:-}" ] && eval "$BEFORE"
    /usr/bin/time -f "%e %M" -o "$T/t" "$@" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
    read -r w k < "$T/t"; walls+=("$w"); kbs+=("$k")
  done
  local mw mk
  mw=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "$(( (REPEAT + 1) / 2 ))p")
  mk=$(printf '%s\n' "${kbs[@]}" | sort -g | sed -n "$(( (REPEAT + 1) / 2 ))p")
  echo "$name|$mw|$mk|${walls[*]}"
}

.venv/bin/python -c "
import sys; sys.path[:0] = ['benchmarks', '.']
import realshape; from pathlib import Path
realshape.make_measurement('bigc', 16, Path('$T/bigc16.m'), log=lambda *a: None)"
$H --help >/dev/null   # fills the bytecode cache
# The issue's shape of the real run: its 1,024 profiles with 10 MB of structure files (the program, libc, libm,
# libgomp, libgcc_s: 9.97 MB; the issue's run had libc, libm, libgomp and a 0.5 MB libhpcrun). The modules left
# without one (ld.so, libstdc++, libhpcrun: 22 sampled addresses) stay instructions (--no-binaries: no binary
# is read in their place). Links to the real files: nothing is copied.
mkdir -p "$T/r10/structs"
for f in "$REAL"/*; do [ -f "$f" ] && ln -s "$(realpath "$f")" "$T/r10/"; done
ln -s "$(realpath "$REAL/vdso")" "$T/r10/vdso"
for m in cxx-gcc-O2 libc.so.6 libm.so.6 libgomp.so.1.0.0 libgcc_s.so.1; do
  ln -s "$(realpath "$REAL/structs/$m.hpcstruct")" "$T/r10/structs/"
done

rows=()
BEFORE="rm -rf $T/db.d $T/cache" rows+=("$(HPCSA_CACHE_DIR=$T/cache one "prof real-1024 -j 2, first run" $H prof "$REAL" -o "$T/db.d" -j 2)")
for j in 2 1; do
  BEFORE="rm -rf $T/db.d" rows+=("$(HPCSA_CACHE_DIR=$T/cache one "prof real-1024 -j $j, warm" $H prof "$REAL" -o "$T/db.d" -j $j)")
done
BEFORE="rm -rf $T/db.d $T/cache" rows+=("$(HPCSA_CACHE_DIR=$T/cache one "prof real-1024 10 MB -j 2, first run" $H prof "$T/r10" --no-binaries -o "$T/db.d" -j 2)")
BEFORE="rm -rf $T/db.d" rows+=("$(HPCSA_CACHE_DIR=$T/cache one "prof real-1024 10 MB -j 2, warm" $H prof "$T/r10" --no-binaries -o "$T/db.d" -j 2)")
BEFORE="rm -rf $T/db.d $T/cache" rows+=("$(HPCSA_CACHE_DIR=$T/cache one "prof bigc-16 -j 2, first run" $H prof "$T/bigc16.m" -o "$T/db.d" -j 2)")
HPCSA_CACHE_DIR=$T/cache $H prof "$T/bigc16.m" -o "$T/db.d" -j 2 >/dev/null 2>&1; rm -rf "$T/db.d"
for j in 2 1; do
  BEFORE="rm -rf $T/db.d" rows+=("$(HPCSA_CACHE_DIR=$T/cache one "prof bigc-16 -j $j, warm" $H prof "$T/bigc16.m" -o "$T/db.d" -j $j)")
done
BEFORE="" rows+=("$(one "struct python3.11d -j 2" $H struct /usr/bin/python3.11d -o "$T/p.hpcstruct" -j 2)")
BEFORE="rm -rf $T/mc; cp -r $REAL $T/mc; rm -rf $T/mc/structs" rows+=("$(one "struct MEASDIR real-1024 -j 2" $H struct "$T/mc" -j 2)")

{
  echo "# Speed and memory against hpcprof and hpcstruct"
  echo
  echo "\`benchmarks/bench_goals.sh $REPEAT\` on $(date -u +%Y-%m-%d), $(nproc) CPUs, $(.venv/bin/python -V), load average"
  echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end; commit $(git rev-parse --short HEAD). Median of $REPEAT runs"
  echo "(all runs listed); memory: the largest resident set of the command's processes (GNU time)."
  echo
  echo "| command | wall (s) | memory (MiB) | runs (s) | C++ tool on this machine kind |"
  echo "|---|---:|---:|---|---|"
  for r in "${rows[@]}"; do
    IFS='|' read -r name w k runs <<< "$r"
    case "$name" in
      "prof real-1024 10 MB"*) ref="hpcprof -j 2: 0.7-0.8 s, 66 MiB (the issue's run of this shape)" ;;
      "prof real-1024"*) ref="hpcprof -j 2: 1.55-1.59 s, 84 MB (this run, as recorded with it)" ;;
      "prof bigc-16"*) ref="hpcprof -j 2: 1.5-1.9 s, 105 MiB" ;;
      "struct python3.11d"*) ref="hpcstruct -j 2: 3.4-4.1 s, 720 MiB" ;;
      *) ref="hpcstruct -j 2: 12.8 s, 460 MB" ;;
    esac
    echo "| \`$name\` | $w | $(( k / 1024 )) | $runs | $ref |"
  done
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
cat "$OUT"
