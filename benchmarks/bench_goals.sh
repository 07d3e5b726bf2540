#!/usr/bin/env bash
# The speed and memory goals against the C++ tools, as a user runs the commands (issue 12):
#   hpcsa prof on the real 1,024-thread OpenMP run (meas-cxx1024, 18 MB of structure files), on the same
#   profiles with the issue's 10 MB of structure files, and on 16 profiles over python3.11d, libc and libm
#   (21-24 MB of structure files with Debian 12's packages, benchmarks/realshape.py "bigc"), first run (structure
#   files parsed) and warm (parsed-structure cache); hpcsa struct -j 2 on python3.11d and on a copy of
#   meas-cxx1024.
# Wall seconds and the largest resident set of any one of its processes (GNU time's %M) of each command, median
# of REPEAT rounds, with the bytecode cache in place (as an installed package runs); then the peak memory of the
# whole process tree (coordinator and workers: benchmarks/tree_peak.py), median of 3 more rounds, watched.
# Needs ../shared/data (the real run), Debian's python3.11-dbg and libc6-dbg.
#
# usage: benchmarks/bench_goals.sh [REPEAT] [RESULTS.md]     (about 4 minutes on 2 idle cores)
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

# The commands, measured in rounds: each round runs every command once, in this order, so that a burst of
# load on the shared machine lands on all of them alike rather than on one (and a first run and the warm
# runs after it see the same moment). NAMES[i] runs CMDS[i] after BEFORES[i]; both are eval'ed.
NAMES=(); BEFORES=(); CMDS=()
add() { NAMES+=("$1"); BEFORES+=("$2"); CMDS+=("$3"); }

# run I: runs command I once, appending "wall KB" to $T/runs.I
run() {
  eval "${BEFORES[$1]}"
  eval "/usr/bin/time -f '%e %M' -o $T/t ${CMDS[$1]}" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
  cat "$T/t" >> "$T/runs.$1"
}

# median FILE COLUMN
median() { cut -d' ' -f"$2" "$1" | sort -g | sed -n "$(( ($(wc -l < "$1") + 1) / 2 ))p"; }

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

P="$H prof"
add "prof real-1024 -j 2, first run" "rm -rf $T/db.d $T/c-real" "env HPCSA_CACHE_DIR=$T/c-real $P $REAL -o $T/db.d -j 2"
for j in 2 1; do
  add "prof real-1024 -j $j, warm" "rm -rf $T/db.d" "env HPCSA_CACHE_DIR=$T/c-real $P $REAL -o $T/db.d -j $j"
done
add "prof real-1024 10 MB -j 2, first run" "rm -rf $T/db.d $T/c-r10" \
  "env HPCSA_CACHE_DIR=$T/c-r10 $P $T/r10 --no-binaries -o $T/db.d -j 2"
add "prof real-1024 10 MB -j 2, warm" "rm -rf $T/db.d" "env HPCSA_CACHE_DIR=$T/c-r10 $P $T/r10 --no-binaries -o $T/db.d -j 2"
add "prof bigc-16 -j 2, first run" "rm -rf $T/db.d $T/c-bigc" "env HPCSA_CACHE_DIR=$T/c-bigc $P $T/bigc16.m -o $T/db.d -j 2"
for j in 2 1; do
  add "prof bigc-16 -j $j, warm" "rm -rf $T/db.d" "env HPCSA_CACHE_DIR=$T/c-bigc $P $T/bigc16.m -o $T/db.d -j $j"
done
add "struct python3.11d -j 2" ":" "$H struct /usr/bin/python3.11d -o $T/p.hpcstruct -j 2"
add "struct MEASDIR real-1024 -j 2" "rm -rf $T/mc; cp -r $REAL $T/mc; rm -rf $T/mc/structs" "$H struct $T/mc -j 2"

# The machine's speed at the start and the end (it is shared and varies during a day): benchmarks/machine_speed.py.
probe() { .venv/bin/python benchmarks/machine_speed.py; }
PROBE_START=$(probe)

# A round first, unrecorded: the structure files and binaries come into the page cache (the first of the
# first runs reads them from disk).
for i in "${!NAMES[@]}"; do run "$i"; rm -f "$T/runs.$i"; done
for _ in $(seq "$REPEAT"); do
  for i in "${!NAMES[@]}"; do run "$i"; done
done
# The whole tree's peak, in rounds of its own (sampling /proc every 5 ms takes CPU from the run it watches).
for _ in 1 2 3; do
  for i in "${!NAMES[@]}"; do
    eval "${BEFORES[$i]}"
    eval ".venv/bin/python benchmarks/tree_peak.py ${CMDS[$i]}" >> "$T/tree.$i"
  done
done
rows=()
for i in "${!NAMES[@]}"; do
  rows+=("${NAMES[$i]}|$(median "$T/runs.$i" 1)|$(median "$T/runs.$i" 2)|$(median "$T/tree.$i" 2)|$(cut -d' ' -f1 "$T/runs.$i" | tr '\n' ' ' | sed 's/ $//')")
done
# The second run against the first, round by round (each round's warm -j 2 run came right after its first run).
ratio() {  # FIRST WARM: the median of the rounds' first / warm
  paste -d' ' <(cut -d' ' -f1 "$T/runs.$1") <(cut -d' ' -f1 "$T/runs.$2") | awk '{printf "%.2f\n", $1 / $2}' \
    > "$T/ratios"
  median "$T/ratios" 1
}

{
  echo "# Speed and memory against hpcprof and hpcstruct"
  echo
  echo "\`benchmarks/bench_goals.sh $REPEAT\` on $(date -u +%Y-%m-%d), $(nproc) CPUs, $(.venv/bin/python -V), load average"
  echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end; commit $(git rev-parse --short HEAD). Median of $REPEAT rounds, each"
  echo "running every command once in the order below, after one round not recorded (all runs listed). Memory: the"
  echo "largest resident set of any one of the command's processes (GNU time's %M, same rounds), and the peak of the"
  echo "whole process tree (the sum of its processes' PSS, sampled every 5 ms by benchmarks/tree_peak.py; median of 3"
  echo "more rounds): the figure to hold against a C++ tool, whose workers are threads of one process. Machine speed"
  echo "(benchmarks/machine_speed.py): $PROBE_START s at the start and $(probe) s at the end."
  echo
  echo "| command | wall (s) | largest process (MiB) | whole tree (MiB) | runs (s) | C++ tool on this machine kind |"
  echo "|---|---:|---:|---:|---|---|"
  for r in "${rows[@]}"; do
    IFS='|' read -r name w k tree runs <<< "$r"
    case "$name" in
      "prof real-1024 10 MB"*) ref="hpcprof -j 2: 0.7-0.8 s, 66 MiB (the issue's run of this shape)" ;;
      "prof real-1024"*) ref="hpcprof -j 2: 1.55-1.59 s, 84 MB (this run, as recorded with it)" ;;
      "prof bigc-16"*) ref="hpcprof -j 2: 1.5-1.9 s, 105 MiB" ;;
      "struct python3.11d"*) ref="hpcstruct -j 2: 3.4-4.1 s, 720 MiB" ;;
      *) ref="hpcstruct -j 2: 12.8 s, 460 MB" ;;
    esac
    echo "| \`$name\` | $w | $(( k / 1024 )) | $(( tree / 1024 )) | $runs | $ref |"
  done
  echo
  echo "A warm \`-j 2\` run against the first run of its round (median of the rounds' ratios): real run" \
       "$(ratio 0 1)x, 10 MB shape $(ratio 3 4)x, bigc $(ratio 5 6)x."
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
cat "$OUT"
