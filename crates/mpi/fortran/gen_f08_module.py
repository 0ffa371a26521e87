#!/usr/bin/env python3
"""Generates Billboard's `mpi_f08` module from mpi.h (the interfaces) and our generated mpif.h
(the values), so it cannot drift from the C library or from f08_wrappers.c.

    gen_f08_module.py MPI_H MPIF_H > mpi_f08.f90

Every procedure is a generic name (MPI_Send) over the specific entries f08_wrappers.c exports
(MPI_Send_f08ts -> mpi_send_f08ts_, MPI_Send_f08ts_large for INTEGER(KIND=MPI_COUNT_KIND)
counts), with MPICH's conventions: handles are TYPE(MPI_Comm) etc. holding MPI_VAL, choice
buffers TYPE(*), DIMENSION(..), ierror optional. The procedures written by hand in C (gen.py's
SPECIAL) have their interfaces in SPECIAL_INTERFACES below.
"""
import re
import sys

import gen

HANDLES = ["MPI_Comm", "MPI_Datatype", "MPI_Errhandler", "MPI_File", "MPI_Group", "MPI_Info",
           "MPI_Message", "MPI_Op", "MPI_Request", "MPI_Session", "MPI_Win"]
KINDS = {"MPI_Aint": "integer(MPI_ADDRESS_KIND)", "MPI_Offset": "integer(MPI_OFFSET_KIND)",
         "MPI_Count": "integer(MPI_COUNT_KIND)"}
# int parameters that are LOGICAL in Fortran.
LOGICALS = {"flag", "commute", "reorder", "periods", "remain_dims", "high", "weighted"}

# MPI_Sizeof's specific procedures: (name, Fortran type).
SIZEOF_TYPES = [(f"int{b}", f"integer(int{b})") for b in (8, 16, 32, 64)] + \
    [(f"real{b}", f"real(real{b})") for b in (32, 64, 128)] + \
    [(f"complex{b}", f"complex(real{b})") for b in (32, 64, 128)] + \
    [("logical", "logical"), ("character", "character(len=*)")]

