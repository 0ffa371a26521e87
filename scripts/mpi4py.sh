#!/usr/bin/env bash
# Runs mpi4py's own test suite (2,127 tests: every MPI family, from Python) on our library, the
# way a user gets mpi4py: built from PyPI's source release with our mpicc, then run under bbrun.
#
#   scripts/mpi4py.sh                         the whole suite at 1, 2 and 3 ranks
#   scripts/mpi4py.sh --ranks 2 test_comm     one module at 2 ranks
#   scripts/mpi4py.sh --launcher mpiexec.mpich --ranks 2
#                                             the same build under MPICH's Hydra (our library)
#   scripts/mpi4py.sh --mpich --ranks 1,2,3,5 the peer's figures: mpi4py built with mpicc.mpich
#                                             (its own cache folder), run by mpiexec.hydra on
#                                             MPICH's own library, for a side-by-side count
#
# Options:
#   --ranks LIST     comma-separated rank counts (default 1,2,3; 3 outnumbers this machine's cores)
#   --timeout S      seconds one run of the suite may take before it counts as hung (default 600)
#   --launcher CMD   word-split, run as `CMD -n N python main.py ...` (default dist/bin/bbrun)
#   --mpich          build with mpicc.mpich and run under mpiexec.hydra with MPICH's library
#   --counts         print the run/failure/error/skip counts of each run (also on success)
#   --log PREFIX     keep each run's whole output in PREFIX.N (N ranks) and name every test as it
#                    runs (unittest's -v instead of -q), so a run cut short shows how far it got
#   --exclude NAME   leave out the tests whose full name (module.Class.test) contains NAME
#                    (mpi4py's main.py -x; repeatable)
#
# With --mpich at 2 or more ranks the tests in MPICH_HANGS below are left out: on MPICH 4.0.2
# (Debian, ch4:ucx) they fail on one rank and the others then wait forever, so nothing after
# them would run. Billboard runs them all.
#
# mpi4py's build probes which MPI functions the library has and builds the missing ones as
# stubs that raise NotImplementedError, so a build made before a function existed hides it from
# the tests. The build is therefore cached per set of exported names: a virtual environment under
# ${BB_CACHE:-~/.cache/billboard}/mpi4py-VERSION-HASH, HASH taken from `nm -D` of
# dist/lib/libmpi.so.12, Python's version and this script's build recipe; a change of exports
# builds it again (about 5 minutes on 2 cores). Exit status: 0 when every run passed, 1 when a
# run failed or hung, 2 for a usage error or a build that failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=4.1.2
RANKS=1,2,3
TIMEOUT=600
LAUNCHER="$ROOT/dist/bin/bbrun"
MPICH=0
COUNTS=0
LOGPREFIX=""
EXCLUDES=()
MODULES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --launcher) LAUNCHER=$2; shift 2 ;;
    --mpich) MPICH=1; shift ;;
    --counts) COUNTS=1; shift ;;
    --log) LOGPREFIX=$2; shift 2 ;;
    --exclude) EXCLUDES+=(-x "$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "mpi4py.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) MODULES+=("$1"); shift ;;
  esac
done

LIB="$ROOT/dist/lib/libmpi.so.12"
MPICC="$ROOT/dist/bin/mpicc"
LIBPATH="$ROOT/dist/lib"
FLAVOUR=""
if [ $MPICH = 1 ]; then
  # MPICH's own build: its compiler, its library (found by the loader, no LD_LIBRARY_PATH), Hydra.
  MPICC=$(command -v mpicc.mpich) || { echo "mpi4py.sh: SKIP: mpicc.mpich not installed"; exit 0; }
  LIB=$(mpicc.mpich -show | grep -o -- '-L[^ ]*' | head -1 | cut -c3-)/libmpich.so.12
  [ -f "$LIB" ] || LIB=/usr/lib/x86_64-linux-gnu/libmpich.so.12
  LIBPATH=""
  FLAVOUR="mpich-"
  [ "$LAUNCHER" = "$ROOT/dist/bin/bbrun" ] && LAUNCHER=mpiexec.hydra
elif [ ! -f "$LIB" ] || [ ! -x "$ROOT/dist/bin/mpicc" ]; then
  echo "mpi4py.sh: $LIB or dist/bin/mpicc missing: run make first" >&2
  exit 2
fi
if ! python3 -c 'import venv, sysconfig, os; assert os.path.exists(sysconfig.get_paths()["include"] + "/Python.h")' 2>/dev/null; then
  echo "mpi4py.sh: SKIP: python3 with venv and Python.h needed (apt-get install python3-venv python3-dev)"
  exit 0
fi

