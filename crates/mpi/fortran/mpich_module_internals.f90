! What programs built with MPICH's own Fortran modules (Debian's mpif90.mpich) may call in
! libmpichfort.so.12 beyond the MPI procedures: the parts gfortran generates for the derived
! types of MPICH's modules (each type's vtab, copy and default-initialisation, referenced by a
! program that puts an MPI handle into a CLASS(*) or an allocatable of it) and the == and /=
! of the handle types of module mpi_constants (what `use mpi` offers of the MPI-3 types).
! The modules, types and procedures carry MPICH 4.0.2's names and layouts (one default integer
! MPI_VAL per handle; the five status words), so gfortran gives them MPICH's symbol names
! (__mpi_f08_types_MOD___vtab_mpi_f08_types_Mpi_comm, __mpi_constants_MOD_commeq, ...).
! Programs built with our own modules use mpi_f08's instead. Compiled into libmpichfort.so.12
! by build.sh; its .mod files are not installed.

module mpi_f08_types
  implicit none
  private
  type, bind(C), public :: MPI_Comm
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Datatype
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Errhandler
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_File
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Group
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Info
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Message
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Op
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Request
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Session
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Win
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Status
    integer :: count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR
  end type
  public :: bb_f08_type_descriptors
contains
  ! Makes gfortran emit every type's descriptors here (never called; stat= keeps the
  ! library free of libgfortran).
  subroutine bb_f08_type_descriptors(x)
    class(*), allocatable, intent(out) :: x
    integer :: ios
    allocate(x, source=MPI_Comm(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Datatype(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Errhandler(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_File(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Group(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Info(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Message(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Op(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Request(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Session(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Win(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Status(0, 0, 0, 0, 0), stat=ios)
  end subroutine
end module mpi_f08_types

module mpi_c_interface_types
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  private
  type, bind(C), public :: C_Status
    integer(c_int) :: count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR
  end type
  public :: bb_c_status_descriptors
contains
  subroutine bb_c_status_descriptors(x)
    class(*), allocatable, intent(out) :: x
    integer :: ios
    allocate(x, source=C_Status(0, 0, 0, 0, 0), stat=ios)
  end subroutine
end module mpi_c_interface_types

module mpi_constants
  implicit none
  private
  type, bind(C), public :: MPI_Comm
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Datatype
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Errhandler
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_File
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Group
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Info
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Message
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Op
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Request
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Win
    integer :: MPI_VAL
  end type
  type, bind(C), public :: MPI_Status
    integer :: count_lo, count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR
  end type
  public :: commeq, commneq
  public :: datatypeeq, datatypeneq
  public :: errhandlereq, errhandlerneq
  public :: fileeq, fileneq
  public :: groupeq, groupneq
  public :: infoeq, infoneq
  public :: messageeq, messageneq
  public :: opeq, opneq
  public :: requesteq, requestneq
  public :: wineq, winneq
  public :: bb_constants_descriptors
contains
  elemental logical function commeq(x, y)
    type(MPI_Comm), intent(in) :: x, y
    commeq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function commneq(x, y)
    type(MPI_Comm), intent(in) :: x, y
    commneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function datatypeeq(x, y)
    type(MPI_Datatype), intent(in) :: x, y
    datatypeeq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function datatypeneq(x, y)
    type(MPI_Datatype), intent(in) :: x, y
    datatypeneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function errhandlereq(x, y)
    type(MPI_Errhandler), intent(in) :: x, y
    errhandlereq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function errhandlerneq(x, y)
    type(MPI_Errhandler), intent(in) :: x, y
    errhandlerneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function fileeq(x, y)
    type(MPI_File), intent(in) :: x, y
    fileeq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function fileneq(x, y)
    type(MPI_File), intent(in) :: x, y
    fileneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function groupeq(x, y)
    type(MPI_Group), intent(in) :: x, y
    groupeq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function groupneq(x, y)
    type(MPI_Group), intent(in) :: x, y
    groupneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function infoeq(x, y)
    type(MPI_Info), intent(in) :: x, y
    infoeq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function infoneq(x, y)
    type(MPI_Info), intent(in) :: x, y
    infoneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function messageeq(x, y)
    type(MPI_Message), intent(in) :: x, y
    messageeq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function messageneq(x, y)
    type(MPI_Message), intent(in) :: x, y
    messageneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function opeq(x, y)
    type(MPI_Op), intent(in) :: x, y
    opeq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function opneq(x, y)
    type(MPI_Op), intent(in) :: x, y
    opneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function requesteq(x, y)
    type(MPI_Request), intent(in) :: x, y
    requesteq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function requestneq(x, y)
    type(MPI_Request), intent(in) :: x, y
    requestneq = x%MPI_VAL /= y%MPI_VAL
  end function
  elemental logical function wineq(x, y)
    type(MPI_Win), intent(in) :: x, y
    wineq = x%MPI_VAL == y%MPI_VAL
  end function
  elemental logical function winneq(x, y)
    type(MPI_Win), intent(in) :: x, y
    winneq = x%MPI_VAL /= y%MPI_VAL
  end function
  subroutine bb_constants_descriptors(x)
    class(*), allocatable, intent(out) :: x
    integer :: ios
    allocate(x, source=MPI_Comm(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Datatype(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Errhandler(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_File(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Group(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Info(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Message(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Op(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Request(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Win(0), stat=ios); deallocate(x, stat=ios)
    allocate(x, source=MPI_Status(0, 0, 0, 0, 0), stat=ios)
  end subroutine
end module mpi_constants

! The string helpers MPICH's own f08 procedures call between Fortran and C strings. Programs
! never call them directly, but libmpichfort.so.12 exports them, so ours does too, with the
! same behaviour: f2c drops leading and trailing blanks and ends the C string with NUL (it
! stops at the end of cstring, leaving room for the NUL); c2f copies up to the NUL (or the end
! of either string) and pads the rest of fstring with blanks.
module mpi_c_interface_glue
  use, intrinsic :: iso_c_binding, only: c_char, c_null_char
  implicit none
  private
  public :: MPIR_Fortran_string_f2c, MPIR_Fortran_string_c2f
contains
  ! Plain loops, not len_trim/verify: the library is linked without libgfortran.
  subroutine MPIR_Fortran_string_f2c(fstring, cstring)
    character(len=*), intent(in) :: fstring
    character(kind=c_char), intent(out) :: cstring(:)
    integer :: first, last, n, i
    if (size(cstring) < 1) return
    first = 1
    last = len(fstring)
    do while (last >= 1)
      if (ichar(fstring(last:last)) /= ichar(' ')) exit
      last = last - 1
    end do
    do while (first <= last)
      if (ichar(fstring(first:first)) /= ichar(' ')) exit
      first = first + 1
    end do
    n = min(last - first + 1, size(cstring) - 1)
    do i = 1, n
      cstring(i) = fstring(first + i - 1:first + i - 1)
    end do
    cstring(max(n, 0) + 1) = c_null_char
  end subroutine

  subroutine MPIR_Fortran_string_c2f(cstring, fstring)
    character(kind=c_char), intent(in) :: cstring(:)
    character(len=*), intent(out) :: fstring
    integer :: i
    fstring = ' '
    do i = 1, min(size(cstring), len(fstring))
      if (ichar(cstring(i)) == 0) exit
      fstring(i:i) = cstring(i)
    end do
  end subroutine
end module mpi_c_interface_glue