SPECIAL_INTERFACES = """
  interface MPI_Init
    subroutine MPI_Init_f08(ierror)
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_Init_thread
    subroutine MPI_Init_thread_f08(required, provided, ierror)
      integer, intent(in) :: required
      integer, intent(out) :: provided
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_Wtime
    double precision function MPI_Wtime_f08()
    end function
  end interface
  interface MPI_Wtick
    double precision function MPI_Wtick_f08()
    end function
  end interface
  interface MPI_Aint_add
    function MPI_Aint_add_f08(base, disp) result(r)
      import
      integer(MPI_ADDRESS_KIND), intent(in) :: base, disp
      integer(MPI_ADDRESS_KIND) :: r
    end function
  end interface
  interface MPI_Aint_diff
    function MPI_Aint_diff_f08(addr1, addr2) result(r)
      import
      integer(MPI_ADDRESS_KIND), intent(in) :: addr1, addr2
      integer(MPI_ADDRESS_KIND) :: r
    end function
  end interface
  interface MPI_Pcontrol
    subroutine MPI_Pcontrol_f08(level, ierror)
      integer, intent(in) :: level
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_Info_create_env
    subroutine MPI_Info_create_env_f08(info, ierror)
      import
      type(MPI_Info), intent(out) :: info
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_F_sync_reg
    subroutine MPI_F_sync_reg_f08ts(buf)
      type(*), dimension(..) :: buf
    end subroutine
  end interface
"""
# Attribute get/set and keyval creation, one per object kind.
for kind in ("Comm", "Type", "Win"):
    obj = {"Comm": "MPI_Comm", "Type": "MPI_Datatype", "Win": "MPI_Win"}[kind]
    SPECIAL_INTERFACES += f"""
  interface MPI_{kind}_get_attr
    subroutine MPI_{kind}_get_attr_f08(obj, keyval, attribute_val, flag, ierror)
      import
      type({obj}), intent(in) :: obj
      integer, intent(in) :: keyval
      integer(MPI_ADDRESS_KIND), intent(out) :: attribute_val
      logical, intent(out) :: flag
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_{kind}_set_attr
    subroutine MPI_{kind}_set_attr_f08(obj, keyval, attribute_val, ierror)
      import
      type({obj}), intent(in) :: obj
      integer, intent(in) :: keyval
      integer(MPI_ADDRESS_KIND), intent(in) :: attribute_val
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_{kind}_create_keyval
    subroutine MPI_{kind}_create_keyval_f08(copy_fn, delete_fn, keyval, extra_state, ierror)
      import
      external :: copy_fn, delete_fn
      integer, intent(out) :: keyval
      integer(MPI_ADDRESS_KIND), intent(in) :: extra_state
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
"""
SPECIAL_INTERFACES += """
  interface MPI_Grequest_start
    subroutine MPI_Grequest_start_f08(query_fn, free_fn, cancel_fn, extra_state, request, ierror)
      import
      external :: query_fn, free_fn, cancel_fn
      integer(MPI_ADDRESS_KIND), intent(in) :: extra_state
      type(MPI_Request), intent(out) :: request
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_Register_datarep
    subroutine MPI_Register_datarep_f08(datarep, read_fn, write_fn, extent_fn, extra_state, ierror)
      import
      character(len=*), intent(in) :: datarep
      external :: read_fn, write_fn, extent_fn
      integer(MPI_ADDRESS_KIND), intent(in) :: extra_state
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_File_create_errhandler
    subroutine MPI_File_create_errhandler_f08(fn, errhandler, ierror)
      import
      external :: fn
      type(MPI_Errhandler), intent(out) :: errhandler
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_Comm_spawn
    subroutine MPI_Comm_spawn_f08(command, argv, maxprocs, info, root, comm, intercomm, &
                                  array_of_errcodes, ierror)
      import
      character(len=*), intent(in) :: command, argv(*)
      integer, intent(in) :: maxprocs, root
      type(MPI_Info), intent(in) :: info
      type(MPI_Comm), intent(in) :: comm
      type(MPI_Comm), intent(out) :: intercomm
      integer :: array_of_errcodes(*)
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
  interface MPI_Comm_spawn_multiple
    subroutine MPI_Comm_spawn_multiple_f08(count, array_of_commands, array_of_argv, &
        array_of_maxprocs, array_of_info, root, comm, intercomm, array_of_errcodes, ierror)
      import
      integer, intent(in) :: count, root
      character(len=*), intent(in) :: array_of_commands(*), array_of_argv(count, *)
      integer, intent(in) :: array_of_maxprocs(*)
      type(MPI_Info), intent(in) :: array_of_info(*)
      type(MPI_Comm), intent(in) :: comm
      type(MPI_Comm), intent(out) :: intercomm
      integer :: array_of_errcodes(*)
      integer, optional, intent(out) :: ierror
    end subroutine
  end interface
"""


def declaration(cname, param):
    """The Fortran declaration of one C parameter, and whether it is a choice buffer."""
    const, ty, depth, name = gen.parse_param(param)
    intent = ", intent(in)" if depth == 0 or const else ""
    dims = "(*)" if depth >= 1 and re.search(r"\[", param) else ""
    if name == "ranges":
        return f"integer{intent} :: ranges(3, *)", False
    if ty == "void" and name not in gen.F08_NOT_CHOICE:
        return f"type(*), dimension(..){intent} :: {name}", True
    if ty == "void":
        return f"type(c_ptr) :: {name}", False
    if ty == "char":
        return f"character(len=*){intent} :: {name}{dims}", False
    if ty.endswith(("_function", "_function_c", "_fn")):
        return f"external :: {name}", False
    if ty == "MPI_Status":
        return f"type(MPI_Status){intent} :: {name}{dims}", False
    if ty in HANDLES:
        return f"type({ty}){intent} :: {name}{dims}", False
    if ty in KINDS:
        return f"{KINDS[ty]}{intent} :: {name}{dims}", False
    if ty in ("int", "MPI_Fint"):
        kind = "logical" if name in LOGICALS else "integer"
        return f"{kind}{intent} :: {name}{dims}", False
    raise SystemExit(f"gen_f08_module.py: {cname}: no rule for {param!r}")


