! Without ierr, a failed call stops the program with the library's message: rank 1 asks for a
! different shape, every rank's plm_array_create fails and stops (the test expects the message).
program test_f_errorstop
  use plm_ftest
  implicit none
  type(plm_comm) :: comm
  type(plm_array) :: x
  call start(comm)
  call plm_array_create(comm, [4_c_int64_t + min(me, 1)], 1, PLM_PARTITION_SCATTER, PLM_FLOAT64, x)
  write(*, '(a)') 'test_f_errorstop: NOT STOPPED'
  call finish(comm, 'test_f_errorstop')
end program
