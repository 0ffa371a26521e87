#!/usr/bin/env python3
"""Generates Billboard's `mpi` module (for gfortran) from mpi.h, as MPICH's mpi.mod has it:

    gen_mpi_module.py MPI_H > mpi_module.f90

* module `mpi_sizeofs`: MPI_SIZEOF's specific procedures under MPICH's names
  (`__mpi_sizeofs_MOD_mpi_sizeof_i` ...). Only their interfaces are used: libmpichfort.so.12
  defines them in C (f77_support.c), for programs built with MPICH's module and ours alike, so
  mpi_module.o is not linked into the library.
* module `mpi`: every name of mpif.h, MPI_SIZEOF, and an explicit interface for each F77
  subroutine that takes no choice buffer (MPICH's mpi_base has the same kind): a call with an
  argument of the wrong type, kind or rank no longer compiles, and keyword arguments work
  (the dummies are named as mpi.h names the C parameters; `ierror` last, not optional).
  Subroutines left to implicit interfaces, as in mpif.h: those with a choice buffer (any
  type), those written by hand (gen.py's SPECIAL: callbacks, attributes, spawn), those with
  weights (MPI_UNWEIGHTED is a scalar where an array is due), the functions MPI-3 deleted,
  and those MPICH 4.0.2's module leaves implicit too (MPICH_IMPLICIT), so that every program
  that compiles with MPICH's module compiles with ours.
"""
import re
import sys

import gen

KINDS = {"MPI_Aint": "integer(MPI_ADDRESS_KIND)", "MPI_Offset": "integer(MPI_OFFSET_KIND)",
         "MPI_Count": "integer(MPI_COUNT_KIND)"}
# int parameters that are LOGICAL in Fortran (as in mpi_f08).
LOGICALS = {"flag", "commute", "reorder", "periods", "remain_dims", "high", "weighted"}

# MPICH's MPI_SIZEOF specifics: (suffix, Fortran type); each also as an array ("v").
SIZEOFS = [("ch", "character(len=*)"), ("cx", "complex"), ("d", "double precision"),
           ("i", "integer"), ("i1", "integer(kind=1)"), ("i2", "integer(kind=2)"),
           ("i8", "integer(kind=8)"), ("l", "logical"), ("r", "real")]


# The SPECIAL routines MPICH's module declares (their Fortran form is not the C one by
# reference; f77_special.c implements them).
HAND_WRITTEN = """
    subroutine MPI_Init(ierror)
      integer :: ierror
    end subroutine
    subroutine MPI_Init_thread(required, provided, ierror)
      integer :: required, provided, ierror
    end subroutine
    subroutine MPI_Info_create_env(info, ierror)
      integer :: info, ierror
    end subroutine
    subroutine MPI_File_create_errhandler(file_errhandler_fn, errhandler, ierror)
      external :: file_errhandler_fn
      integer :: errhandler, ierror
    end subroutine
    subroutine MPI_Comm_spawn(command, argv, maxprocs, info, root, comm, intercomm, array_of_errcodes, ierror)
      character(len=*) :: command, argv(*)
      integer :: maxprocs, info, root, comm, intercomm, array_of_errcodes(*), ierror
    end subroutine
    subroutine MPI_Comm_spawn_multiple(count, array_of_commands, array_of_argv, array_of_maxprocs, &
        array_of_info, root, comm, intercomm, array_of_errcodes, ierror)
      integer :: count
      character(len=*) :: array_of_commands(*), array_of_argv(count, *)
      integer :: array_of_maxprocs(*), array_of_info(*), root, comm, intercomm, array_of_errcodes(*), ierror
    end subroutine
    function MPI_Aint_add(base, disp)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: MPI_Aint_add, base, disp
    end function
    function MPI_Aint_diff(addr1, addr2)
      import :: MPI_ADDRESS_KIND
      integer(kind=MPI_ADDRESS_KIND) :: MPI_Aint_diff, addr1, addr2
    end function
"""


