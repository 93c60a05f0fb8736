! Block-diagonal least squares with CGLS through the Fortran module.
!
! Every rank holds NB blocks, each an N x N tridiagonal matrix (4 + block on the diagonal, -1
! beside it) written as a Fortran callback operator: two ordinary subroutines, matvec and
! rmatvec, on assumed-shape arrays. The program builds y = A x_true, solves min ||y - A x|| with
! CGLS from x = 0, and prints VERIFIED (exit 0) if x matches x_true to 1e-8, at any rank count.
!
!   mpiexec -n 4 ./blockdiag_cgls_f
module tridiagonal_blocks
  use, intrinsic :: iso_c_binding
  implicit none
  type :: tridiagonal
    real(c_double) :: diag = 4    ! the diagonal; -1 on both sides of it
  end type
contains
  ! y = A x (A is symmetric: the adjoint is the same subroutine)
  subroutine tridiag_apply(ctx, x, y, ierr)
    class(*), intent(inout) :: ctx            ! the operator's copy of the context
    real(c_double), intent(in) :: x(:)
    real(c_double), intent(out) :: y(:)
    integer, intent(inout) :: ierr            ! leave 0, or set non-zero to fail the apply
    integer :: n
    n = size(x)
    select type (ctx)
    type is (tridiagonal)
      y = ctx%diag * x
      y(2:n) = y(2:n) - x(1:n - 1)
      y(1:n - 1) = y(1:n - 1) - x(2:n)
    class default
      ierr = 1
    end select
  end subroutine
end module

program blockdiag_cgls_f
  use mpi_f08
  use pylopsmpi
  use tridiagonal_blocks
  implicit none
  integer, parameter :: NB = 2
  integer(c_int64_t), parameter :: N = 100
  type(plm_comm) :: comm
  type(plm_op) :: blocks(NB), a
  type(plm_array) :: x, xt, y
  type(plm_solver_info) :: info
  real(c_double), pointer :: p(:)
  real(c_double) :: err, nrm
  integer :: me, b, reason
  integer(c_int64_t) :: iters, i

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, me)
  call plm_check_version()
  call plm_comm_create(MPI_COMM_WORLD, comm)

  do b = 1, NB
    call plm_op_callback(N, N, tridiag_apply, tridiag_apply, tridiagonal(diag=4 + me * NB + b), blocks(b))
  end do
  call plm_op_blockdiag(comm, blocks, a)
  do b = 1, NB
    call plm_op_destroy(blocks(b))    ! the block-diagonal keeps them
  end do

  call plm_op_new_domain_array(a, xt)
  call plm_op_new_domain_array(a, x)
  call plm_op_new_range_array(a, y)
  call plm_array_get_local_write(xt, p)
  p = [(sin(0.1_c_double * (i + me * NB * N)), i = 1, size(p, kind=c_int64_t))]
  call plm_array_restore_local_write(xt, p)
  call plm_op_apply(a, xt, y)
  call plm_array_fill(x, 0.0_c_double)

  call plm_solver_info_create(info)
  call plm_solve_cgls(a, y, x, 2 * N, 0.0_c_double, 1d-24, info)
  call plm_solver_info_get(info, reason, iters)

  call plm_array_norm(xt, 2.0_c_double, nrm)
  call plm_array_axpby(-1.0_c_double, xt, 1.0_c_double, x)   ! x = x - x_true
  call plm_array_norm(x, 2.0_c_double, err)
  if (me == 0) write(*, '(a,i0,a,i0,a,es9.2)') 'blockdiag_cgls_f: CGLS stopped (reason ', reason, ') after ', &
                                              iters, ' iterations; relative error ', err / nrm
  if (me == 0 .and. err / nrm < 1d-8) write(*, '(a)') 'VERIFIED'

  call plm_solver_info_destroy(info)
  call plm_array_destroy(x)
  call plm_array_destroy(xt)
  call plm_array_destroy(y)
  call plm_op_destroy(a)
  call plm_comm_destroy(comm)
  call MPI_Finalize()
  if (err / nrm >= 1d-8) error stop 1
end program
