#!/usr/bin/env bash
# bench/device/bundle.sh [DEST]: packs everything bench/device/run.sh needs on a bare machine
# (no MPICH, no Open MPI, no network, maybe an older glibc) into one ignored folder, DEST
# (default .dev/, carried to the device machine beside the tree):
#
#   bb/      our release build (dist/ after `make`): real/{bbrun,bb-bench}, lib/libmpi.so.12 (+ libmpich.so.12)
#   mpich/   Debian's MPICH 4.0 runtime: real/{mpiexec.hydra,hydra_pmi_proxy}, lib/libmpich.so.12
#   ompi/    Debian's Open MPI 4.1 runtime: real/{orterun,orted,ompi_info}, lib/ (libmpi.so.40,
#            libopen-rte, libopen-pal, libmca_common_*, openmpi3/ = the MCA components without
#            the hardware ones: ucx, ofi, openib/verbs, psm), share/{openmpi,pmix} help files, etc/
#   peers/   bench/peers/{coll,pingpong,rma}.c built with mpicc.mpich (-mpich) and mpicc.openmpi (-openmpi)
#   lib/     every other shared library those need (collected with ldd; ucx/ and pmix/ plugins)
#   sys/lib/ this machine's glibc (ld-linux-x86-64.so.2, libc, libm, ...), libgcc_s, libstdc++:
#            used only in "loader" mode, when the host's glibc is older than the bundle needs
#   */bin/   a wrapper per program (below); launch/ the entry points, one per command, that set the
#            environment of their MPI (LD_LIBRARY_PATH, OPAL_*, PMIX_*, UCX_MODULE_DIR) and exec it
#
# Every program runs through its wrapper bin/NAME, which execs real/NAME either directly
# (BBDEV_MODE=direct) or through the carried loader (BBDEV_MODE=loader:
# `sys/lib/ld-linux-x86-64.so.2 --argv0 bin/NAME --library-path LIBS real/NAME`). The wrapper
# keeps argv[0] = bin/NAME, so mpiexec.hydra finds bin/hydra_pmi_proxy (a wrapper too) and the
# ranks that bbrun, Hydra and orterun start are wrappers as well: every process of a job uses the
# same loader. launch/* pick the mode when BBDEV_MODE is unset: loader if the host's glibc is
# older than GLIBC_NEEDED (the newest symbol version any carried file asks for), else direct.
#
# Needs: dist/ built (`make`; DIST=... for another), mpicc.mpich, mpicc.openmpi, ldd, strip.
# Test it with bench/device/run.sh (RANKS="2 4" SHORT=1), BBDEV_MODE=direct and =loader.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DEST=${1:-.dev}
DIST=${DIST:-dist}
ARCH=/usr/lib/x86_64-linux-gnu
log() { printf 'bundle.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for f in "$DIST/bin/bbrun" "$DIST/bin/bb-bench" "$DIST/lib/libmpi.so.12"; do
    [ -e "$f" ] || die "no $f: run 'make' first (or DIST=...)"
done
for t in mpicc.mpich mpicc.openmpi mpiexec.hydra hydra_pmi_proxy orterun orted ldd strip objdump; do
    command -v "$t" >/dev/null || die "needs $t (apt-get install mpich libmpich-dev openmpi-bin libopenmpi-dev binutils)"
done

rm -rf "$DEST"
mkdir -p "$DEST"/{bb,mpich,ompi,peers}/{bin,real} "$DEST"/{bb,mpich,ompi}/lib "$DEST"/lib/{ucx,pmix} \
    "$DEST"/sys/lib "$DEST"/launch "$DEST"/ompi/{share,etc}
DEST=$(cd "$DEST" && pwd)

# copy SRC DIR [NAME]: the real file behind SRC, as DIR/NAME (default: SRC's own name).
copy() { install -m 0755 "$(readlink -f "$1")" "$2/${3:-$(basename "$1")}"; }

# --- our build ------------------------------------------------------------------------------
copy "$DIST/bin/bbrun" "$DEST/bb/real"
copy "$DIST/bin/bb-bench" "$DEST/bb/real"
copy "$DIST/lib/libmpi.so.12" "$DEST/bb/lib"
ln -s libmpi.so.12 "$DEST/bb/lib/libmpich.so.12"
ln -s libmpi.so.12 "$DEST/bb/lib/libmpi.so"

# --- the peers ------------------------------------------------------------------------------
CFLAGS=(-O2 -Wall -Wextra -Wno-stringop-overflow)
for p in coll pingpong rma; do
    mpicc.mpich "${CFLAGS[@]}" -o "$DEST/peers/real/$p-mpich" "bench/peers/$p.c" -lm
    mpicc.openmpi "${CFLAGS[@]}" -o "$DEST/peers/real/$p-openmpi" "bench/peers/$p.c" -lm
done

# --- MPICH ----------------------------------------------------------------------------------
copy "$(command -v mpiexec.hydra)" "$DEST/mpich/real"
copy "$(command -v hydra_pmi_proxy)" "$DEST/mpich/real"
copy "$ARCH/libmpich.so.12" "$DEST/mpich/lib"
# UCX finds its transport modules in <dir of libucs.so.0>/ucx (and UCX_MODULE_DIR): shared
# memory through CMA only; ib and rdmacm need hardware.
[ -e "$ARCH/ucx/libuct_cma.so.0" ] && copy "$ARCH/ucx/libuct_cma.so.0" "$DEST/lib/ucx"

# --- Open MPI -------------------------------------------------------------------------------
OMPI_LIB=$ARCH/openmpi/lib
for b in orterun orted ompi_info; do copy "$(command -v $b)" "$DEST/ompi/real"; done
for l in libmpi.so.40 libopen-rte.so.40 libopen-pal.so.40; do copy "$ARCH/$l" "$DEST/ompi/lib"; done
SKIP='ucx|ofi|openib|verbs|psm|cuda|flux|java|oshmem|spml|sshmem|scoll|memheap|atomic_|monitoring'
for l in "$OMPI_LIB"/libmca_common_*.so; do
    n=$(basename "$l")
    [[ $n =~ $SKIP ]] && continue
    soname=$(objdump -p "$l" | awk '/SONAME/ { print $2 }')
    copy "$l" "$DEST/ompi/lib" "${soname:-$n}"
done
mkdir -p "$DEST/ompi/lib/openmpi3"
for c in "$OMPI_LIB"/openmpi3/*.so; do
    n=$(basename "$c")
    [[ $n =~ $SKIP ]] && continue
    copy "$c" "$DEST/ompi/lib/openmpi3"
done
cp -r /usr/share/openmpi "$DEST/ompi/share/openmpi"
[ -d /usr/share/pmix ] && cp -r /usr/share/pmix "$DEST/ompi/share/pmix"
cp /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$DEST/ompi/etc/"
for c in "$ARCH"/pmix2/lib/pmix/*.so; do copy "$c" "$DEST/lib/pmix"; done

# --- shared libraries they need -------------------------------------------------------------
# glibc's own libraries must match the loader that runs them, so they live in sys/lib (loader
# mode only); the host provides them in direct mode.
GLIBC_RE='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1|libnsl\.so\.1|libmvec\.so\.1|libBrokenLocale\.so\.1|libgcc_s\.so\.1|libstdc\+\+\.so\.6)$'
elfs() { find "$DEST" -type f ! -path "$DEST/sys/*" -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print; }
LDPATH="$DEST/bb/lib:$DEST/ompi/lib:$DEST/lib"
missing=0
for round in 1 2; do
    while read -r f; do
        # MPICH-linked files resolve against MPICH's library, not ours
        case $f in *-mpich|*/mpich/*) lp="$DEST/mpich/lib:$DEST/ompi/lib:$DEST/lib" ;; *) lp=$LDPATH ;; esac
        LD_LIBRARY_PATH=$lp ldd "$f" 2>/dev/null | awk '/=>/ { print $1, $3 } /ld-linux/ && !/=>/ { print "ld-linux-x86-64.so.2", $1 }'
    done < <(elfs) | sort -u | while read -r name path; do
        [ "$path" = "not" ] && { log "unresolved: $name"; continue; }
        case $path in "$DEST"/*) continue ;; esac
        if [[ $name =~ $GLIBC_RE ]]; then
            [ -e "$DEST/sys/lib/$name" ] || copy "$path" "$DEST/sys/lib" "$name"
        elif [ ! -e "$DEST/lib/$name" ]; then
            copy "$path" "$DEST/lib" "$name"
        fi
    done
done
# the loader itself, and the glibc pieces a dlopen may want
for name in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libgcc_s.so.1; do
    [ -e "$DEST/sys/lib/$name" ] || copy "/lib/x86_64-linux-gnu/$name" "$DEST/sys/lib" "$name"
done
if elfs | while read -r f; do
    case $f in *-mpich|*/mpich/*) lp="$DEST/mpich/lib:$DEST/lib" ;; *) lp="$DEST/bb/lib:$DEST/ompi/lib:$DEST/lib" ;; esac
    LD_LIBRARY_PATH=$lp ldd "$f" 2>/dev/null | grep -q 'not found' && { log "still unresolved in $f:"; LD_LIBRARY_PATH=$lp ldd "$f" | grep 'not found' >&2; echo x; }
done | grep -q x; then die "some libraries stay unresolved"; fi

# --- strip, and the glibc the bundle needs --------------------------------------------------
find "$DEST" -type f ! -path "$DEST/sys/*" -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print |
    while read -r f; do strip --strip-unneeded "$f" 2>/dev/null || true; done
strip --strip-unneeded "$DEST"/sys/lib/libstdc++.so.6 2>/dev/null || true
elfs | xargs objdump -T 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1 >"$DEST/GLIBC_NEEDED"
ldd --version | sed -n 1p >"$DEST/GLIBC_BUILT"
# MPICH's library is 41 MB; gzip leaves 13 (the carry limit is 64 MiB with the tree): launch/*
# unpack it on first use, outside the bundle (gzip, or python3 where gzip is missing).
gzip -9 "$DEST/mpich/lib/libmpich.so.12"

# --- wrappers -------------------------------------------------------------------------------
wrapper() { # DIR NAME
    cat >"$1/bin/$2" <<'EOF'
#!/bin/bash
# Generated by bench/device/bundle.sh: runs ../real/NAME directly, or through the carried
# loader when BBDEV_LOADER is set (launch/* set it, and BBDEV_LIBPATH, in loader mode).
real="${0%/bin/*}/real/${0##*/}"
if [ -n "${BBDEV_LOADER:-}" ]; then
    exec -a "$0" "$BBDEV_LOADER" --argv0 "$0" --library-path "$BBDEV_LIBPATH" "$real" "$@"
