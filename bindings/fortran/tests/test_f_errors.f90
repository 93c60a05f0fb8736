! Bad input on one rank gives the same ierr on every rank (the library's agreement), never a hang:
!  1. a wrong shape on the last rank (plm_array_create): another extent, or at 1 rank a negative one;
!  2. a distributed dimension out of range on the last rank (the module passes it on as an axis
!     the library refuses);
!  3. a Fortran callback returning an error on the last rank (apply and CGLS: PLM_ERR_CALLBACK);
!  4. a local error (a pointer of the wrong kind): reported in ierr on that rank only.
program test_f_errors
  use plm_ftest
  use plm_fblocks
  implicit none
  type(plm_comm) :: comm
  type(plm_array) :: x, y
  type(plm_op) :: ops(1), a
  type(plm_solver_info) :: none
  type(dense_block) :: blk
  real(c_float), pointer :: p4(:)
  integer :: ierr
  integer(c_int64_t) :: n
  call start(comm)

  n = 6
  if (me == np - 1) n = merge(7, -1, np > 1)   ! differs from the others' (alone: negative)
  call plm_array_create(comm, [3_c_int64_t, n], 2, PLM_PARTITION_SCATTER, PLM_FLOAT64, x, ierr)
  call expect_agreed(ierr, 0, 'wrong shape on one rank')
  call expect(.not. c_associated(x%p), 'no array on failure')

  call plm_array_create(comm, [3_c_int64_t, 6_c_int64_t], merge(5, 2, me == np - 1), PLM_PARTITION_SCATTER, &
                        PLM_FLOAT64, x, ierr)
  call expect_agreed(ierr, PLM_ERR_INVALID_ARG, 'distributed dimension out of range on one rank')

  blk%a = block_matrix(me + 1)
  blk%rank = me
  blk%fail_rank = np - 1
  call plm_op_callback(int(size(blk%a, 1), c_int64_t), int(size(blk%a, 2), c_int64_t), block_matvec, &
                       block_rmatvec, blk, ops(1))
  call plm_op_blockdiag(comm, ops, a)
  call plm_op_destroy(ops(1))
  call plm_op_new_domain_array(a, x)
  call plm_op_new_range_array(a, y)
  call plm_array_fill(x, 1.0_c_double)
  call plm_op_apply(a, x, y, ierr)
  call expect_agreed(ierr, PLM_ERR_CALLBACK, 'a callback failing on one rank: apply')
  call plm_array_fill(y, 1.0_c_double)
  call plm_solve_cgls(a, y, x, 10_c_int64_t, 0.0_c_double, 0.0_c_double, none, ierr)
  call expect_agreed(ierr, PLM_ERR_CALLBACK, 'a callback failing on one rank: cgls')
  call expect(len(plm_error_message()) > 0, 'the library has a message')

  call plm_array_get_local_read(x, p4, ierr)
  call expect(ierr == PLM_ERR_DTYPE_MISMATCH, 'a float32 pointer on a float64 array')
  call expect(.not. associated(p4), 'no pointer on failure')

  call plm_array_destroy(x)
  call plm_array_destroy(y)
  call plm_op_destroy(a)
  call finish(comm, 'test_f_errors')
end program
