#!/usr/bin/env bash
# Runs Debian's ScaLAPACK test programs built for MPICH (package scalapack-mpi-test) the way
# their CTestTestfile.cmake files list them (4 ranks each, in the folder of the list, beside its
# .dat input files), with our launcher and MPI library (dist/bin/bbrun, which puts dist/lib
# first on the library path), or with another launcher for comparison.
#
#   scripts/scalapack.sh                          every program under dist/bin/bbrun
#   scripts/scalapack.sh xdlu xzqr                those two
#   scripts/scalapack.sh --launcher mpirun.mpich  the same list under MPICH's own library
#   scripts/scalapack.sh --repeat 50 --dat my.dat xdlu
#                                                 xdlu 50 times, reading my.dat as its LU.dat
#
# Options:
#   --launcher CMD   the launcher, word-split, run as `CMD -n 4 ./PROG` (default dist/bin/bbrun)
#   --timeout S      seconds one run may take before it counts as hung (default 300)
#   --repeat N       run each program named N times, reporting how many runs failed (every
#                    failure counts here, also of the programs known to fail under MPICH)
#   --dat FILE       install FILE as the input file the (one) program named reads (the .dat
#                    name its binary holds, such as LU.dat for x?lu)
#   --logs DIR       keep every run's output in DIR (default: a temporary folder, removed)
#   --tests DIR      the tests' folder (default /usr/lib/x86_64-linux-gnu/scalapack/mpich-tests)
#
# A run passes as CTest would pass it (the lists set no PASS_/FAIL_REGULAR_EXPRESSION, so by
# exit code; this script stops if a list ever sets a property it does not know) and when the
# program's own report holds no failure: the testers print a line per case ending in PASSED or
# FAILED, a count of "tests completed and failed residual checks", and ScaLAPACK's error
# handler says "had an illegal value" for a bad argument. A run that does not end within
# --timeout is killed (MPIEXEC_TIMEOUT, which both bbrun and Hydra honour, with `timeout` as a
# backstop) and counts as hung, a failure too. Each failure is shown with the lines that prove
# it. Exit status: 0 when nothing failed, 1 otherwise, 2 for a usage error.
#
# Not run here: the BLACS testers (BLACS/CTestTestfile.cmake: xCbtest, xFbtest). They end by
# testing BLACS_ABORT, which kills the job on purpose (exit status not 0 under MPICH either),
# so they pass by their report instead: tests/tests/fortran.rs runs them on our Fortran library.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# Programs that fail under MPICH's own mpirun.mpich and library too, so a failure of theirs
# under bbrun says nothing about Billboard: reported as "known failing under MPICH too" and not
# counted as failures. Each with the evidence seen under MPICH 4.0.2 (Debian's ch4:ucx).
declare -A KNOWN_BAD_UNDER_MPICH=(
  # The ranks part ways in PSPORFS (iterative refinement): two stay in PSLACON's loop (in
  # PSASUM's and PSAMAX's collectives) while the others have left it for PSPOTRS, so the job
  # waits forever. Under mpirun.mpich it hangs at the same place as under bbrun: after the same
  # 109 PASSED rows, on the first case of the 2x2 grid; with LLT.dat reduced to that case (N=4,
  # NB=2, NRHS=1, P=Q=2) it hung in 2 of 3 runs. Upstream: Reference-ScaLAPACK/scalapack issue
  # 121 ("LU, LLT tests deadlocks", xsllt stuck in psamax_ under Open MPI 5).
  [xsllt]="hangs in PSPORFS under MPICH too (Reference-ScaLAPACK/scalapack#121)"
  # The root of that hang, and of the LU testers' "PDGETRS parameter number 1 had an illegal
  # value" then hang: P?LACON (called by P?GERFS and P?PORFS) reads its output EST before setting
  # it, so each rank branches on whatever its stack held there (upstream fix: PR 122,
  # "EST = ZERO", after Debian's 2.2.1). valgrind --track-origins: "Conditional jump depends on
  # uninitialised value ... pdlacon_ by pdgerfs_; created by a stack allocation at pdgerfs_".
  # Whether a run fails depends on stack contents and ASLR, not on the MPI library: with the
  # grids 1x2 and 2x1 of issue 16's LU.dat, xdlu failed 2 of 10 runs under mpirun.mpich; with
  # ASLR off (setarch -R) it passed 12 of 12 under MPICH and failed 12 of 12 under bbrun (the
  # libraries leave different stack contents). With the LU.dat and LLT.dat shipped here these
  # pass in every run so far, but may fail the same way.
  [xslu]="may fail in PSGERFS (uninitialised EST in PSLACON, Reference-ScaLAPACK/scalapack#121)"
  [xdlu]="may fail in PDGERFS (uninitialised EST in PDLACON, Reference-ScaLAPACK/scalapack#121)"
  [xclu]="may fail in PCGERFS (uninitialised EST in PCLACON, Reference-ScaLAPACK/scalapack#121)"
  [xzlu]="may fail in PZGERFS (uninitialised EST in PZLACON, Reference-ScaLAPACK/scalapack#121)"
  [xdllt]="may fail in PDPORFS (uninitialised EST in PDLACON, Reference-ScaLAPACK/scalapack#121)"
  [xcllt]="may fail in PCPORFS (uninitialised EST in PCLACON, Reference-ScaLAPACK/scalapack#121)"
  [xzllt]="may fail in PZPORFS (uninitialised EST in PZLACON, Reference-ScaLAPACK/scalapack#121)"
  # The tester itself: PSSEPRTST passes VL, VU, IL, IU to PSSEPRSUBTST uninitialised for
  # RANGE='A', and the subtest branches on them (valgrind --track-origins, the same 9 reports
  # under mpiexec.mpich and bbrun: "Conditional jump ... depends on uninitialised value(s) ...
  # created by a stack allocation" in PSSEPRTST's frame). Under `setarch -R mpiexec.mpich -n 4`
  # it failed 3 of 3 runs (N=6 cases of TEST 5: "6 1 2 1 8 N ... 0.70 1.2 FAILED"), and it failed
  # the same way under bbrun beside busy loops; it passed 3 of 3 under `setarch -R bbrun`.
  # TEST 7's PDSYEVX rows of clustered eigenvalues on the 3x1 grid (`27 1 3 1 10` or
  # `27 2 3 1 10 N ... EVX`) fail their orthogonality check (QTQ 55-100 against 50) now and
  # then: the program's results differ run to run in the last bits, because BLACS combines
  # (tag 9976 and upward) receive with MPI_ANY_SOURCE and fold in arrival order. Under
  # mpiexec.mpich it failed 1 of 40 runs (row `27 2 3 1 10`), 1 of 16 with random delays of up
  # to 200 us before sends (LD_PRELOAD); under bbrun 2 of 110. (A root that folded right to left
  # made it fail 10 of 30: reductions now fold in the tree's order, coll/schedule.rs.)
  [xdsep]="may fail in TEST 7 (PDSYEVX QTQ on clustered eigenvalues; BLACS combines in arrival order)"
  [xssyevr]="may fail in TEST 5/6 (PSSEPRTST passes uninitialised VL, VU, IL, IU to PSSEPRSUBTST)"
)