def interface(cname, params):
    decls, buffer = [], False
    for p in params:
        d, b = declaration(cname, p)
        decls.append(d)
        buffer |= b
    large = cname.endswith("_c")
    base = cname[:-2] if large else cname
    # The generic is the C name (MPIX_Delete_error_class too, as in MPICH's module); the
    # specific is named as MPICH's Fortran library exports it.
    specific = gen.fortran_name(base) + f"_f08{'ts' if buffer else ''}{'_large' if large else ''}"
    names = [gen.parse_param(p)[3] for p in params] + ["ierror"]
    lines = [f"    subroutine {specific}({', '.join(names)})", "      import"]
    lines += ["      " + d for d in decls]
    lines += ["      integer, optional, intent(out) :: ierror", "    end subroutine"]
    return base, "\n".join(gen.wrap(l) for l in lines)


def constants(header, mpif_h):
    """(name, Fortran type, value) for every PARAMETER of mpif.h, typed as mpi.h casts it."""
    cast = dict(re.findall(r"^#define\s+(MPI_\w+)\s+\(\((MPI_[A-Za-z]+)\)", header, re.M))
    alias = dict(re.findall(r"^#define\s+(MPI_\w+)\s+(MPI_[A-Z0-9_]+)\s*$", header, re.M))
    out = []
    for m in re.finditer(r"^\s+PARAMETER \((MPI_\w+)=(-?\d+)\)$", mpif_h, re.M):
        name, value = m.group(1), m.group(2)
        ty = cast.get(name) or cast.get(alias.get(name, ""))
        out.append((name, ty if ty in HANDLES else None, value))
    return out


