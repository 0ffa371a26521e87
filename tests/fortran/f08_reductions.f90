! Non-contiguous array sections as the buffers of reductions and of the v/w collectives through
! `use mpi_f08` (our module, and MPICH's with mpif90.mpich, run on our library). A reduction's
! buffers share one datatype and a v/w collective's are cut by counts arrays, so no section
! datatype stands for them: the library reduces a packed copy and, for the nonblocking and
! persistent forms, unpacks it into the section when the request completes (MPI_Wait,
! MPI_Test, MPI_Waitall, MPI_Request_get_status), packing it again at each MPI_Start. Every
! value received is checked, and so is every element between a section's (they stay as they
! were). Prints "PASS f08_reductions" on rank 0.
program f08_reductions
  use mpi_f08
  implicit none
  integer :: rank, p, s, left, right, i, q, j, k, round, n, off
  ! ASYNCHRONOUS, as MPI requires of a nonblocking operation's buffers: without it gfortran
  ! may keep b's elements in registers across MPI_Start and MPI_Wait, which do not name b.
  integer, asynchronous :: a(20), b(20), c(10), e(10), x(10), sb(64), rb(6), rc(8)
  integer, asynchronous :: gv(4), g(40), st(8), rt(8), rw(12), sv(40), sr(4)
  integer :: counts(4), displs(4), wcounts(4), wdispls(4)
  type(MPI_Datatype) :: wtypes(4)
  double precision, asynchronous :: dsent(9), m(4, 6), dv(3)
  complex(kind=8), asynchronous :: z(6)
  logical :: flag
  type(MPI_Request) :: req, reqs(2)
  type(MPI_Status) :: status
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, p)
  s = p * (p - 1) / 2
  right = mod(rank + 1, p)
  left = mod(rank + p - 1, p)

  ! Blocking: every other element of a into every other element of b, shifted by one.
  a = [(100 * rank + i, i = 1, 20)]
  b = -1
  call MPI_Allreduce(a(1:20:2), b(2:20:2), 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call check_b('MPI_Allreduce')

  ! Nonblocking, completed by MPI_Wait: a negative stride in, a section out.
  b = -1
  call MPI_Iallreduce(a(20:1:-2), b(1:19:2), 10, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, req, ierror=i)
  if (i /= MPI_SUCCESS) call fail('MPI_Iallreduce of sections refused')
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  do i = 1, 10
    if (b(2 * i - 1) /= 100 * (p - 1) + 22 - 2 * i) call fail('MPI_Iallreduce into a section')
    if (b(2 * i) /= -1) call fail('an element between MPI_Iallreduce''s section changed')
  end do

  ! MPI_Ireduce into a 2-D section at the root, completed by MPI_Test.
  dsent = [(dble(rank * 1000 + i), i = 1, 9)]
  m = -1d0
  call MPI_Ireduce(dsent, m(1:3, 1:5:2), 9, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, req)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req, flag, MPI_STATUS_IGNORE)
  end do
  if (rank == 0) then
    if (any(m(1:3, 1:5:2) /= reshape([(dble(1000 * s + p * i), i = 1, 9)], [3, 3]))) call fail('MPI_Ireduce into a 2-D section')
  end if
  if (any(m(4, :) /= -1d0) .or. any(m(:, 2:6:2) /= -1d0)) call fail('outside MPI_Ireduce''s 2-D section')

  ! MPI_Iscan and MPI_Iexscan, completed together by MPI_Waitall.
  c = -1
  e = -1
  call MPI_Iscan(a(1:20:4), c(1:10:2), 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(1))
  call MPI_Iexscan(a(2:20:4), e(2:10:2), 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  do i = 1, 5
    if (c(2 * i - 1) /= 50 * rank * (rank + 1) + (rank + 1) * (4 * i - 3)) call fail('MPI_Iscan into a section')
    if (rank > 0 .and. e(2 * i) /= 50 * rank * (rank - 1) + rank * (4 * i - 2)) call fail('MPI_Iexscan into a section')
    if (c(2 * i) /= -1 .or. e(2 * i - 1) /= -1) call fail('outside MPI_Iscan''s or MPI_Iexscan''s section')
  end do

  ! MPI_Ireduce_scatter_block: 2 elements each, from every other element of sb.
  sb = [(1000 * rank + i, i = 1, 64)]
  rb = -1
  call MPI_Ireduce_scatter_block(sb(1:4 * p:2), rb(1:6:3), 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (rb(1) /= 1000 * s + p * (4 * rank + 1) .or. rb(4) /= 1000 * s + p * (4 * rank + 3)) &
    call fail('MPI_Ireduce_scatter_block into a section')
  if (any(rb([2, 3, 5, 6]) /= -1)) call fail('outside MPI_Ireduce_scatter_block''s section')
  ! MPI_Ireduce_scatter: rank q gets q + 1 elements.
  counts(1:p) = [(q + 1, q = 0, p - 1)]
  n = p * (p + 1) / 2
  off = rank * (rank + 1) / 2
  rc = -1
  call MPI_Ireduce_scatter(sb(2:2 * n:2), rc(1:2 * (rank + 1):2), counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  do k = 1, rank + 1
    if (rc(2 * k - 1) /= 1000 * s + p * 2 * (off + k)) call fail('MPI_Ireduce_scatter into a section')
    if (rc(2 * k) /= -1) call fail('outside MPI_Ireduce_scatter''s section')
  end do

  ! In place: the section is the input too.
  x = -7
  x(1:10:2) = [(100 * rank + i, i = 1, 5)]
  call MPI_Iallreduce(MPI_IN_PLACE, x(1:10:2), 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (any(x(1:10:2) /= [(100 * s + p * i, i = 1, 5)])) call fail('MPI_Iallreduce in place in a section')
  if (any(x(2:10:2) /= -7)) call fail('outside the in-place section')

  ! MPI_Iallgatherv into every other element of g, each rank's block followed by a hole.
  gv = [(10 * rank + k, k = 1, 4)]
  g = -1
  counts(1:p) = [(q + 1, q = 0, p - 1)]
  displs(1:p) = [(q * (q + 3) / 2, q = 0, p - 1)]
  call MPI_Iallgatherv(gv, rank + 1, MPI_INTEGER, g(1:40:2), counts, displs, MPI_INTEGER, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  do q = 0, p - 1
    do k = 1, q + 1
      j = displs(q + 1) + k
      if (g(2 * j - 1) /= 10 * q + k) call fail('MPI_Iallgatherv into a section')
    end do
    if (g(2 * (displs(q + 1) + q + 2) - 1) /= -1) call fail('a hole between MPI_Iallgatherv''s blocks changed')
  end do
  if (any(g(2:40:2) /= -1)) call fail('outside MPI_Iallgatherv''s section')

  ! MPI_Iscatterv from every other element of the root's sv.
  sv = [(7 * j, j = 1, 40)]
  sr = -1
  displs(1:p) = [(q * (q + 1) / 2, q = 0, p - 1)]
  call MPI_Iscatterv(sv(1:40:2), counts, displs, MPI_INTEGER, sr, rank + 1, MPI_INTEGER, 0, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (any(sr(1:rank + 1) /= [(7 * (2 * (off + k) - 1), k = 1, rank + 1)])) call fail('MPI_Iscatterv from a section')

  ! MPI_Ialltoallv and MPI_Ialltoallw, sections on both sides.
  st = -1
  st(1:2 * p:2) = [(100 * rank + q, q = 0, p - 1)]
  rt = -1
  counts(1:p) = 1
  displs(1:p) = [(q, q = 0, p - 1)]
  call MPI_Ialltoallv(st(1:2 * p:2), counts, displs, MPI_INTEGER, rt(2:2 * p:2), counts, displs, MPI_INTEGER, &
                      MPI_COMM_WORLD, reqs(1))
  rw = -1
  wcounts(1:p) = 1
  wdispls(1:p) = [(4 * q, q = 0, p - 1)]
  wtypes(1:p) = MPI_INTEGER
  call MPI_Ialltoallw(st(1:2 * p:2), wcounts, wdispls, wtypes, rw(1:3 * p:3), wcounts, wdispls, wtypes, &
                      MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  do q = 0, p - 1
    if (rt(2 * q + 2) /= 100 * q + rank .or. rt(2 * q + 1) /= -1) call fail('MPI_Ialltoallv of sections')
    if (rw(3 * q + 1) /= 100 * q + rank .or. rw(3 * q + 2) /= -1) call fail('MPI_Ialltoallw of sections')
  end do

  ! Persistent: packed again at each start (a changes between starts), completion seen by
  ! MPI_Request_get_status before MPI_Wait frees nothing.
  call MPI_Allreduce_init(a(1:20:2), b(2:20:2), 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, req)
  do round = 1, 3
    a = [(1000 * round + 100 * rank + i, i = 1, 20)]
    b = -1
    call MPI_Start(req)
    flag = .false.
    do while (.not. flag)
      call MPI_Request_get_status(req, flag, status)
    end do
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    do i = 1, 10
      if (b(2 * i) /= p * 1000 * round + 100 * s + p * (2 * i - 1)) call fail('MPI_Allreduce_init into a section')
      if (b(2 * i - 1) /= -1) call fail('outside MPI_Allreduce_init''s section')
    end do
  end do
  call MPI_Request_free(req)

  ! The large-count form.
  a = [(100 * rank + i, i = 1, 20)]
  b = -1
  call MPI_Iallreduce(a(1:20:2), b(2:20:2), 10_MPI_COUNT_KIND, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req)
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  call check_b('large-count MPI_Iallreduce')

  ! A receive of 3 doubles into a section of complex numbers: no datatype over whole elements
  ! fits, so it goes through a packed copy too.
  z = (-1d0, -1d0)
  dv = [(dble(100 * rank + i), i = 1, 3)]
  call MPI_Irecv(z(1:6:2), 3, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(dv, 3, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (z(1) /= cmplx(100 * left + 1, 100 * left + 2, kind=8) .or. z(3) /= cmplx(100 * left + 3, -1, kind=8)) &
    call fail('MPI_Irecv of doubles into a section of complex numbers')
  if (any(z([2, 4, 5, 6]) /= (-1d0, -1d0))) call fail('outside the complex section')

  call MPI_Finalize()
  if (rank == 0) print '(a)', 'PASS f08_reductions'
contains
  subroutine check_b(what)
    character(len=*), intent(in) :: what
    integer :: i
    do i = 1, 10
      if (b(2 * i) /= 100 * s + p * (2 * i - 1)) call fail(what // ' into a section')
      if (b(2 * i - 1) /= -1) call fail('an element between ' // what // '''s section changed')
    end do
  end subroutine
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,i0)', 'FAIL f08_reductions: ', what, ' on rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
end program