TESTS=/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests
LAUNCHER="$ROOT/dist/bin/bbrun"
TIMEOUT=300
REPEAT=0
DAT=
LOGS=
PROGRAMS=()

usage() {
  echo "scalapack.sh: $1" >&2
  echo "usage: scripts/scalapack.sh [--launcher CMD] [--timeout S] [--repeat N] [--dat FILE] [--logs DIR] [--tests DIR] [PROGRAM...]" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --launcher) [ $# -ge 2 ] || usage "--launcher needs a command"; LAUNCHER=$2; shift 2 ;;
    --timeout) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage "--timeout needs a positive number of seconds"; TIMEOUT=$2; shift 2 ;;
    --repeat) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage "--repeat needs a positive count"; REPEAT=$2; shift 2 ;;
    --dat) [ -f "${2:-}" ] || usage "--dat needs an existing file"; DAT=$(realpath "$2"); shift 2 ;;
    --logs) [ $# -ge 2 ] || usage "--logs needs a folder"; LOGS=$2; shift 2 ;;
    --tests) [ -d "${2:-}" ] || usage "--tests needs a folder"; TESTS=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) usage "unknown option $1" ;;
    *) PROGRAMS+=("$1"); shift ;;
  esac
done

if [ ! -f "$TESTS/CTestTestfile.cmake" ]; then
  echo "SKIP ScaLAPACK: $TESTS/CTestTestfile.cmake is missing (apt-get install scalapack-mpi-test)"
  exit 0
