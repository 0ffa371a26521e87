#!/bin/sh
# Runs the C suite (built by build.sh into OUTDIR) under a launcher, one job per line of suite.txt.
#   tests/c/run.sh OUTDIR [LAUNCHER...]      default launcher: mpirun.mpich
# e.g. tests/c/build.sh mpicc.mpich /tmp/ct && tests/c/run.sh /tmp/ct
#      tests/c/run.sh /tmp/ct env LD_LIBRARY_PATH=dist/lib dist/bin/bbrun      (once it exists)
# Prints one line per job (ok/FAILED, seconds) and exits non-zero if any job failed.
# The Rust test tests/tests/c_suite.rs does the same with stricter checks (leftover processes).
set -u
OUT=${1:?usage: run.sh OUTDIR [LAUNCHER...]}
shift
[ $# -eq 0 ] && set -- mpirun.mpich
HERE=$(cd "$(dirname "$0")" && pwd)
export BB_CTEST_TIMEOUT=${BB_CTEST_TIMEOUT:-50}
bad=0
log=$(mktemp)
grep -v '^#' "$HERE/suite.txt" | grep -v '^[[:space:]]*$' | while read -r prog ranks expect args; do
    for n in $(echo "$ranks" | tr ',' ' '); do
        t0=$(date +%s.%N)
        timeout -k 5 90 "$@" -n "$n" "$OUT/$prog" $args </dev/null >"$log" 2>&1
        rc=$?
        t1=$(date +%s.%N)
        secs=$(echo "$t1 - $t0" | bc)
        ok=1
        grep -q '^FAIL' "$log" && ok=0
        case $expect in
        pass) [ $rc -eq 0 ] && grep -qx "PASS $prog" "$log" || ok=0 ;;
        abort) [ $rc -ne 0 ] && ! grep -q '^PASS' "$log" || ok=0
            grep -q '^ABORTING abort' "$log" || echo "  note: ABORTING line lost (Hydra may drop output on abort)" ;;
        fatal) [ $rc -ne 0 ] && ! grep -q '^PASS' "$log" || ok=0
            grep -q '^ABOUT TO FAIL fatal' "$log" || echo "  note: ABOUT TO FAIL line lost"
            grep -v '^ABOUT TO FAIL' "$log" | grep -q 'MPI_Send' || echo "  note: fatal error message does not name MPI_Send" ;;
        esac
        if [ $ok -eq 1 ]; then
            printf 'ok      %-12s n=%d %-10s %6.2fs\n' "$prog" "$n" "$args" "$secs"
        else
            printf 'FAILED  %-12s n=%d %-10s %6.2fs rc=%d\n' "$prog" "$n" "$args" "$secs" $rc
            sed 's/^/    | /' "$log" | head -20
            echo x >>"$log.bad"
        fi
    done
done
[ -e "$log.bad" ] && bad=1
rm -f "$log" "$log.bad"
exit $bad
