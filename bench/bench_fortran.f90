! bench_fortran: CGLS on a block-diagonal of Fortran callback blocks, through the Fortran module,
! next to the same solve on C callback blocks (bench_fortran_cblocks.c), in the same run.
!
! Every rank holds NB tridiagonal N x N blocks (diag 4 + b, -1 beside it): the Fortran blocks
! are ordinary subroutines on assumed-shape arrays behind the module's trampolines, the C blocks
! plm_op_callback functions. Each repetition solves with NITER CGLS iterations (tol 0) from
! x = 0 after a barrier; a repetition's time is the maximum over the ranks, and the table shows
! the median of REPS repetitions, C and Fortran alternating. The solutions are compared too.
!
!   mpiexec -n 2 build/bench/bench_fortran [N [NB [NITER [REPS]]]]      (default 1000 4 100 30)
program bench_fortran
  use mpi_f08
  use pylopsmpi
  implicit none
  interface
    integer(c_int) function bench_c_tridiagonal(n, diag, op) bind(C, name="bench_c_tridiagonal")
      import :: c_int, c_int64_t, c_double, plm_op
      integer(c_int64_t), value :: n
      real(c_double), value :: diag
      type(plm_op), intent(out) :: op
    end function
  end interface
  type :: tridiagonal
    real(c_double) :: diag
  end type
  integer(c_int64_t) :: n = 1000, niter = 100
  integer :: nb = 4, reps = 30, me, np, b, r, k
  type(plm_comm) :: comm
  type(plm_op), allocatable :: fblocks(:), cblocks(:)
  type(plm_op) :: fop, cop
  type(plm_array) :: y, xf, xc
  type(plm_solver_info) :: none
  real(c_double), pointer :: p(:)
  real(c_double), allocatable :: tf(:), tc(:)
  real(c_double) :: diff, nrm
  character(len=32) :: arg

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call MPI_Comm_size(MPI_COMM_WORLD, np)
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read(arg, *) n
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read(arg, *) nb
  end if
  if (command_argument_count() >= 3) then
    call get_command_argument(3, arg)
    read(arg, *) niter
  end if
  if (command_argument_count() >= 4) then
    call get_command_argument(4, arg)
    read(arg, *) reps
  end if
  call plm_comm_create(MPI_COMM_WORLD, comm)

  allocate(fblocks(nb), cblocks(nb), tf(reps), tc(reps))
  do b = 1, nb
    call plm_op_callback(n, n, tridiag_apply, tridiag_apply, tridiagonal(diag=4.0_c_double + b), fblocks(b))
    if (bench_c_tridiagonal(n, 4.0_c_double + b, cblocks(b)) /= PLM_SUCCESS) error stop 'bench_c_tridiagonal'
  end do
  call plm_op_blockdiag(comm, fblocks, fop)
  call plm_op_blockdiag(comm, cblocks, cop)
  call plm_op_new_range_array(fop, y)
  call plm_op_new_domain_array(fop, xf)
  call plm_op_new_domain_array(cop, xc)
  call plm_array_get_local_write(y, p)
  p = [(sin(0.01_c_double * (k + me)), k = 1, size(p))]
  call plm_array_restore_local_write(y, p)

  do r = 0, reps        ! repetition 0 warms up
    tc(max(r, 1)) = solve(cop, xc)
    tf(max(r, 1)) = solve(fop, xf)
  end do
  call plm_array_axpby(1.0_c_double, xf, -1.0_c_double, xc)
  call plm_array_norm(xc, 2.0_c_double, diff)
  call plm_array_norm(xf, 2.0_c_double, nrm)
  if (me == 0) then
    write(*, '(a,i0,a,i0,a,i0,a,i0,a,i0,a)') 'bench_fortran: CGLS, ', np, ' ranks, ', nb, ' blocks of ', n, &
      ' rows per rank, ', niter, ' iterations; median of ', reps, ' repetitions (max over ranks)'
    write(*, '(a)') '  blocks                          time [ms]   per iteration [us]   vs C'
    write(*, '(a,f12.3,f18.2,f10.3)') '  C callbacks (plm_op_callback)', 1d3 * median(tc), 1d6 * median(tc) / niter, 1.0
    write(*, '(a,f12.3,f18.2,f10.3)') '  Fortran callbacks (module)   ', 1d3 * median(tf), 1d6 * median(tf) / niter, &
                                       median(tf) / median(tc)
    write(*, '(a,es9.2)') '  relative difference of the two solutions: ', diff / nrm
  end if
  call plm_array_destroy(y)
  call plm_array_destroy(xf)
  call plm_array_destroy(xc)
  call plm_op_destroy(fop)
  call plm_op_destroy(cop)
  do b = 1, nb
    call plm_op_destroy(fblocks(b))
    call plm_op_destroy(cblocks(b))
  end do
  call plm_comm_destroy(comm)
  call MPI_Finalize()

contains

  subroutine tridiag_apply(ctx, x, y, ierr)
    class(*), intent(inout) :: ctx
    real(c_double), intent(in) :: x(:)
    real(c_double), intent(out) :: y(:)
    integer, intent(inout) :: ierr
    integer :: m
    m = size(x)
    select type (ctx)
    type is (tridiagonal)
      y = ctx%diag * x
      y(2:m) = y(2:m) - x(1:m - 1)
      y(1:m - 1) = y(1:m - 1) - x(2:m)
    class default
      ierr = 1
    end select
  end subroutine

  real(c_double) function solve(op, x) result(t)
    type(plm_op), intent(in) :: op
    type(plm_array), intent(in) :: x
    real(c_double) :: t0, tl
    call plm_array_fill(x, 0.0_c_double)
    call MPI_Barrier(MPI_COMM_WORLD)
    t0 = MPI_Wtime()
    call plm_solve_cgls(op, y, x, niter, 0.0_c_double, 0.0_c_double, none)
    tl = MPI_Wtime() - t0
    call MPI_Allreduce(tl, t, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
  end function

  real(c_double) function median(v)
    real(c_double), intent(in) :: v(:)
    real(c_double) :: s(size(v)), tmp
    integer :: i, j
    s = v
    do i = 2, size(s)        ! insertion sort: a few dozen values
      tmp = s(i)
      j = i - 1
      do while (j >= 1)
        if (s(j) <= tmp) exit
        s(j + 1) = s(j)
        j = j - 1
      end do
      s(j + 1) = tmp
    end do
    median = s((size(s) + 1) / 2)
  end function
end program
