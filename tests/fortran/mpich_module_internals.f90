! Built with MPICH's mpif90.mpich only: what a program built with MPICH's modules references in
! libmpichfort.so.12 beyond the MPI procedures. An MPI handle put into a CLASS(*)
! (gfortran's descriptors of MPICH's mpi_f08_types: vtab, copy, default initialisation), and
! == and /= on the handle types `use mpi` offers (module mpi_constants). Before Billboard's
! library had them, the program did not load ("undefined symbol:
! __mpi_f08_types_MOD___vtab_mpi_f08_types_Mpi_comm"). (A TYPE(MPI_Status) in a CLASS(*) crashes
! in MPICH's own library, in its defined assignment of statuses: not tried.) And the string
! helpers of MPICH's module mpi_c_interface_glue (its .mod is installed, so a program may use
! them; before Billboard's library had them: "undefined symbol:
! __mpi_c_interface_glue_MOD_mpir_fortran_string_f2c"). Prints "PASS mpich_module_internals".
module internals_checks
  implicit none
contains
  subroutine check(ok, what)
    use mpi_f08, only: MPI_Abort, MPI_COMM_WORLD
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print '(a,a)', 'FAIL ', what
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine

  ! `use mpi`'s handle types, compared.
  subroutine compare_mpi_types()
    use mpi
    type(MPI_Comm) :: a, b
    type(MPI_Request) :: r
    a%MPI_VAL = MPI_COMM_WORLD
    b = a
    call check(a == b .and. .not. (a /= b), "== and /= on use mpi's TYPE(MPI_Comm)")
    b%MPI_VAL = MPI_COMM_SELF
    call check(a /= b .and. .not. (a == b), "/= on two communicators")
    r%MPI_VAL = MPI_REQUEST_NULL
    call check(r == r, "== on TYPE(MPI_Request)")
  end subroutine

  ! mpi_f08's handles and status in polymorphic variables.
  subroutine polymorphic_f08(rank)
    use mpi_f08
    integer, intent(in) :: rank
    class(*), allocatable :: x, y
    type(MPI_Comm) :: comm
    type(MPI_Status) :: status
    integer :: size
    comm = MPI_COMM_WORLD
    allocate(x, source=comm)
    call check(storage_size(x) == storage_size(comm), "storage size of a CLASS(*) holding a communicator")
    allocate(y, source=x) ! through the type's copy procedure
    call check(storage_size(y) == 32, "storage size of its copy")
    deallocate(x, y)
    call MPI_Sendrecv(rank, 1, MPI_INTEGER, rank, 3, size, 1, MPI_INTEGER, rank, 3, comm, status)
    allocate(x, source=MPI_REQUEST_NULL)
    call check(storage_size(x) == 32, "storage size of a CLASS(*) holding a request")
    deallocate(x)
    call check(status%MPI_TAG == 3 .and. size == rank, "a message to self")
  end subroutine

  ! MPICH's string helpers: f2c drops leading and trailing blanks and ends with NUL; c2f copies
  ! up to the NUL and pads with blanks.
  subroutine string_helpers()
    use, intrinsic :: iso_c_binding, only: c_char, c_null_char
    use mpi_c_interface_glue, only: MPIR_Fortran_string_f2c, MPIR_Fortran_string_c2f
    character(kind=c_char) :: c(12)
    character(len=8) :: f
    c = 'x'
    call MPIR_Fortran_string_f2c('  ab c   ', c)
    call check(all(c(1:5) == ['a', 'b', ' ', 'c', c_null_char]), "f2c trims both ends and ends with NUL")
    call check(c(6) == 'x', "f2c writes nothing past the NUL")
    call MPIR_Fortran_string_f2c('     ', c)
    call check(c(1) == c_null_char, "f2c of a blank string is empty")
    c = 'x'
    c(1:4) = ['h', 'i', '!', c_null_char]
    f = 'zzzzzzzz'
    call MPIR_Fortran_string_c2f(c, f)
    call check(f == 'hi!', "c2f copies up to the NUL")
    call check(f(4:8) == '     ', "c2f pads with blanks")
  end subroutine
end module

program mpich_module_internals
  use mpi_f08, only: MPI_Init, MPI_Finalize, MPI_Comm_rank, MPI_COMM_WORLD
  use internals_checks
  implicit none
  integer :: rank
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call compare_mpi_types()
  call polymorphic_f08(rank)
  call string_helpers()
  call MPI_Finalize()
  if (rank == 0) print '(a)', 'PASS mpich_module_internals'
end program