fi
read -r -a LAUNCH <<<"$LAUNCHER"
if ! command -v "${LAUNCH[0]}" >/dev/null; then
  usage "launcher ${LAUNCH[0]} not found (for dist/bin/bbrun, run make first)"
fi
if [ -n "$DAT" ] && [ ${#PROGRAMS[@]} -ne 1 ]; then
  usage "--dat needs exactly one program named"
fi
if [ "$REPEAT" -gt 0 ] && [ ${#PROGRAMS[@]} -eq 0 ]; then
  usage "--repeat needs the programs to repeat named"
fi

# The tests run in a copy: the .dat files are links into /usr/share, and some testers write.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bb-scalapack.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cp -rL "$TESTS/." "$WORK/tests"
if [ -n "$LOGS" ]; then mkdir -p "$LOGS"; else LOGS="$WORK/logs"; mkdir -p "$LOGS"; fi

# The lists: one line per test, "FOLDER<TAB>NAME<TAB>RANKS<TAB>PROGRAM [ARGS]", in the order
# CTest runs them. The installed tree is flat: the top list's subdirs("LIN") and ("EIG") are
# not there, and the top list itself names those programs.
LIST="$WORK/list"
: >"$LIST"
SKIPPED=()
while IFS= read -r file; do
  dir=$(dirname "$file")
  rel=${dir#"$WORK/tests"}
  rel=${rel#/}
  if [ "$rel" = BLACS ]; then
    mapfile -t blacs < <(sed -n 's/^add_test(\([A-Za-z0-9_]*\) .*/\1/p' "$file")
    SKIPPED+=("${blacs[@]}")
    continue
  fi
  unknown=$(grep -o 'set_tests_properties([^ ]* PROPERTIES .*' "$file" | sed 's/ _BACKTRACE_TRIPLES "[^"]*"//' |
    grep -v 'PROPERTIES *)$' || true)
  if [ -n "$unknown" ]; then
    echo "scalapack.sh: $file sets test properties this script does not apply: $unknown" >&2
    exit 2
  fi
  # add_test(xslu "/usr/bin/mpiexec.mpich" "-n" "4" ${MPIEXEC_PREFLAGS} "./xslu")
  while IFS= read -r line; do
    name=$(sed 's/^add_test(\([A-Za-z0-9_]*\) .*/\1/' <<<"$line")
    mapfile -t words < <(grep -o '"[^"]*"' <<<"$line" | sed 's/^"//; s/"$//')
    if [ "${words[1]:-}" != -n ] || ! [[ ${words[2]:-} =~ ^[0-9]+$ ]] || [ ${#words[@]} -lt 4 ]; then
      echo "scalapack.sh: cannot read this test of $file: $line" >&2
      exit 2
    fi
    printf '%s\t%s\t%s\t%s\n' "${rel:-.}" "$name" "${words[2]}" "${words[*]:3}" >>"$LIST"
  done < <(grep '^add_test(' "$file")
done < <(find "$WORK/tests" -name CTestTestfile.cmake | sort)

if [ ${#PROGRAMS[@]} -gt 0 ]; then
  for p in "${PROGRAMS[@]}"; do
    cut -f2 "$LIST" | grep -qx -- "$p" || usage "no test named $p (the names are those of the CTestTestfile.cmake lists)"
  done
  selected=$(printf '%s\n' "${PROGRAMS[@]}")
  awk -F'\t' 'NR == FNR { want[$0] = 1; next } $2 in want' <(echo "$selected") "$LIST" >"$LIST.sel"
  mv "$LIST.sel" "$LIST"
fi

if [ -n "$DAT" ]; then
  IFS=$'\t' read -r dir name _ command <"$LIST"
  binary="$WORK/tests/$dir/${command%% *}"
  mapfile -t inputs < <(strings "$binary" | grep -xE '[A-Z0-9]+\.dat' | sort -u)
  if [ ${#inputs[@]} -ne 1 ]; then
    usage "cannot tell which input file $name reads (its binary names: ${inputs[*]:-none})"
  fi
  cp "$DAT" "$WORK/tests/$dir/${inputs[0]}"
  echo "== $name reads $DAT as its ${inputs[0]}"
fi

# Prints the lines of log $1 that show a failure; none: it passed by its own report. The LAPACK
# style testers end each case's line with PASSED or FAILED and count "tests completed and failed
# residual checks"; the PBLAS testers print "***** ... FAILED *****" per failed check, and a
# summary table whose header (not a failure) names a FAILED column.
failure_lines() {
  grep -E 'FAILED|illegal value|^ *[1-9][0-9]* tests completed and failed' "$1" |
    grep -vE '^ *SUBROUTINE +TOTAL TESTS +PASSED +FAILED' | head -n 8
}

# Runs one test; prints its verdict; returns 0 passed, 1 failed, 3 hung.
run_one() {
  local dir=$1 name=$2 ranks=$3 command=$4 log=$5 start rc secs evidence
  local -a argv
  read -r -a argv <<<"$command"
  start=$EPOCHREALTIME
  (cd "$WORK/tests/$dir" &&
    MPIEXEC_TIMEOUT=$TIMEOUT timeout -k 5 $((TIMEOUT + 30)) "${LAUNCH[@]}" -n "$ranks" "${argv[@]}") >"$log" 2>&1 </dev/null
  rc=$?
  secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  if [ $rc -eq 124 ] || [ $rc -eq 137 ] || grep -qE 'APPLICATION TIMED OUT|exceeded MPIEXEC_TIMEOUT' "$log"; then
    echo "HUNG $name: no end within $TIMEOUT s (exit $rc); its last lines:"
    tail -n 5 "$log" | sed 's/^/    /'
    return 3
  fi
  evidence=$(failure_lines "$log")
  if [ $rc -ne 0 ]; then
    echo "FAIL $name: exit $rc after $secs s; its last lines:"
    { [ -n "$evidence" ] && echo "$evidence"; tail -n 8 "$log"; } | sed 's/^/    /'
    return 1
  fi
  if [ -n "$evidence" ]; then
    echo "FAIL $name: exit 0 after $secs s, but its report says:"
    echo "$evidence" | sed 's/^/    /'
    return 1
  fi
  echo "PASS $name ($secs s)"
  return 0
}

passed=0
failed=0
hung=0
known=()
began=$(date +%s)
echo "== ScaLAPACK tests of $TESTS under ${LAUNCH[*]}, $TIMEOUT s each; outputs in $LOGS"
while IFS=$'\t' read -r dir name ranks command; do
  runs=$((REPEAT > 0 ? REPEAT : 1))
  for ((i = 1; i <= runs; i++)); do
    log="$LOGS/$name.log"
    [ "$runs" -gt 1 ] && log="$LOGS/$name.$i.log"
    run_one "$dir" "$name" "$ranks" "$command" "$log"
    verdict=$?
    if [ $verdict -eq 0 ]; then
      passed=$((passed + 1))
    elif [ "$REPEAT" -eq 0 ] && [ -n "${KNOWN_BAD_UNDER_MPICH[$name]:-}" ]; then
      echo "     $name is known failing under MPICH too: ${KNOWN_BAD_UNDER_MPICH[$name]}"
      known+=("$name")
    else
      failed=$((failed + 1))
      [ $verdict -eq 3 ] && hung=$((hung + 1))
    fi
  done
done <"$LIST"

summary="$passed passed, $failed failed"
[ $hung -gt 0 ] && summary+=" ($hung of them hung)"
[ ${#known[@]} -gt 0 ] && summary+="; ${#known[@]} known failing under MPICH too (${known[*]})"
[ ${#SKIPPED[@]} -gt 0 ] && [ ${#PROGRAMS[@]} -eq 0 ] &&
  summary+="; skipped the BLACS testers ${SKIPPED[*]} (tests/tests/fortran.rs runs them)"
echo "== $summary; $(($(date +%s) - began)) s in all"
[ $failed -eq 0 ]
