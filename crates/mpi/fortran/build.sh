#!/bin/sh
# Builds Billboard's Fortran binding (called by the Makefile after cargo has built libmpi):
#   crates/mpi/fortran/build.sh LIBMPI_DIR OUT_DIR
# writes OUT_DIR/libmpichfort.so.12 (F77 and the mpi_f08 entries, linked against LIBMPI_DIR/libmpi.so), OUT_DIR/mpif.h and
# OUT_DIR/mpi.mod (+ the other .mod files gfortran writes for the `mpi` module).
# $CC (default gcc) and $FC (default gfortran) are the compilers; the C files are wrappers only.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
cc=${CC:-gcc}
fc=${FC:-gfortran}
python3 "$here/gen.py" "$here/../include/mpi.h" "$out"
# mpif.h first: its values come from running a C program built against our mpi.h.
$cc -I"$here/../include" "$out/mpif_gen.c" -o "$out/mpif_gen"
"$out/mpif_gen" > "$out/mpif.h.new" && mv "$out/mpif.h.new" "$out/mpif.h"
# The modules first (the library links mpi_f08.o): `mpi` is mpif.h's names in a module
# (mpi_module.f90); `mpi_f08` is generated from mpi.h and mpif.h (gen_f08_module.py). Without
# a Fortran compiler the library and mpif.h are still built (they need only the C compiler).
rm -f "$out/mpi.mod" "$out/mpi_f08.mod" "$out/mpi_f08.o"
fortran_objs=
cflags_f08=
if command -v "$fc" >/dev/null 2>&1; then
  (cd "$out" && $fc -c -I"$out" "$here/mpi_module.f90" -o "$out/mpi_module.o")
  python3 "$here/gen_f08_module.py" "$here/../include/mpi.h" "$out/mpif.h" > "$out/mpi_f08.f90"
  (cd "$out" && $fc -c -fPIC -O1 "$out/mpi_f08.f90" -o "$out/mpi_f08.o")
  fortran_objs="$out/mpi_f08.o"
  cflags_f08=-DBBF_HAVE_F08_MODULE
else
  echo "build.sh: $fc not found: no mpi.mod or mpi_f08.mod (set FC to a Fortran compiler)" >&2
fi
# -fPIC with default visibility and no -Bsymbolic: the common blocks must bind to a program's copy.
objs=
for src in "$out/f77_wrappers.c" "$here/f77_support.c" "$here/f77_special.c" "$here/f77_callbacks.c" \
           "$out/f08_wrappers.c" "$here/f08_support.c" "$here/f08_special.c"; do
  obj="$out/$(basename "$src" .c).o"
  $cc -O2 -fPIC -Wall -Wextra -Werror $cflags_f08 -I"$here/../include" -I"$here" -c "$src" -o "$obj"
  objs="$objs $obj"
done
# ld warns that mpi_f08.o aligns MPIR_F08_MPI_STATUS(ES)_IGNORE_OBJ more than libmpi does: the
# module only names libmpi's objects (bind(C) commons, resolved to libmpi's), so it is harmless.
# shellcheck disable=SC2086
$cc -shared -Wl,-soname,libmpichfort.so.12 -Wl,--no-undefined -o "$out/libmpichfort.so.12" $objs $fortran_objs \
  -L"$libdir" -lmpi