def main():
    header = open(sys.argv[1]).read()
    mpif_h = open(sys.argv[2]).read()
    print("! Generated by crates/mpi/fortran/gen_f08_module.py from mpi.h and mpif.h: do not edit.")
    print("module mpi_f08")
    print("  use, intrinsic :: iso_c_binding, only: c_ptr, c_int")
    print("  implicit none")
    for name in ("MPI_ADDRESS_KIND", "MPI_OFFSET_KIND", "MPI_COUNT_KIND", "MPI_INTEGER_KIND"):
        value = re.search(rf"{name}=(\d+)", mpif_h).group(1)
        print(f"  integer, parameter :: {name} = {value}")
    print("  integer, parameter :: MPI_STATUS_SIZE = 5")
    print("  integer, parameter :: MPI_SOURCE = 3, MPI_TAG = 4, MPI_ERROR = 5")
    for h in HANDLES:
        print(f"  type, bind(C) :: {h}\n    integer :: MPI_VAL\n  end type")
    print("  type, bind(C) :: MPI_Status\n    integer :: count_lo, count_hi_and_cancelled\n"
          "    integer :: MPI_SOURCE, MPI_TAG, MPI_ERROR\n  end type")
    for name, ty, value in constants(header, mpif_h):
        if name.endswith("_KIND") or name == "MPI_STATUS_SIZE":
            continue
        if ty:
            print(f"  type({ty}), parameter :: {name} = {ty}({value})")
        else:
            print(f"  integer, parameter :: {name} = {value}")
    print("  logical, parameter :: MPI_SUBARRAYS_SUPPORTED = .true.")
    print("  logical, parameter :: MPI_ASYNC_PROTECTS_NONBLOCKING = .false.")
    # The sentinels: libmpi's objects by their C names, this library's by MPICH's module names.
    print('  integer(c_int), bind(C, name="MPIR_F08_MPI_BOTTOM"), target :: MPI_BOTTOM')
    print('  integer(c_int), bind(C, name="MPIR_F08_MPI_IN_PLACE"), target :: MPI_IN_PLACE')
    print('  type(MPI_Status), bind(C, name="MPIR_F08_MPI_STATUS_IGNORE_OBJ"), target :: MPI_STATUS_IGNORE')
    print('  type(MPI_Status), bind(C, name="MPIR_F08_MPI_STATUSES_IGNORE_OBJ"), target :: MPI_STATUSES_IGNORE(1)')
    for f, ty in (("errcodes_ignore", "integer"), ("unweighted", "integer"),
                  ("weights_empty", "integer"), ("argv_null", "character(len=1)"),
                  ("argvs_null", "character(len=1)")):
        print(f'  {ty}, bind(C, name="__mpi_f08_link_constants_MOD_mpi_{f}"), target :: MPI_{f.upper()}(1)')
    # The predefined callbacks: the Fortran-convention functions of f77_callbacks.c.
    print("  external :: MPI_COMM_NULL_COPY_FN, MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN")
    print("  external :: MPI_TYPE_NULL_COPY_FN, MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN")
    print("  external :: MPI_WIN_NULL_COPY_FN, MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN")
    print("  external :: MPI_CONVERSION_FN_NULL")
    generics = {}
    for ret, name, params in gen.c_functions(header):
        if gen.wanted_f08(name) and name not in gen.SPECIAL and name.removesuffix("_c") not in gen.SPECIAL:
            base, text = interface(name, params)
            generics.setdefault(base, []).append(text)
    for base, bodies in generics.items():
        print(f"  interface {base}")
        print("\n".join(bodies))
        print("  end interface")
    print(SPECIAL_INTERFACES)
    # MPI_Status_f082f / MPI_Status_f2f08: the same five words.
    print("  interface MPI_Status_f082f\n    module procedure status_f082f\n  end interface")
    print("  interface MPI_Status_f2f08\n    module procedure status_f2f08\n  end interface")
    # MPI_Sizeof: one module procedure per intrinsic type and kind.
    print("  interface MPI_Sizeof")
    print("\n".join(f"    module procedure sizeof_{n}" for n, _ in SIZEOF_TYPES))
    print("  end interface")
    # == and /= on handles: module procedures (mpi_f08.o is linked into libmpichfort.so.12).
    print("  interface operator(==)")
    print("\n".join(f"    module procedure {h[4:].lower()}_eq" for h in HANDLES))
    print("  end interface\n  interface operator(/=)")
    print("\n".join(f"    module procedure {h[4:].lower()}_neq" for h in HANDLES))
    print("  end interface\ncontains")
    for h in HANDLES:
        t = h[4:].lower()
        for op, fn in (("==", "eq"), ("/=", "neq")):
            print(f"  elemental logical function {t}_{fn}(a, b)\n    type({h}), intent(in) :: a, b\n"
                  f"    {t}_{fn} = a%MPI_VAL {op} b%MPI_VAL\n  end function")
    print("  subroutine status_f082f(f08_status, f_status, ierror)\n"
          "    type(MPI_Status), intent(in) :: f08_status\n    integer, intent(out) :: f_status(5)\n"
          "    integer, optional, intent(out) :: ierror\n"
          "    f_status = [f08_status%count_lo, f08_status%count_hi_and_cancelled, &\n"
          "                f08_status%MPI_SOURCE, f08_status%MPI_TAG, f08_status%MPI_ERROR]\n"
          "    if (present(ierror)) ierror = MPI_SUCCESS\n  end subroutine")
    print("  subroutine status_f2f08(f_status, f08_status, ierror)\n"
          "    integer, intent(in) :: f_status(5)\n    type(MPI_Status), intent(out) :: f08_status\n"
          "    integer, optional, intent(out) :: ierror\n"
          "    f08_status = MPI_Status(f_status(1), f_status(2), f_status(3), f_status(4), f_status(5))\n"
          "    if (present(ierror)) ierror = MPI_SUCCESS\n  end subroutine")
    for n, ty in SIZEOF_TYPES:
        print(f"  subroutine sizeof_{n}(x, size, ierror)\n    use, intrinsic :: iso_fortran_env\n"
              f"    {ty}, dimension(..), intent(in) :: x\n    integer, intent(out) :: size\n"
              f"    integer, optional, intent(out) :: ierror\n    size = storage_size(x) / 8\n"
              f"    if (present(ierror)) ierror = MPI_SUCCESS\n  end subroutine")
    print("end module mpi_f08")


if __name__ == "__main__":
    main()
