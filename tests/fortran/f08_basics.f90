! mpi_f08 on Billboard, built with our mpifort and module or with MPICH's mpif90.mpich and its
! module (both call the same entries of our libmpichfort.so.12): optional
! ierror, TYPE(MPI_Status) and the ignore sentinels, choice buffers passed as gfortran array
! descriptors (scalars, 2-D arrays, contiguous and strided sections), MPI_IN_PLACE, a large-count call, a
! user reduction with TYPE(C_PTR) arguments, handle comparisons, attributes, names, an error
! returned. Prints "PASS f08_basics" on rank 0; a failed check prints FAIL and aborts.
module f08_checks
  use mpi_f08
  implicit none
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print '(a,a)', 'FAIL ', what
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine

  subroutine absmax(invec, inoutvec, len, datatype)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
    type(c_ptr), value :: invec, inoutvec
    integer :: len
    type(MPI_Datatype) :: datatype
    integer, pointer :: a(:), b(:)
    call c_f_pointer(invec, a, [len])
    call c_f_pointer(inoutvec, b, [len])
    b = max(abs(a), abs(b))
  end subroutine
end module

program f08_basics
  use mpi_f08
  use f08_checks
  implicit none
  integer :: rank, nproc, next, prev, ierr, n, count, cls, x, y
  integer :: grid(3, 2), gathered(2, 64), vals(4), mat(3, 4), row(3, 4)
  integer(kind=MPI_COUNT_KIND) :: big_count
  integer(kind=MPI_ADDRESS_KIND) :: tag_ub
  type(MPI_Comm) :: dup, dup2
  integer :: keyval
  type(MPI_Status) :: status, status2
  integer :: fstatus(MPI_STATUS_SIZE)
  type(MPI_Request) :: reqs(2)
  type(MPI_Op) :: op
  logical :: flag
  character(len=MPI_MAX_OBJECT_NAME) :: cname

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  call check(ierr == MPI_SUCCESS, 'ierror present')
  next = mod(rank + 1, nproc)
  prev = mod(rank + nproc - 1, nproc)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call check(dup /= MPI_COMM_NULL .and. .not. (dup == MPI_COMM_WORLD), 'handle comparison')

  ! Scalars and a status object; MPI_STATUS_IGNORE.
  x = rank * 3
  call MPI_Sendrecv(x, 1, MPI_INTEGER, next, 1, y, 1, MPI_INTEGER, prev, 1, dup, status)
  call check(y == prev * 3 .and. status%MPI_SOURCE == prev .and. status%MPI_TAG == 1, 'sendrecv')
  call MPI_Get_count(status, MPI_INTEGER, count)
  call check(count == 1, 'get_count')
  call MPI_Status_f082f(status, fstatus)
  call check(fstatus(MPI_SOURCE) == prev .and. fstatus(MPI_TAG) == 1, 'MPI_Status_f082f')
  call MPI_Status_f2f08(fstatus, status2)
  call check(status2%MPI_SOURCE == prev .and. status2%MPI_TAG == 1, 'MPI_Status_f2f08')
  call MPI_Sendrecv(x, 1, MPI_INTEGER, next, 2, y, 1, MPI_INTEGER, prev, 2, dup, MPI_STATUS_IGNORE)
  call check(y == prev * 3, 'MPI_STATUS_IGNORE')

  ! A 2-D array and contiguous sections, nonblocking, MPI_STATUSES_IGNORE.
  grid = reshape([(rank * 10 + n, n = 1, 6)], [3, 2])
  gathered = -1
  call MPI_Irecv(gathered(:, 1), 2, MPI_INTEGER, prev, 3, dup, reqs(1))
  call MPI_Isend(grid(:, 2), 2, MPI_INTEGER, next, 3, dup, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  call check(gathered(1, 1) == prev * 10 + 4 .and. gathered(2, 1) == prev * 10 + 5, 'sections')
  ! Non-contiguous sections (rows of a matrix, every other element), sent and received.
  mat = reshape([(rank * 100 + n, n = 1, 12)], [3, 4])
  row = -1
  call MPI_Sendrecv(mat(2, :), 4, MPI_INTEGER, next, 4, row(3, :), 4, MPI_INTEGER, prev, 4, &
                    dup, MPI_STATUS_IGNORE)
  call check(all(row(3, :) == [(prev * 100 + 2 + 3 * n, n = 0, 3)]) .and. all(row(1:2, :) == -1), &
             'row sections')
  ! (MPICH 4.0.2's own library gets this one wrong: it reads mat(1:2, 1), ignoring the stride.)
  call MPI_Allreduce(mat(1, 1:4:2), vals(1:2), 2, MPI_INTEGER, MPI_MAX, dup)
  call check(vals(1) == (nproc - 1) * 100 + 1 .and. vals(2) == (nproc - 1) * 100 + 7, 'strided allreduce')
  call MPI_Bcast(grid, 6, MPI_INTEGER, 0, dup)
  call check(grid(3, 2) == 6 .and. grid(1, 1) == 1, 'bcast 2-D')
  grid = 1
  call MPI_Allreduce(MPI_IN_PLACE, grid, 6, MPI_INTEGER, MPI_SUM, dup)
  call check(all(grid == nproc), 'allreduce in place')
  call MPI_Gather(rank, 1, MPI_INTEGER, gathered, 1, MPI_INTEGER, 0, dup)
  if (rank == 0) call check(gathered(1, 1) == 0 .and. &
    gathered(mod(nproc - 1, 2) + 1, (nproc - 1) / 2 + 1) == nproc - 1, 'gather')

  ! A large-count call (INTEGER(KIND=MPI_COUNT_KIND) count).
  big_count = 4
  vals = rank
  call MPI_Bcast(vals, big_count, MPI_INTEGER, nproc - 1, dup)
  call check(all(vals == nproc - 1), 'large-count bcast')

  ! A user reduction.
  call MPI_Op_create(absmax, .true., op)
  vals = [-rank, rank, 2, -5 * rank]
  call MPI_Allreduce(MPI_IN_PLACE, vals, 4, MPI_INTEGER, op, dup)
  call check(vals(1) == nproc - 1 .and. vals(4) == 5 * (nproc - 1), 'user op')
  call MPI_Op_free(op)
  call check(op == MPI_OP_NULL, 'op freed')

  ! Attributes and names.
  call MPI_Comm_get_attr(dup, MPI_TAG_UB, tag_ub, flag)
  call check(flag .and. tag_ub >= 32767, 'MPI_TAG_UB')
  tag_ub = 0
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, keyval, tag_ub)
  tag_ub = 31
  call MPI_Comm_set_attr(dup, keyval, tag_ub)
  call MPI_Comm_dup(dup, dup2)
  tag_ub = 0
  call MPI_Comm_get_attr(dup2, keyval, tag_ub, flag)
  call check(flag .and. tag_ub == 31, 'MPI_COMM_DUP_FN')
  call MPI_Comm_free(dup2)
  call MPI_Comm_free_keyval(keyval)
  call MPI_Comm_set_name(dup, 'f08 dup  ')
  call MPI_Comm_get_name(dup, cname, n)
  call check(cname == 'f08 dup' .and. n == 7, 'names ['//trim(cname)//']')

  ! An error returned through ierror.
  call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN)
  call MPI_Send(x, 1, MPI_INTEGER, nproc + 3, 0, dup, ierr)
  call MPI_Error_class(ierr, cls)
  call check(cls == MPI_ERR_RANK, 'error class')

  call MPI_Comm_free(dup)
  call check(dup == MPI_COMM_NULL, 'comm freed')
  call check(MPI_Wtime() > 0.0d0, 'wtime')
  call MPI_Sizeof(x, n)
  call check(n == 4, 'MPI_Sizeof integer')
  call MPI_Sizeof(1.0d0, n, ierr)
  call check(n == 8 .and. ierr == MPI_SUCCESS, 'MPI_Sizeof double precision')
  call MPI_Finalize(ierr)
  call check(ierr == MPI_SUCCESS, 'finalize')
  if (rank == 0) print '(a)', 'PASS f08_basics'
end program
