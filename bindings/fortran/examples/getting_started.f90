! The program of docs/getting-started-fortran.md: a damped least-squares problem solved with the
! library's CGLS through the Fortran module. Each rank holds its part d of a diagonal,
! d_i = 1 + 0.5 mod(i, 7); the block-diagonal operator of those parts and the data
! y_i = 1 + 0.25 mod(i, 11), written through the array's own memory, give the solution
! x_i = d_i y_i / (d_i^2 + damp^2), which the program checks. Rank 0 prints VERIFIED.
!
!   mpiexec -n 4 ./getting_started_f
program getting_started_f
  use mpi_f08
  use pylopsmpi
  implicit none
  integer(c_int64_t), parameter :: n = 1000            ! global size
  real(c_double), parameter :: damp = 0.5_c_double
  type(plm_comm) :: comm
  type(plm_op) :: blocks(1), a
  type(plm_array) :: x, y
  type(plm_solver_info) :: no_info                      ! a NULL handle: no report wanted
  real(c_double), allocatable :: d(:)
  real(c_double), pointer :: xl(:), yl(:)
  integer(c_int64_t) :: off, nloc, i
  integer :: rank, nprocs, ierr
  real(c_double) :: err, maxerr

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call plm_check_version()                     ! the library matches the module's interfaces
  call plm_comm_create(MPI_COMM_WORLD, comm)   ! type(MPI_Comm), or an integer handle

  ! this rank's part of the global vector: the library's default split gives the first
  ! mod(n, nprocs) ranks one element more
  nloc = n / nprocs + merge(1, 0, rank < mod(n, int(nprocs, c_int64_t)))
  off = rank * (n / nprocs) + min(int(rank, c_int64_t), mod(n, int(nprocs, c_int64_t)))
  allocate(d(nloc))
  d = [(1 + 0.5_c_double * mod(off + i - 1, 7_c_int64_t), i = 1, nloc)]
  call plm_op_diagonal(d, blocks(1))           ! this rank's block (the library copies d)
  call plm_op_blockdiag(comm, blocks, a)
  call plm_op_destroy(blocks(1))               ! the block-diagonal keeps it

  call plm_op_new_domain_array(a, x)
  call plm_op_new_range_array(a, y)
  call plm_array_get_local_write(y, yl)        ! the array's memory as a Fortran pointer
  yl = [(1 + 0.25_c_double * mod(off + i - 1, 11_c_int64_t), i = 1, nloc)]
  call plm_array_restore_local_write(y, yl)    ! yl is nullified
  call plm_array_fill(x, 0.0_c_double)
  call plm_solve_cgls(a, y, x, 100_c_int64_t, damp, 1d-24, no_info, ierr)
  if (ierr /= PLM_SUCCESS) then
    print '(a)', 'plm_solve_cgls: ' // plm_status_message(ierr) // ': ' // plm_error_message()
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if

  ! check x against the serial solution, on every rank
  call plm_array_get_local_read(x, xl)
  call plm_array_get_local_read(y, yl)
  err = 0
  if (nloc > 0) err = maxval(abs(xl - d * yl / (d**2 + damp**2)) / (1 + abs(d * yl / (d**2 + damp**2))))
  call plm_array_restore_local_read(x, xl)
  call plm_array_restore_local_read(y, yl)
  call MPI_Allreduce(err, maxerr, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, es8.1)', 'getting_started_f: ', nprocs, ' ranks, max relative error ', maxerr
  if (rank == 0 .and. maxerr <= 1d-10) print '(a)', 'VERIFIED'

  call plm_array_destroy(x)
  call plm_array_destroy(y)
  call plm_op_destroy(a)
  call plm_comm_destroy(comm)
  call MPI_Finalize()
  if (maxerr > 1d-10) error stop 1
end program getting_started_f