# test_util_sync's locks over one-sided atomics, the COMM_WORLD classes: on MPICH a Mutex or
# Semaphore now and then sees a wrong lock state (a rank fails "cannot release unheld mutex" or an
# assertion on the lock) and the others wait in the lock for ever. Probed one test at a time at 2
# ranks (45 s each, 2026-11-28): 13 of their 20 tests hung, the others passed, but
# TestMutexBasicWorld.testExclusion, which passed there, hung the whole suite next, and so did
# TestConditionWorld.testWaitForNotify (it ended with an error when probed), so the five classes
# go whole. Their COMM_SELF twins pass on MPICH.
MPICH_HANGS=(TestConditionMutexWorld TestConditionWorld TestMutexBasicWorld TestMutexRecursiveWorld
  TestSemaphoreWorld)

KEY=$({ nm -D --defined-only "$LIB" | awk '{print $3}' | sort; python3 -V; sed -n '/^build()/,/^}/p' "$0"; } |
  sha256sum | cut -c1-16)
VENV="${BB_CACHE:-$HOME/.cache/billboard}/mpi4py-$FLAVOUR$VERSION-$KEY"

build() {
  rm -rf "$VENV" && python3 -m venv "$VENV" &&
    MPICC="$MPICC" "$VENV/bin/pip" install -q --no-cache-dir --no-binary mpi4py \
      "mpi4py==$VERSION" &&
    "$VENV/bin/pip" download -q --no-deps --no-binary :all: -d "$VENV/src" "mpi4py==$VERSION" &&
    tar -xzf "$VENV"/src/mpi4py-$VERSION.tar.gz -C "$VENV/src" &&
    touch "$VENV/built"
}
mkdir -p "$(dirname "$VENV")"
if [ ! -f "$VENV/built" ]; then
  echo "== building mpi4py $VERSION with $MPICC into $VENV"
  if ! build >"$VENV.log" 2>&1; then
    tail -20 "$VENV.log"
    echo "mpi4py.sh: the build failed (log: $VENV.log)" >&2
    exit 2
  fi
  # Older builds of other export sets are of no use any more, unless a run beside this one (the
  # cache is shared by every checkout) is using one right now: that one stays.
  for old in "$(dirname "$VENV")"/mpi4py-"$FLAVOUR$VERSION"-*; do
    case "$old" in "$VENV" | "$VENV.log") continue ;; esac
    pgrep -f -- "${old%.log}/" >/dev/null || rm -rf "$old"
  done
fi

cd "$VENV/src/mpi4py-$VERSION/test" || exit 2
failed=0
IFS=, read -ra counts <<<"$RANKS"
for n in "${counts[@]}"; do
  log=$(mktemp)
  verbosity=-q
  [ -n "$LOGPREFIX" ] && log=$LOGPREFIX.$n && verbosity=-v && : >"$log"
  excludes=("${EXCLUDES[@]}")
  if [ $MPICH = 1 ] && [ "$n" -gt 1 ]; then
    for name in "${MPICH_HANGS[@]}"; do excludes+=(-x "$name"); done
  fi
  start=$(date +%s)
  # MPIEXEC_TIMEOUT: bbrun and Hydra end the job themselves; `timeout` is the backstop.
  MPIEXEC_TIMEOUT=$TIMEOUT LD_LIBRARY_PATH="$LIBPATH" timeout --kill-after=10 $((TIMEOUT + 15)) \
    $LAUNCHER -n "$n" "$VENV/bin/python" main.py $verbosity "${excludes[@]}" "${MODULES[@]}" >"$log" 2>&1
  rc=$?
  summary=$(grep -E '^(OK|FAILED)' "$log" | sort | uniq -c | tr -s ' ' | paste -sd ';')
  if [ $COUNTS = 1 ]; then
    # unittest's last lines per rank: "Ran N tests", then "OK (skipped=S)" or
    # "FAILED (failures=F, errors=E, skipped=S)"; the first rank's are the figures.
    ran=$(grep -m1 -oE '^Ran [0-9]+ tests' "$log" | grep -oE '[0-9]+')
    last=$(grep -m1 -E '^(OK|FAILED)' "$log")
    num() { echo "$last" | grep -oE "$1=[0-9]+" | cut -d= -f2 | grep . || echo 0; }
    echo "counts $n rank(s): ran ${ran:-?} failures $(num failures) errors $(num errors) skipped $(num skipped) ($last)"
  fi
  if [ $rc -eq 0 ]; then
    echo "mpi4py $n rank(s): passed in $(($(date +%s) - start)) s ($summary)"
  else
    failed=1
    echo "mpi4py $n rank(s): FAILED, exit $rc after $(($(date +%s) - start)) s ($summary)"
    grep -E '^(FAIL|ERROR):' "$log" | sort | uniq -c | head -40
    tail -40 "$log"
  fi
  [ -n "$LOGPREFIX" ] || rm -f "$log"
done
exit $failed
