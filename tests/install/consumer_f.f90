! A Fortran program outside the project, built against an INSTALLED pylopsmpi by a Fortran-only
! CMake project (scripts/install-test). There is no Fortran module yet (bindings/README.md): it
! declares the few C functions it calls itself, through bind(C) interfaces, and passes
! MPI_COMM_WORLD%MPI_VAL (an MPI_Fint) to plm_comm_create_f. It solves the problem of
! consumer.c's cgls_check: blockdiag of diagonals d_i = 1 + 0.5 mod(i,7), y_i = 1 + 0.25 mod(i,11),
! damp 0.5, n = 1000, with the arrays wrapping this program's own y and x (zero copy), and checks
! x against the serial float64 solution d y / (d^2 + damp^2). Rank 0 prints VERIFIED.
! docs/getting-started-fortran.md walks through it.
module plm_c
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int), parameter :: PLM_SUCCESS = 0, PLM_FLOAT64 = 1, PLM_MEMORY_HOST = 0
  interface
    integer(c_int) function plm_comm_create_f(mpi_comm, config, out) bind(C, name="plm_comm_create_f")
      import :: c_int, c_ptr
      integer(c_int), value :: mpi_comm
      type(c_ptr), value :: config
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function plm_comm_destroy(comm) bind(C, name="plm_comm_destroy")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: comm
    end function
    integer(c_int) function plm_op_diagonal(dtype, n, d, d_bytes, out) bind(C, name="plm_op_diagonal")
      import :: c_int, c_int64_t, c_double, c_ptr
      integer(c_int), value :: dtype
      integer(c_int64_t), value :: n, d_bytes
      real(c_double), intent(in) :: d(*)
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function plm_op_blockdiag(comm, n, ops, nmask, mask, out) bind(C, name="plm_op_blockdiag")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int), value :: n, nmask
      type(c_ptr), intent(in) :: ops(*)
      type(c_ptr), value :: mask
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function plm_op_destroy(op) bind(C, name="plm_op_destroy")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: op
    end function
    integer(c_int) function plm_op_domain(op, layout) bind(C, name="plm_op_domain")
      import :: c_int, c_ptr
      type(c_ptr), value :: op
      type(c_ptr), intent(out) :: layout
    end function
    integer(c_int) function plm_op_range(op, layout) bind(C, name="plm_op_range")
      import :: c_int, c_ptr
      type(c_ptr), value :: op
      type(c_ptr), intent(out) :: layout
    end function
    integer(c_int) function plm_layout_local_size(layout, n) bind(C, name="plm_layout_local_size")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: layout
      integer(c_int64_t), intent(out) :: n
    end function
    integer(c_int) function plm_layout_destroy(layout) bind(C, name="plm_layout_destroy")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: layout
    end function
    integer(c_int) function plm_array_create_from_layout(layout, dtype, memory, user_data, user_bytes, out) &
        bind(C, name="plm_array_create_from_layout")
      import :: c_int, c_int64_t, c_ptr
      type(c_ptr), value :: layout, user_data
      integer(c_int), value :: dtype, memory
      integer(c_int64_t), value :: user_bytes
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function plm_array_destroy(x) bind(C, name="plm_array_destroy")
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: x
    end function
    integer(c_int) function plm_solve_cgls(op, y, x, niter, damp, tol, info) bind(C, name="plm_solve_cgls")
      import :: c_int, c_int64_t, c_double, c_ptr
      type(c_ptr), value :: op, y, x, info
      integer(c_int64_t), value :: niter
      real(c_double), value :: damp, tol
    end function
  end interface
contains
  subroutine check(st, what)
    use mpi_f08, only: MPI_Abort, MPI_COMM_WORLD
    integer(c_int), intent(in) :: st
    character(*), intent(in) :: what
    if (st /= PLM_SUCCESS) then
      print '(a, a, i0)', what, ' failed with status ', st
      call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
  end subroutine

  ! Size in bytes of a float64 array: what the library's *_bytes arguments want.
  integer(c_int64_t) function nbytes(a)
    real(c_double), intent(in) :: a(:)
    nbytes = size(a, kind=c_int64_t) * int(storage_size(a) / 8, c_int64_t)
  end function
