! The `mpi` module's explicit interfaces and MPI_SIZEOF (built with our mpif90 and with
! mpif90.mpich, run on our library): calls by keyword (the dummies' names are MPI's), LOGICAL
! flags and periods, status arrays, address-kind displacements, and MPI_Sizeof of scalars and
! arrays of several types. A call with a wrong argument type does not compile (fortran.rs).
! Prints "PASS use_mpi_interfaces" on rank 0.
program use_mpi_interfaces
  use mpi
  implicit none
  integer :: ierr, rank, nproc, half, cart, dims(1), coords(1), newtype, sz, n
  integer :: reqs(2), statuses(MPI_STATUS_SIZE, 2), sendv, recvv, info, group, cls
  integer(kind=MPI_ADDRESS_KIND) :: lb, extent, disps(2)
  logical :: periods(1), flag
  character(len=MPI_MAX_INFO_VAL) :: value
  double precision :: d(3)
  integer(kind=8) :: i8
  character(len=7) :: c
  call MPI_Init(ierror=ierr)
  call MPI_Comm_rank(comm=MPI_COMM_WORLD, rank=rank, ierror=ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size=nproc, ierror=ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, color=mod(rank, 2), key=rank, newcomm=half, ierror=ierr)
  call MPI_Comm_size(half, n, ierr)
  if (n /= (nproc + 1 - mod(rank, 2)) / 2) call fail('MPI_Comm_split by keyword')
  dims(1) = nproc
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call MPI_Cart_coords(cart, rank, 1, coords, ierr)
  if (coords(1) /= rank) call fail('MPI_Cart_coords')
  call MPI_Comm_test_inter(cart, flag, ierr)
  if (flag) call fail('MPI_Comm_test_inter of a cartesian communicator')
  ! Status arrays through MPI_Waitall.
  sendv = rank
  call MPI_Irecv(recvv, 1, MPI_INTEGER, mod(rank + nproc - 1, nproc), 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(sendv, 1, MPI_INTEGER, mod(rank + 1, nproc), 5, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, statuses, ierr)
  if (recvv /= mod(rank + nproc - 1, nproc) .or. statuses(MPI_SOURCE, 1) /= recvv) call fail('MPI_Waitall')
  ! Address-kind displacements.
  disps = [0_MPI_ADDRESS_KIND, 16_MPI_ADDRESS_KIND]
  call MPI_Type_create_struct(2, [1, 1], disps, [MPI_INTEGER, MPI_DOUBLE_PRECISION], newtype, ierr)
  call MPI_Type_get_extent(newtype, lb, extent, ierr)
  if (lb /= 0 .or. extent /= 24) call fail('MPI_Type_get_extent of a struct')
  call MPI_Type_free(newtype, ierr)
  ! Strings and a LOGICAL flag.
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, key='bb_key', value='on', ierror=ierr)
  call MPI_Info_get(info, 'bb_key', MPI_MAX_INFO_VAL, value, flag, ierr)
  if (.not. flag .or. value /= 'on') call fail('MPI_Info_get')
  call MPI_Info_free(info, ierr)
  call MPI_Comm_group(MPI_COMM_WORLD, group, ierr)
  call MPI_Group_size(group, n, ierr)
  if (n /= nproc) call fail('MPI_Group_size')
  call MPI_Group_free(group, ierr)
  call MPI_Add_error_class(cls, ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_Add_error_class')
  ! MPI_SIZEOF through the module.
  call MPI_Sizeof(d, sz, ierr)
  if (sz /= 8) call fail('MPI_Sizeof of a double precision array')
  call MPI_Sizeof(i8, sz, ierr)
  if (sz /= 8) call fail('MPI_Sizeof of an integer(8)')
  call MPI_Sizeof(c, sz, ierr)
  if (sz /= 1) call fail('MPI_Sizeof of a character')
  call MPI_Sizeof(flag, sz, ierr)
  if (sz /= 4 .or. ierr /= MPI_SUCCESS) call fail('MPI_Sizeof of a logical')
  ! Hand-declared interfaces: MPI_Aint_add/diff as functions; spawn's sentinels (compiled, not
  ! run: nproc is never negative).
  if (MPI_Aint_diff(MPI_Aint_add(100_MPI_ADDRESS_KIND, 28_MPI_ADDRESS_KIND), 100_MPI_ADDRESS_KIND) /= 28) &
    call fail('MPI_Aint_add/MPI_Aint_diff')
  if (nproc < 0) then
    call MPI_Comm_spawn('x', MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, n, MPI_ERRCODES_IGNORE, ierr)
    call MPI_Comm_spawn_multiple(1, ['x'], MPI_ARGVS_NULL, [1], [MPI_INFO_NULL], 0, MPI_COMM_SELF, n, &
                                 MPI_ERRCODES_IGNORE, ierr)
  end if
  call MPI_Comm_free(half, ierr)
  call MPI_Comm_free(cart, ierr)
  call MPI_Finalize(ierr)
  if (rank == 0) print '(a)', 'PASS use_mpi_interfaces'
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,i0)', 'FAIL use_mpi_interfaces: ', what, ' on rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine
end program
