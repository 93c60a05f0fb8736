/* Controls of the emulated device (PLM_DEVICE_EMULATION builds; src/emu), for tests: fault
 * injection and counters. Not part of pylopsmpi's API. Settings read from the environment when
 * the emulated runtime starts:
 *   PLM_EMU_DEVICES=N      devices per process (default 8)
 *   PLM_EMU_MEMORY_MB=N    device memory per process (default 8192; virtual until touched)
 *   PLM_EMU_PROTECT=0|1    host code touching device memory faults (default 1)
 *   PLM_EMU_POISON=0|1     new allocations hold 0xFF bytes, freed ones 0xEE (default 1)
 *   PLM_EMU_EAGER=0|1      streams run work when it is queued instead of deferring it
 *                          (default 0; 1 shows what deferral catches) */
#ifndef PLM_DEVICE_EMU_H
#define PLM_DEVICE_EMU_H

#ifdef __cplusplus
extern "C" {
#endif

/* The n-th kernel launched from now on this process fails when it runs, as a faulting kernel:
 * the context's error becomes sticky (cudaErrorLaunchFailure) and every later CUDA call returns
 * it until plm_emu_clear_errors(). 0 disarms. */
void plm_emu_fail_kernel(long long n);
/* The n-th NCCL operation started from now on this process fails: its communicator reports
 * ncclSystemError asynchronously and the operation never completes (as a hung collective);
 * peers blocked on it see ncclRemoteError once it is aborted. 0 disarms. */
void plm_emu_fail_nccl(long long n);
/* Clears a sticky error and drops the work still queued (a device reset that keeps memory). */
void plm_emu_clear_errors(void);
/* open 1: one more holder lets host code touch device memory (MPI, for the CUDA-aware
 * backend: a CUDA-aware MPI reads device memory); open 0: one fewer. */
void plm_emu_open_device_memory(int open);
/* Deferral on (0, the default) or off (1: queued work runs at once). */
void plm_emu_set_eager(int eager);
/* Counters since the process started: "kernels" launched, "ops" pieces of queued work run
 * (kernels, copies, library calls), "syncs" that found work queued and ran it, "faults"
 * injected that fired. */
long long plm_emu_count(const char *what);

#ifdef __cplusplus
}
#endif

#endif