end module plm_c

program consumer_f
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use plm_c
  implicit none
  integer(c_int64_t), parameter :: n = 1000
  real(c_double), parameter :: damp = 0.5d0
  integer :: rank, nprocs
  integer(c_int64_t) :: nloc, off, i, nl
  real(c_double), allocatable, target :: d(:), y(:), x(:)
  real(c_double) :: di, yi, err, maxerr
  type(c_ptr) :: comm, ops(1), a, dom, ran, xa, ya

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  ! plm_array_create's split: rank r gets n/P + 1 entries if r < mod(n, P)
  nloc = n / nprocs
  off = rank * nloc + min(int(rank, c_int64_t), mod(n, int(nprocs, c_int64_t)))
  if (rank < mod(n, int(nprocs, c_int64_t))) nloc = nloc + 1
  allocate(d(nloc), y(nloc), x(nloc))
  do i = 1, nloc
    d(i) = 1d0 + 0.5d0 * mod(off + i - 1, 7_c_int64_t)
    y(i) = 1d0 + 0.25d0 * mod(off + i - 1, 11_c_int64_t)
  end do
  x = 0d0

  call check(plm_comm_create_f(MPI_COMM_WORLD%MPI_VAL, c_null_ptr, comm), "plm_comm_create_f")
  call check(plm_op_diagonal(PLM_FLOAT64, nloc, d, nbytes(d), ops(1)), "plm_op_diagonal")
  call check(plm_op_blockdiag(comm, 1, ops, 0, c_null_ptr, a), "plm_op_blockdiag")
  call check(plm_op_domain(a, dom), "plm_op_domain")
  call check(plm_op_range(a, ran), "plm_op_range")
  call check(plm_layout_local_size(dom, nl), "plm_layout_local_size")
  if (nl /= nloc) call check(-1_c_int, "local size of the domain")
  call check(plm_array_create_from_layout(dom, PLM_FLOAT64, PLM_MEMORY_HOST, c_loc(x), nbytes(x), xa), "array x")
  call check(plm_array_create_from_layout(ran, PLM_FLOAT64, PLM_MEMORY_HOST, c_loc(y), nbytes(y), ya), "array y")
  call check(plm_solve_cgls(a, ya, xa, 100_c_int64_t, damp, 1d-24, c_null_ptr), "plm_solve_cgls")

  err = 0d0
  do i = 1, nloc
    di = d(i)
    yi = y(i)
    err = max(err, abs(x(i) - di * yi / (di * di + damp * damp)) / (di * yi / (di * di + damp * damp)))
  end do
  if (err /= err) err = huge(err)
  call MPI_Allreduce(err, maxerr, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)

  call check(plm_array_destroy(xa), "plm_array_destroy")
  call check(plm_array_destroy(ya), "plm_array_destroy")
  call check(plm_layout_destroy(dom), "plm_layout_destroy")
  call check(plm_layout_destroy(ran), "plm_layout_destroy")
  call check(plm_op_destroy(a), "plm_op_destroy")
  call check(plm_op_destroy(ops(1)), "plm_op_destroy")
  call check(plm_comm_destroy(comm), "plm_comm_destroy")
  if (rank == 0) then
    if (maxerr < 1d-10) then
      print '(a, i0, a, es9.2)', "VERIFIED: Fortran CGLS on blockdiag(diagonal) n=1000, ranks=", nprocs, &
            ", max rel error ", maxerr
    else
      print '(a, es9.2)', "FAILED: Fortran CGLS max rel error ", maxerr
    end if
  end if
  call MPI_Finalize()
  if (maxerr >= 1d-10) error stop 1
end program consumer_f