# What MPICH 4.0.2's mpi_base.mod has no interface for, though it could (compared with
# `zcat mpi_base.mod`): MPI-IO but its error handlers (ROMIO binds it apart), some topology
# calls, and the calls on arrays of requests, which F77 programs call with one scalar request
# when the count is 1 (a rank mismatch that an explicit interface would refuse).
MPICH_IMPLICIT_PREFIXES = ("MPI_File_",)
MPICH_EXPLICIT_FILE = {"MPI_File_call_errhandler", "MPI_File_get_errhandler", "MPI_File_set_errhandler"}
MPICH_IMPLICIT = {"MPI_Cart_coords", "MPI_Cart_create", "MPI_Cart_get", "MPI_Cart_map",
                  "MPI_Cart_rank", "MPI_Cart_sub", "MPI_Dims_create", "MPI_Graph_create",
                  "MPI_Graph_neighbors", "MPI_Group_translate_ranks", "MPI_Startall",
                  "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Waitall", "MPI_Waitany",
                  "MPI_Waitsome"}


def declaration(cname, param):
    """The Fortran declaration of one C parameter (no choice buffers come here)."""
    const, ty, depth, name = gen.parse_param(param)
    array = depth >= 1 and "[" in param
    dims = "(*)" if array else ""
    if name == "ranges":
        return "integer :: ranges(3, *)"
    if ty == "char":
        return f"character(len=*) :: {name}"
    if ty.endswith(("_function", "_function_c", "_fn")):
        return f"external :: {name}"
    if ty == "MPI_Status":
        return f"integer :: {name}(MPI_STATUS_SIZE{', *' if array else ''})"
    if ty in KINDS:
        return f"{KINDS[ty]} :: {name}{dims}"
    if ty in gen.INT_LIKE or ty == "MPI_File":
        kind = "logical" if name in LOGICALS else "integer"
        return f"{kind} :: {name}{dims}"
    raise SystemExit(f"gen_mpi_module.py: {cname}: no rule for {param!r}")


def explicit(name, params):
    """Whether F77 subroutine `name` gets an explicit interface (see the module's doc)."""
    if name in gen.SPECIAL or name in gen.F08_ABSENT or name in MPICH_IMPLICIT:
        return False
    if name.startswith(MPICH_IMPLICIT_PREFIXES) and name not in MPICH_EXPLICIT_FILE:
        return False
    parsed = [gen.parse_param(p) for p in params]
    return not (any(ty == "void" for _, ty, _, _ in parsed)
                or any("weights" in n for _, _, _, n in parsed))


def interface(name, params):
    names = [gen.parse_param(p)[3] for p in params] + ["ierror"]
    lines = [f"    subroutine {name}({', '.join(names)})",
             "      import :: MPI_STATUS_SIZE, MPI_ADDRESS_KIND, MPI_OFFSET_KIND, MPI_COUNT_KIND",
             "      implicit none"]
    lines += ["      " + declaration(name, p) for p in params]
    lines += ["      integer :: ierror", "    end subroutine"]
    return "\n".join(gen.wrap(l) for l in lines)


def main():
    header = open(sys.argv[1]).read()
    print("! Generated by crates/mpi/fortran/gen_mpi_module.py from mpi.h: do not edit.")
    print("module mpi_sizeofs\n  implicit none\n  interface MPI_Sizeof")
    print("\n".join(f"    module procedure mpi_sizeof_{s}, mpi_sizeof_{s}v" for s, _ in SIZEOFS))
    print("  end interface\ncontains")
    for s, ty in SIZEOFS:
        for v, dims in (("", ""), ("v", ", dimension(*)")):
            print(f"  subroutine mpi_sizeof_{s}{v}(x, size, ierror)\n    {ty}{dims}, intent(in) :: x\n"
                  f"    integer, intent(out) :: size, ierror\n    size = 0\n    ierror = 0\n  end subroutine")
    print("end module mpi_sizeofs\n")
    print("module mpi\n  use mpi_sizeofs\n  implicit none\n  include 'mpif.h'\n  interface")
    count = 0
    for ret, name, params in gen.c_functions(header):
        if gen.wanted(name) and explicit(name, params):
            print(interface(name, params))
            count += 1
    print(HAND_WRITTEN.rstrip())
    print("  end interface\nend module mpi")
    print(f"gen_mpi_module.py: {count} explicit interfaces", file=sys.stderr)


if __name__ == "__main__":
    main()
