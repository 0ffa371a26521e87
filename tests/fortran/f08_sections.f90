! Non-contiguous array sections as the buffers of nonblocking calls through `use mpi_f08`
! (our module, and MPICH's with mpif90.mpich, run on our library): MPI_Isend from a strided
! section into MPI_Irecv of another strided section, a 2-D section with a column stride,
! MPI_Ibcast into a section, and a persistent receive into a section restarted 3 times. The
! elements between the section's stay as they were; a count smaller than the section uses its
! first elements; MPI_Psend_init of a section (a partitioned request's parts are read while it
! is active, so no copy can stand for them) is refused with MPI_ERR_BUFFER (reductions' and v/w
! collectives' sections: f08_reductions.f90). Then the same through the large-count
! entries (INTEGER(MPI_COUNT_KIND) counts: mpi_isend_f08ts_large_ ...), with a blocking
! MPI_Recv of a section (a packed copy). Prints "PASS f08_sections" on rank 0.
program f08_sections
  use mpi_f08
  implicit none
  integer :: rank, nproc, right, left, i, round, ierr
  integer :: a(20), b(20)
  double precision :: m(4, 6), x(9), sent(3, 3)
  type(MPI_Request) :: reqs(2), req
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc)
  right = mod(rank + 1, nproc)
  left = mod(rank + nproc - 1, nproc)

  ! Every other element of a into every other element of b, shifted by one.
  a = [(100 * rank + i, i = 1, 20)]
  b = -1
  call MPI_Irecv(b(2:20:2), 10, MPI_INTEGER, left, 1, MPI_COMM_WORLD, reqs(1), ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_Irecv of a section refused')
  call MPI_Isend(a(1:19:2), 10, MPI_INTEGER, right, 1, MPI_COMM_WORLD, reqs(2), ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_Isend of a section refused')
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  do i = 1, 10
    if (b(2 * i - 1) /= -1) call fail('an element between the received section changed')
    if (b(2 * i) /= 100 * left + 2 * i - 1) call fail('a received element')
  end do

  ! A 2-D section: rows 1 to 3 of columns 1, 3, 5 (strides in both dimensions of memory).
  sent = reshape([(dble(rank * 1000 + i), i = 1, 9)], [3, 3])
  m = -1d0
  call MPI_Irecv(m(1:3, 1:5:2), 9, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(sent, 9, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (any(m(1:3, 1:5:2) /= reshape([(dble(left * 1000 + i), i = 1, 9)], [3, 3]))) call fail('2-D section')
  if (any(m(4, :) /= -1d0) .or. any(m(:, 2:6:2) /= -1d0)) call fail('outside the 2-D section')

  ! MPI_Ibcast into every third element.
  x = -1d0
  if (rank == 0) x(1:9:3) = [1.5d0, 2.5d0, 3.5d0]
  call MPI_Ibcast(x(1:9:3), 3, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (any(x(1:9:3) /= [1.5d0, 2.5d0, 3.5d0])) call fail('MPI_Ibcast into a section')
  if (any(x(2:9:3) /= -1d0) .or. any(x(3:9:3) /= -1d0)) call fail('outside the MPI_Ibcast section')

  ! A persistent receive into a section, started three times.
  b = -1
  call MPI_Recv_init(b(1:20:4), 5, MPI_INTEGER, left, 3, MPI_COMM_WORLD, req)
  do round = 1, 3
    a(1:5) = [(round * 10000 + rank * 100 + i, i = 1, 5)]
    call MPI_Start(req)
    call MPI_Send(a(1:5), 5, MPI_INTEGER, right, 3, MPI_COMM_WORLD)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    if (any(b(1:20:4) /= [(round * 10000 + left * 100 + i, i = 1, 5)])) call fail('persistent receive')
    if (any(b(2:20:4) /= -1) .or. any(b(4:20:4) /= -1)) call fail('outside the persistent section')
  end do
  call MPI_Request_free(req)

  ! Fewer items than the section holds: its first elements, in array element order.
  a = [(100 * rank + i, i = 1, 20)]
  b = -1
  call MPI_Irecv(b(1:20:2), 4, MPI_INTEGER, left, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(a(20:1:-2), 4, MPI_INTEGER, right, 5, MPI_COMM_WORLD, reqs(2), ierr)
  if (ierr /= MPI_SUCCESS) call fail('MPI_Isend of the first elements of a section refused')
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (any(b(1:7:2) /= [(100 * left + i, i = 20, 14, -2)])) call fail('the first elements of a section')
  if (any(b(9:20) /= -1) .or. any(b(2:8:2) /= -1)) call fail('past the first elements of a section')

  ! A partitioned request's section, which no section datatype describes (the buffer has no
  ! datatype of its own) and no packed copy can stand for: refused.
  call MPI_Psend_init(a(1:20:2), 2, 5_MPI_COUNT_KIND, MPI_INTEGER, right, 9, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
  if (ierr /= MPI_ERR_BUFFER) call fail('MPI_Psend_init of a section was not refused')

  ! Large-count forms: a nonblocking send of a section and a blocking receive into one.
  a = [(100 * rank + i, i = 1, 20)]
  b = -1
  call MPI_Isend(a(20:1:-3), 7_MPI_COUNT_KIND, MPI_INTEGER, right, 4, MPI_COMM_WORLD, req, ierr)
  if (ierr /= MPI_SUCCESS) call fail('large-count MPI_Isend of a section refused')
  call MPI_Recv(b(1:14:2), 7_MPI_COUNT_KIND, MPI_INTEGER, left, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (any(b(1:14:2) /= [(100 * left + i, i = 20, 1, -3)])) call fail('large-count section exchange')
  if (any(b(2:14:2) /= -1) .or. any(b(15:20) /= -1)) call fail('outside the large-count section')
  call MPI_Finalize()
  if (rank == 0) print '(a)', 'PASS f08_sections'
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,i0)', 'FAIL f08_sections: ', what, ' on rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
end program
