! The large-count forms through `use mpi_f08`: counts of INTEGER(KIND=MPI_COUNT_KIND) select
! the _c entries (mpi_send_f08ts_large_ ...), displacements INTEGER(KIND=MPI_ADDRESS_KIND).
! Point-to-point (blocking and nonblocking, with the count of the status), a contiguous
! datatype and its size, pack and unpack with a large-count position, and collectives with
! large-count counts arrays, each value checked. Prints "PASS f08_large_count" on rank 0.
program f08_large_count
  use mpi_f08
  implicit none
  integer :: rank, p, right, left, i, q
  integer, asynchronous :: a(12), b(12)
  integer :: packed(8), gathered(40), sums(4)
  integer(MPI_COUNT_KIND) :: n, size, pos, psize, counts(4)
  integer(MPI_ADDRESS_KIND) :: displs(4)
  type(MPI_Datatype) :: triple
  type(MPI_Status) :: status
  type(MPI_Request) :: reqs(2)
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, p)
  right = mod(rank + 1, p)
  left = mod(rank + p - 1, p)

  ! MPI_Sendrecv_c around the ring; MPI_Get_count_c and MPI_Get_elements_c of its status.
  a = [(100 * rank + i, i = 1, 12)]
  b = -1
  call MPI_Sendrecv(a, 5_MPI_COUNT_KIND, MPI_INTEGER, right, 1, b, 12_MPI_COUNT_KIND, MPI_INTEGER, left, 1, &
                    MPI_COMM_WORLD, status)
  call MPI_Get_count(status, MPI_INTEGER, n)
  if (n /= 5) call fail('MPI_Get_count_c')
  call MPI_Get_elements(status, MPI_INTEGER, n)
  if (n /= 5) call fail('MPI_Get_elements_c')
  if (any(b(1:5) /= [(100 * left + i, i = 1, 5)]) .or. any(b(6:) /= -1)) call fail('MPI_Sendrecv_c')

  ! MPI_Send_c / MPI_Recv_c of a contiguous type made by MPI_Type_contiguous_c.
  call MPI_Type_contiguous(3_MPI_COUNT_KIND, MPI_INTEGER, triple)
  call MPI_Type_commit(triple)
  call MPI_Type_size(triple, size)
  if (size /= 12) call fail('MPI_Type_size_c')
  b = -1
  if (p == 1) then
    call MPI_Isend(a, 2_MPI_COUNT_KIND, triple, 0, 2, MPI_COMM_WORLD, reqs(1))
    call MPI_Recv(b, 4_MPI_COUNT_KIND, triple, 0, 2, MPI_COMM_WORLD, status)
    call MPI_Wait(reqs(1), MPI_STATUS_IGNORE)
  else if (mod(rank, 2) == 0) then
    call MPI_Send(a, 2_MPI_COUNT_KIND, triple, right, 2, MPI_COMM_WORLD)
    call MPI_Recv(b, 4_MPI_COUNT_KIND, triple, left, 2, MPI_COMM_WORLD, status)
  else
    call MPI_Recv(b, 4_MPI_COUNT_KIND, triple, left, 2, MPI_COMM_WORLD, status)
    call MPI_Send(a, 2_MPI_COUNT_KIND, triple, right, 2, MPI_COMM_WORLD)
  end if
  call MPI_Get_count(status, triple, n)
  if (n /= 2) call fail('MPI_Get_count_c of a derived type')
  if (any(b(1:6) /= [(100 * left + i, i = 1, 6)]) .or. any(b(7:) /= -1)) call fail('MPI_Send_c / MPI_Recv_c')
  call MPI_Type_free(triple)

  ! MPI_Isend_c / MPI_Irecv_c.
  b = -1
  call MPI_Irecv(b, 12_MPI_COUNT_KIND, MPI_INTEGER, left, 3, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a, 7_MPI_COUNT_KIND, MPI_INTEGER, right, 3, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  if (any(b(1:7) /= [(100 * left + i, i = 1, 7)]) .or. any(b(8:) /= -1)) call fail('MPI_Isend_c / MPI_Irecv_c')

  ! MPI_Pack_size_c, MPI_Pack_c and MPI_Unpack_c with an MPI_Count position.
  call MPI_Pack_size(4_MPI_COUNT_KIND, MPI_INTEGER, MPI_COMM_WORLD, psize)
  if (psize < 16 .or. psize > 32) call fail('MPI_Pack_size_c')
  pos = 0
  call MPI_Pack(a(3:6), 4_MPI_COUNT_KIND, MPI_INTEGER, packed, 32_MPI_COUNT_KIND, pos, MPI_COMM_WORLD)
  if (pos /= 16) call fail('MPI_Pack_c position')
  b = -1
  pos = 0
  call MPI_Unpack(packed, 32_MPI_COUNT_KIND, pos, b, 4_MPI_COUNT_KIND, MPI_INTEGER, MPI_COMM_WORLD)
  if (pos /= 16 .or. any(b(1:4) /= a(3:6)) .or. any(b(5:) /= -1)) call fail('MPI_Unpack_c')

  ! MPI_Allgatherv_c: rank q gives q + 1 integers, placed 10 apart.
  counts(1:p) = [(int(q + 1, MPI_COUNT_KIND), q = 0, p - 1)]
  displs(1:p) = [(int(10 * q, MPI_ADDRESS_KIND), q = 0, p - 1)]
  gathered = -1
  call MPI_Allgatherv(a, int(rank + 1, MPI_COUNT_KIND), MPI_INTEGER, gathered, counts, displs, MPI_INTEGER, &
                      MPI_COMM_WORLD)
  do q = 0, p - 1
    if (any(gathered(10 * q + 1:10 * q + q + 1) /= [(100 * q + i, i = 1, q + 1)])) call fail('MPI_Allgatherv_c')
    if (any(gathered(10 * q + q + 2:10 * q + 10) /= -1)) call fail('outside MPI_Allgatherv_c''s blocks')
  end do

  ! MPI_Allreduce_c.
  call MPI_Allreduce(a, sums, 4_MPI_COUNT_KIND, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (any(sums /= [(100 * p * (p - 1) / 2 + p * i, i = 1, 4)])) call fail('MPI_Allreduce_c')

  call MPI_Finalize()
  if (rank == 0) print '(a)', 'PASS f08_large_count'
contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,i0)', 'FAIL f08_large_count: ', what, ' on rank ', rank
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine
end program
