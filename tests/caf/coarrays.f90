! co_sum, a halo exchange with coarrays, sync all, event post/wait, critical
program coarrays
  use iso_fortran_env, only: event_type
  implicit none
  integer, parameter :: n = 1000
  real(8) :: field(0:n+1)[*]
  integer :: counter[*]
  type(event_type) :: ready[*]
  integer :: me, np, i, total, left, right, step
  real(8) :: s
  me = this_image(); np = num_images()
  ! co_sum
  total = me
  call co_sum(total)
  if (total /= np*(np+1)/2) error stop "co_sum"
  ! halo exchange, 20 steps
  field = real(me, 8)
  left = merge(np, me-1, me == 1); right = merge(1, me+1, me == np)
  do step = 1, 20
    sync all
    field(0) = field(n)[left]
    field(n+1) = field(1)[right]
    sync all
    if (field(0) /= real(left,8) .or. field(n+1) /= real(right,8)) error stop "halo"
  end do
  ! critical: every image increments image 1's counter 50 times
  if (me == 1) counter = 0
  sync all
  do i = 1, 50
    critical
      counter[1] = counter[1] + 1
    end critical
  end do
  sync all
  if (me == 1 .and. counter /= 50*np) error stop "critical"
  ! events: image 1 waits for every other image's post
  if (me /= 1) then
    event post (ready[1])
  else
    event wait (ready, until_count=np-1)
  end if
  sync all
  if (me == 1) print '(a)', "PASS coarrays"
end program
