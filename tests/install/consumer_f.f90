! A Fortran program outside the project, built against an INSTALLED pylopsmpi through its Fortran
! module (use pylopsmpi): by a Fortran-only CMake project (find_package(pylopsmpi COMPONENTS
! Fortran) -> pylopsmpi::fortran) and by `mpifort $(pkg-config --cflags --libs pylopsmpi-fortran)`
! (scripts/install-test). It solves the problem of consumer.c's cgls_check: a block-diagonal of
! diagonals d_i = 1 + 0.5 mod(i,7), data y_i = 1 + 0.25 mod(i,11), damp 0.5, n = 1000, writing
! y through the array's local pointer (no copy), and checks x against the serial float64
! solution d y / (d^2 + damp^2). Rank 0 prints VERIFIED. docs/getting-started-fortran.md walks
! through it.
program consumer_f
  use mpi_f08
  use pylopsmpi
  implicit none
  integer(c_int64_t), parameter :: n = 1000
  real(c_double), parameter :: damp = 0.5_c_double
  type(plm_comm) :: comm
  type(plm_op) :: blocks(1), a
  type(plm_array) :: x, y
  type(plm_solver_info) :: no_info            ! a NULL handle: no report wanted
  real(c_double), allocatable :: d(:)
  real(c_double), pointer :: xl(:), yl(:)
  integer(c_int64_t) :: off, i
  integer :: rank, nprocs, ierr
  real(c_double) :: err, maxerr

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  call plm_check_version()                     ! no ierr: a mismatch stops with the message
  call plm_comm_create(MPI_COMM_WORLD, comm)

  ! this rank's part of the global vector (the library's default split: the first mod(n, P)
  ! ranks get one more), then its diagonal block
  off = rank * (n / nprocs) + min(int(rank, c_int64_t), mod(n, int(nprocs, c_int64_t)))
  allocate(d(n / nprocs + merge(1, 0, rank < mod(n, int(nprocs, c_int64_t)))))
  d = [(1 + 0.5_c_double * mod(off + i - 1, 7_c_int64_t), i = 1, size(d, kind=c_int64_t))]
  call plm_op_diagonal(d, blocks(1))
  call plm_op_blockdiag(comm, blocks, a)
  call plm_op_destroy(blocks(1))

  call plm_op_new_domain_array(a, x)
  call plm_op_new_range_array(a, y)
  call plm_array_get_local_write(y, yl)          ! the array's own memory, as a Fortran pointer
  yl = [(1 + 0.25_c_double * mod(off + i - 1, 11_c_int64_t), i = 1, size(yl, kind=c_int64_t))]
  call plm_array_restore_local_write(y, yl)
  call plm_array_fill(x, 0.0_c_double)
  call plm_solve_cgls(a, y, x, 100_c_int64_t, damp, 1d-24, no_info, ierr)
  if (ierr /= PLM_SUCCESS) then
    print '(a)', 'plm_solve_cgls: ' // plm_status_message(ierr) // ': ' // plm_error_message()
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if

  call plm_array_get_local_read(x, xl)
  call plm_array_get_local_read(y, yl)
  err = 0
  if (size(xl) > 0) err = maxval(abs(xl - d * yl / (d**2 + damp**2)) / (1 + abs(d * yl / (d**2 + damp**2))))
  call plm_array_restore_local_read(x, xl)
  call plm_array_restore_local_read(y, yl)
  call MPI_Allreduce(err, maxerr, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, es10.3)', 'consumer_f (module pylopsmpi): ranks=', nprocs, ' max rel error=', maxerr
  if (maxerr > 1d-10) then
    if (rank == 0) print '(a)', 'consumer_f: FAILED'
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  if (rank == 0) print '(a)', 'VERIFIED'

  call plm_array_destroy(x)
  call plm_array_destroy(y)
  call plm_op_destroy(a)
  call plm_comm_destroy(comm)
  call MPI_Finalize()
end program consumer_f