fi
exec -a "$0" "$real" "$@"
EOF
    chmod 0755 "$1/bin/$2"
}
for d in bb mpich ompi peers; do
    for f in "$DEST/$d"/real/*; do wrapper "$DEST/$d" "$(basename "$f")"; done
done
ln -s orterun "$DEST/ompi/bin/mpirun"

# mode.sh: sourced by launch/*; sets the environment of one MPI. bbdev_env IMPL.
cat >"$DEST/launch/mode.sh" <<'EOF'
# Generated by bench/device/bundle.sh. Sourced by launch/*: bbdev_env bb|mpich|ompi exports the
# environment of that MPI inside the bundle; BBDEV_MODE=direct|loader (default: loader when the
# host's glibc is older than the bundle's GLIBC_NEEDED, or unknown).
BBDEV=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bbdev_mode() {
    local host need
    need=$(cat "$BBDEV/GLIBC_NEEDED")
    host=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
    [ -n "$host" ] || host=$(ldd --version 2>/dev/null | head -n 1 | grep -o '[0-9]\+\.[0-9]\+$')
    if [ -n "$host" ] && [ "$(printf '%s\n%s\n' "$need" "$host" | sort -V | head -n 1)" = "$need" ]; then
        echo direct
    else
        echo loader
    fi
}
# MPICH's library travels gzipped; it is unpacked outside the bundle (which stays as carried),
# into BBDEV_UNPACKED (default ${TMPDIR:-/tmp}/bbdev-mpich-<size>-<mtime of the .gz>).
BBDEV_GZ="$BBDEV/mpich/lib/libmpich.so.12.gz"
BBDEV_UNPACKED=${BBDEV_UNPACKED:-${TMPDIR:-/tmp}/bbdev-mpich-$(stat -c %s-%Y "$BBDEV_GZ")}
bbdev_unpack() {
    local so="$BBDEV_UNPACKED/libmpich.so.12"
    [ -e "$so" ] && return 0
    mkdir -p "$BBDEV_UNPACKED" || return 1
    { gzip -dc "$BBDEV_GZ" 2>/dev/null || python3 -c 'import gzip, shutil, sys; shutil.copyfileobj(gzip.open(sys.argv[1]), sys.stdout.buffer)' "$BBDEV_GZ"; } >"$so.$$" &&
        chmod 0755 "$so.$$" && mv -f "$so.$$" "$so" && ln -sf libmpich.so.12 "$BBDEV_UNPACKED/libmpi.so.12"
}
bbdev_env() {
    local libs
    bbdev_unpack
    case $1 in
        bb) libs="$BBDEV/bb/lib" ;;
        mpich) libs="$BBDEV_UNPACKED:$BBDEV/mpich/lib:$BBDEV/lib" ;;
        ompi) libs="$BBDEV/ompi/lib:$BBDEV/lib" ;;
    esac
    export BBDEV_MODE=${BBDEV_MODE:-$(bbdev_mode)}
    if [ "$BBDEV_MODE" = loader ]; then
        export BBDEV_LOADER="$BBDEV/sys/lib/ld-linux-x86-64.so.2" BBDEV_LIBPATH="$libs:$BBDEV/sys/lib"
        unset LD_LIBRARY_PATH
    else
        unset BBDEV_LOADER BBDEV_LIBPATH
        export LD_LIBRARY_PATH="$libs"
    fi
    export UCX_MODULE_DIR="$BBDEV/lib/ucx" HWLOC_PLUGINS_PATH="$BBDEV/lib/hwloc"
    if [ "$1" = ompi ]; then
        local p="$BBDEV/ompi"
        export OPAL_PREFIX="$p" OPAL_EXEC_PREFIX="$p" OPAL_BINDIR="$p/bin" OPAL_SBINDIR="$p/bin" \
            OPAL_LIBEXECDIR="$p/bin" OPAL_LIBDIR="$p/lib" OPAL_PKGLIBDIR="$p/lib/openmpi3" \
            OPAL_INCLUDEDIR="$p/include" OPAL_PKGINCLUDEDIR="$p/include" OPAL_DATAROOTDIR="$p/share" \
            OPAL_DATADIR="$p/share" OPAL_PKGDATADIR="$p/share/openmpi" OPAL_SYSCONFDIR="$p/etc" \
            OPAL_SHAREDSTATEDIR="$p/com" OPAL_LOCALSTATEDIR="$p/var" OPAL_MANDIR="$p/man" OPAL_INFODIR="$p/info" \
            PMIX_INSTALL_PREFIX="$p" PMIX_PKGLIBDIR="$BBDEV/lib/pmix" PMIX_PKGDATADIR="$p/share/pmix" \
            PMIX_SYSCONFDIR="$p/etc" PMIX_MCA_mca_base_component_path="$BBDEV/lib/pmix" \
            OMPI_MCA_mca_base_component_path="$p/lib/openmpi3" \
            OMPI_MCA_mca_base_param_files="$p/etc/openmpi-mca-params.conf" \
            OMPI_MCA_orte_default_hostfile="$p/etc/openmpi-default-hostfile" \
            OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
}
EOF
launcher() { # NAME IMPL PROGRAM [ARGS...]: launch/NAME = env of IMPL + exec PROGRAM ARGS "$@"
    local name=$1 impl=$2 prog=$3
    shift 3
    {
        echo '#!/bin/bash'
        echo "# Generated by bench/device/bundle.sh: $prog with the environment of $impl."
        echo 'source "$(dirname "$0")/mode.sh"'
        echo "bbdev_env $impl"
        echo "exec \"\$BBDEV/$prog\" $* \"\$@\""
    } >"$DEST/launch/$name"
    chmod 0755 "$DEST/launch/$name"
}
launcher bbrun bb bb/bin/bbrun
launcher bb-bench bb bb/bin/bb-bench
launcher mpiexec.hydra mpich mpich/bin/mpiexec.hydra
launcher mpirun.openmpi ompi ompi/bin/orterun
launcher ompi_info ompi ompi/bin/ompi_info

log "$(du -sh "$DEST" | cut -f1) in $DEST (needs glibc $(cat "$DEST/GLIBC_NEEDED"); built with $(cat "$DEST/GLIBC_BUILT"))"
