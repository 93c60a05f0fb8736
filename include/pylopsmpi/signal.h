/**
 * @file pylopsmpi/signal.h
 * @brief Non-stationary convolution, Fredholm1, MDC, the distributed FFT and fft shifts.
 *
 * Part of the C API: include pylopsmpi.h, whose conventions hold here.
 */
#ifndef PYLOPSMPI_SIGNAL_H
#define PYLOPSMPI_SIGNAL_H

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup plm_signal Signal processing operators
 *  @brief Non-stationary convolution, Fredholm1, MDC, the distributed FFT and fft shifts.
 *  @{ */

/* ------------------------------------------------------------------------------------------ */
/* Non-stationary convolution                                                                 */
/* ------------------------------------------------------------------------------------------ */

/**
 * Non-stationary 1-D convolution along `axis` (MPINonStationaryConvolve1D; PyLops'
 * NonStationaryConvolve1D) of the stencil operators' model (see "Stencil operators": an N-D
 * array of global shape dims, C order, split along axis 0 in whole rows; local_rows as there).
 * nfilt filters of nh taps (nh odd, centred on their middle tap), hs row-major nfilt x nh of
 * the dtype, sit at the regularly spaced positions ih[0] < ih[1] < ... (ih[k] = ih[0] + k dh,
 * all in [0, dims[axis])); one filter (nfilt = 1) is a stationary convolution. Along the axis,
 * sample i gets the filter h_i linearly interpolated between the two positions around it
 * (the first filter before ih[0], the last after ih[nfilt-1]). Forward: each input sample
 * spreads its filter, y[i + k - nh/2] += h_i[k] x[i]; adjoint: x[i] = sum_k conj(h_i[k])
 * y[i + k - nh/2] (PyLops' rmatvec for real dtypes; the exact adjoint for complex ones,
 * where PyLops does not conjugate); taps past either end of the axis are dropped. Domain and
 * range are the model's layout; host memory only (device arrays: PLM_ERR_NOT_SUPPORTED on
 * every rank). PyLops-MPI's limits are lifted: any split works (dims[axis] need not divide
 * by the rank count; thin and empty blocks) and a rank needs no filter position of its own,
 * since every rank keeps all the filters and interpolates from global positions. Along axis 0
 * a rank takes the nh/2 samples it needs on either side of its block from whichever ranks
 * hold them (one persistent exchange, overlapped with the interior); along another axis the
 * convolution is local. PLM_ERR_INVALID_ARG on every rank for an even nh, positions that are
 * not regular and increasing or outside [0, dims[axis]), a wrong hs_bytes, or arguments (or
 * filters) that differ between ranks.
 * @param[in]  comm       communicator
 * @param[in]  dtype      element type (any of the four)
 * @param[in]  ndim       number of dimensions of the model
 * @param[in]  dims       global shape of the model, C order \len{ndim}
 * @param[in]  local_rows this rank's rows along axis 0, or -1 on every rank for the default split
 * @param[in]  axis       the axis of the convolution (negative counts from the end)
 * @param[in]  nfilt      number of filters, >= 1
 * @param[in]  nh         taps of each filter, odd
 * @param[in]  hs         the filters, nfilt x nh elements of dtype, row-major, host memory,
 *                        copied; equal on every rank \mem{host}
 * @param[in]  hs_bytes   must equal nfilt * nh * plm_dtype_size(dtype)
 * @param[in]  ih         the filters' positions along the axis, regularly spaced \len{nfilt}
 * @param[out] out        new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_nonstationary_convolve1d(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims,
                                                     int64_t local_rows, int axis, int64_t nfilt, int64_t nh,
                                                     const void *hs, int64_t hs_bytes, const int64_t *ih,
                                                     plm_op_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Fredholm1 and MDC: kernels split along their first axis, vectors BROADCAST                 */
/* ------------------------------------------------------------------------------------------ */

/**
 * Fredholm integral of the first kind (MPIFredholm1): y[k] = G[k] x[k] for every slice k, with
 * G[k] (nx x ny), x[k] (ny x nz), y[k] (nx x nz). G is distributed along its first (slice)
 * axis: each rank passes its nsl consecutive slices, rank 0 the first ones, then rank 1's, and
 * so on; any count >= 0 per rank works (PyLops-MPI refuses a rank with exactly one slice; here
 * a rank may own 0, 1 or many). The total is the sum over the ranks. Domain: a 1-D BROADCAST
 * vector of total * ny * nz elements, the C-order (total, ny, nz) array; range: BROADCAST,
 * (total, nx, nz). Forward: each rank multiplies its own slices (one gemm each) and one
 * allgatherv of the slices' results fills y on every rank; the adjoint is the same with G^H.
 * Device arrays run on the device: G is uploaded once per device (by the first device apply)
 * and this rank's slices are one strided-batched cuBLAS gemm.
 * @param[in]  comm      communicator
 * @param[in]  dtype     element type of G, x and y (any of the four)
 * @param[in]  nsl       this rank's slice count, >= 0
 * @param[in]  nx        rows of every slice (y's middle axis); equal on every rank
 * @param[in]  ny        columns of every slice (x's middle axis); equal on every rank
 * @param[in]  nz        the last axis of x and y (PyLops' nz); equal on every rank
 * @param[in]  g         this rank's slices, (nsl, nx, ny) C order, host memory, copied (NULL
 *                       with g_bytes 0 where nsl nx ny is 0) \mem{host}
 * @param[in]  g_bytes   must equal nsl * nx * ny * plm_dtype_size(dtype) (PLM_ERR_INVALID_ARG
 *                       on every rank otherwise)
 * @param[in]  save_gt   non-zero: keep G^H too (twice the memory) for the adjoint's gemm;
 *                       zero: the adjoint multiplies by G conjugate-transposed in the gemm
 * @param[in]  usematmul PyLops' choice between matmul and a loop of dots; accepted as a hint:
 *                       both compute one gemm per slice here
 * @param[out] out       new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_fredholm1(plm_comm_t comm, plm_dtype_t dtype, int64_t nsl, int64_t nx, int64_t ny,
                                      int64_t nz, const void *g, int64_t g_bytes, int save_gt, int usematmul,
                                      plm_op_t *out);
/**
 * Multi-dimensional convolution (MPIMDC): y = F1^H I1^H Fredholm I F x, with x the model
 * (nt, nr, nv) and y the data (nt, ns, nv), both 1-D BROADCAST vectors of the C-order arrays,
 * real (float32 for complex64 G, float64 for complex128 G). F and F1: PyLops' real FFT along
 * time (norm "ortho", bins 1 .. (nt-1)/2 times sqrt 2), F with ifftshift before it when
 * twosided (the model's time axis is centred on zero lag); I: the first nfreq of the
 * nt/2 + 1 bins (I^H pads zeros); Fredholm: plm_op_fredholm1() over the frequencies with G
 * times dr dt sqrt(nt) (unless prescaled), conjugated when conj. G is distributed along its
 * first (frequency) axis like Fredholm1's slices: each rank passes nf consecutive frequencies
 * (0, 1 or many), rank 0 the lowest; they must sum to min(nfreq, nt/2 + 1) (nfreq above
 * nt/2 + 1 is clipped, as in PyLops-MPI). The time FFTs are local (every rank holds x and y
 * whole), through FFTW plans made here; the one communication per apply is Fredholm's
 * allgatherv. Device arrays run on the device (cuFFT plans and G made once per device by the
 * first device apply, Fredholm1's batched cuBLAS gemm). PLM_ERR_NOT_SUPPORTED on every rank
 * in builds without FFTW.
 * @param[in]  comm      communicator
 * @param[in]  dtype     element type of G: PLM_COMPLEX64 or PLM_COMPLEX128
 * @param[in]  nt        time samples of x and y, >= 1 (odd when twosided)
 * @param[in]  nv        virtual sources (the last axis of x and y), >= 1
 * @param[in]  nfreq     frequencies kept, >= 1 (clipped to nt/2 + 1)
 * @param[in]  nf        this rank's frequency count, >= 0
 * @param[in]  ns        sources (y's middle axis, G's rows), >= 1
 * @param[in]  nr        receivers (x's middle axis, G's columns), >= 1
 * @param[in]  dt        time sampling (finite)
 * @param[in]  dr        receiver sampling (finite)
 * @param[in]  twosided  non-zero: x holds negative and positive times (nt odd)
 * @param[in]  conj      non-zero: convolve with the complex conjugate of G
 * @param[in]  prescaled non-zero: G already carries the dr dt sqrt(nt) factor
 * @param[in]  save_gt   as in plm_op_fredholm1() (PyLops-MPI's default is on)
 * @param[in]  g         this rank's frequencies, (nf, ns, nr) C order, host memory, copied
 *                       (NULL with g_bytes 0 where nf is 0) \mem{host}
 * @param[in]  g_bytes   must equal nf * ns * nr * plm_dtype_size(dtype)
 * @param[out] out       new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_mdc(plm_comm_t comm, plm_dtype_t dtype, int64_t nt, int64_t nv, int64_t nfreq, int64_t nf,
                                int64_t ns, int64_t nr, double dt, double dr, int twosided, int conj, int prescaled,
                                int save_gt, const void *g, int64_t g_bytes, plm_op_t *out);

/* ------------------------------------------------------------------------------------------ */
/* Distributed FFT (MPIFFTND, MPIFFT2D) and fft shifts                                        */
/* ------------------------------------------------------------------------------------------ */


/** Normalisation of the FFT operator (PyLops' norm). */
typedef enum plm_fft_norm {
    PLM_FFT_NORM_NONE = 0, /**< norm="none": the forward unscaled, the adjoint its exact adjoint */
    PLM_FFT_NORM_1_N = 1,  /**< norm="1/n": both directions scaled by 1/N, N the product of the FFT lengths */
    PLM_FFT_NORM_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_fft_norm_t;

/**
 * N-D FFT over the chosen axes of an array distributed along axis 0 (PyLops-MPI's MPIFFTND;
 * MPIFFT2D is this with naxes = 2), slab decomposition. The model x is the N-D array of
 * global shape dims (C order) split along axis 0 with the default split (the first
 * dims[0] % P ranks get one extra row; a rank may have none), passed as a 1-D SCATTER vector
 * like the stencil operators' models (plm_op_domain()). The output y has global shape dimsd
 * = dims, except that with real = 1 the last FFT axis has n / 2 + 1 bins; it is split along
 * one axis, the output axis (plm_op_fft_range()), with the default split, again as a 1-D
 * SCATTER vector of the C-order blocks: axis 0 when 0 is not among axes (then the operator
 * needs no communication); otherwise the first axis not among axes, or axis 1 when every
 * axis is transformed (one all-to-all per apply). A 1-D array (ndim = 1) is transformed by a
 * distributed 1-D algorithm on several ranks (n = n1 n2, n1 the largest divisor of n up to
 * sqrt(n): three all-to-alls, twiddle factors; a prime n runs on one rank) and its output is
 * split along axis 0. plm_op_fftnd_ex() can keep the output split along axis 0 instead
 * (PyLops-MPI's output); plm_op_fftnd_plan() adds nffts and the planning effort.
 * Conventions as PyLops-MPI's: y = sum_k x_k exp(-2 pi i j.k / n) over the axes ("none"),
 * times 1/N with PLM_FFT_NORM_1_N; the adjoint is the exact adjoint (dot test) in both
 * norms. real = 1: x's real part is transformed (r2c along the last of axes), the bins
 * [1, 1 + (n - 1) / 2) of that axis are multiplied by sqrt(2) and the adjoint returns a real
 * result (imaginary parts zero), so forward and adjoint are adjoints as real-linear maps.
 * A real dtype (PLM_FLOAT32 / PLM_FLOAT64) gives the complex operator of that precision that
 * keeps the real part of x (and of the adjoint's result), as PyLops' floating dtypes do. The
 * operator's dtype, and its arrays', is always complex (PLM_COMPLEX64 or PLM_COMPLEX128).
 * ifftshift_before[i] rolls x by -(n / 2) along axes[i] before the transform,
 * fftshift_after[i] rolls y by n / 2 (n the output length) after it; the adjoint undoes them.
 * Such operators are linear over the reals only (plm_op_clinear() gives 0; plm_op_dottest()
 * compares real parts). Local FFTs through FFTW plans made here, once, with the default
 * planning effort (PLM_FFT_PLANNING_DEFAULT: measured, see plm_fft_planning_t); the exchange
 * through the library's communication layer. Device arrays run on the device: cuFFT plans
 * made once per device by the first device apply, the exchange on device buffers through the
 * communicator's device backend. A build without FFTW returns PLM_ERR_NOT_SUPPORTED on every
 * rank.
 * @param[in]  comm             communicator
 * @param[in]  dtype            PLM_COMPLEX64 / PLM_COMPLEX128, or PLM_FLOAT32 / PLM_FLOAT64 (see above)
 * @param[in]  ndim             number of dimensions
 * @param[in]  dims             global shape, C order \len{ndim}
 * @param[in]  naxes            number of FFT axes, 1..ndim
 * @param[in]  axes             the FFT axes (-ndim..ndim-1, distinct), in order: with real = 1
 *                              the last one is the r2c axis \len{naxes}
 * @param[in]  sampling         naxes sampling steps (finite, non-zero) for the frequencies, or
 *                              NULL (all 1) \len{naxes}
 * @param[in]  norm             the normalisation
 * @param[in]  real             1 for a real-input transform (see above), else 0
 * @param[in]  ifftshift_before naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[in]  fftshift_after   naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[out] out              new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_fftnd(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, int naxes,
                                  const int *axes, const double *sampling, plm_fft_norm_t norm, int real,
                                  const int *ifftshift_before, const int *fftshift_after, plm_op_t *out);

/** Where an FFT operator leaves its output (plm_op_fftnd_ex()). */
typedef enum plm_fft_output {
    PLM_FFT_OUTPUT_FEWEST_EXCHANGES = 0, /**< plm_op_fftnd()'s split: axis 0 when axis 0 is not
                                              transformed, else the first axis off the transform
                                              (axis 1 when every axis is): one all-to-all */
    PLM_FFT_OUTPUT_AXIS0 = 1,            /**< split along axis 0 as the model (PyLops-MPI's output
                                              vector): a second all-to-all per apply when axis 0 is
                                              transformed, planned with the operator */
    PLM_FFT_OUTPUT_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_fft_output_t;

/**
 * plm_op_fftnd() with the choice of the output's split: PLM_FFT_OUTPUT_AXIS0 gives the output
 * split along axis 0 (plm_op_fft_range() then reports axis 0) whatever the axes, through a
 * second all-to-all made with the operator (no allocation per apply). Costs less than
 * plm_op_fftnd() followed by plm_array_redistribute(), which allocates its output and buffers
 * on every call. Arguments as plm_op_fftnd(), plus:
 * @param[in]  comm             communicator
 * @param[in]  dtype            as plm_op_fftnd()
 * @param[in]  ndim             number of dimensions
 * @param[in]  dims             global shape, C order \len{ndim}
 * @param[in]  naxes            number of FFT axes, 1..ndim
 * @param[in]  axes             the FFT axes \len{naxes}
 * @param[in]  sampling         naxes sampling steps, or NULL (all 1) \len{naxes}
 * @param[in]  norm             the normalisation
 * @param[in]  real             1 for a real-input transform, else 0
 * @param[in]  ifftshift_before naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[in]  fftshift_after   naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[in]  output           where the output is split; the same on every rank
 * @param[out] out              new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_fftnd_ex(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, int naxes,
                                     const int *axes, const double *sampling, plm_fft_norm_t norm, int real,
                                     const int *ifftshift_before, const int *fftshift_after,
                                     plm_fft_output_t output, plm_op_t *out);

/** How hard the FFT's planner works for its local transforms (FFTW's planner flags). */
typedef enum plm_fft_planning {
    PLM_FFT_PLANNING_DEFAULT = 0,    /**< the library's choice: PLM_FFT_PLANNING_MEASURE, so the
                                          many applies of a solve amortise the planning */
    PLM_FFT_PLANNING_ESTIMATE = 1,   /**< FFTW_ESTIMATE: plans from a model, in microseconds */
    PLM_FFT_PLANNING_MEASURE = 2,    /**< FFTW_MEASURE: times candidate plans once (a fraction of a
                                          second per operator at 128^3; instant from wisdom) */
    PLM_FFT_PLANNING_PATIENT = 3,    /**< FFTW_PATIENT: times more candidates (seconds to minutes) */
    PLM_FFT_PLANNING_EXHAUSTIVE = 4, /**< FFTW_EXHAUSTIVE: times every candidate */
    PLM_FFT_PLANNING_FORCE_INT32 = 0x7fffffff /**< not a value: keeps the enum 32 bits wide */
} plm_fft_planning_t;

/**
 * plm_op_fftnd_ex() with PyLops' nffts and a planning effort. nffts[i] is the transform length
 * along axes[i] (PyLops' FFTND nffts): the input is cropped to its first nffts[i] entries or
 * zero-padded to nffts[i] along that axis before the transform (after ifftshift_before); the
 * output has nffts[i] entries there (nffts[i] / 2 + 1 along the last axis when real = 1), the
 * adjoint crops back to dims (or pads with zeros), and the norm's N and the frequencies use
 * nffts. Along axis 0 the crop or pad happens in the operator's exchange. The planning effort
 * must be the same on every rank; with a measuring effort on several ranks, rank 0's FFTW
 * wisdom is broadcast once the ranks have planned and every rank plans again from it, so
 * ranks with the same local problem run the same plan (plm_fft_wisdom_import() /
 * plm_fft_wisdom_export() keep wisdom across runs). Arguments as plm_op_fftnd_ex(), plus:
 * @param[in]  comm             communicator
 * @param[in]  dtype            as plm_op_fftnd()
 * @param[in]  ndim             number of dimensions
 * @param[in]  dims             global shape, C order \len{ndim}
 * @param[in]  naxes            number of FFT axes, 1..ndim
 * @param[in]  axes             the FFT axes \len{naxes}
 * @param[in]  nffts            naxes transform lengths (>= 1), or NULL (dims[axes[i]])
 *                              \len{naxes}
 * @param[in]  sampling         naxes sampling steps, or NULL (all 1) \len{naxes}
 * @param[in]  norm             the normalisation
 * @param[in]  real             1 for a real-input transform, else 0
 * @param[in]  ifftshift_before naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[in]  fftshift_after   naxes flags (0/1), or NULL (none) \len{naxes}
 * @param[in]  output           where the output is split; the same on every rank
 * @param[in]  planning         the planning effort; the same on every rank
 * @param[out] out              new operator; release with plm_op_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{comm}
 */
PLM_API plm_status_t plm_op_fftnd_plan(plm_comm_t comm, plm_dtype_t dtype, int ndim, const int64_t *dims, int naxes,
                                       const int *axes, const int64_t *nffts, const double *sampling,
                                       plm_fft_norm_t norm, int real, const int *ifftshift_before,
                                       const int *fftshift_after, plm_fft_output_t output,
                                       plm_fft_planning_t planning, plm_op_t *out);

/**
 * FFTW's wisdom (what measuring planners learnt, both precisions) as text: every rank's
 * wisdom merged (each rank imports the others'), so the text is the same on every rank. Save
 * it and give it to plm_fft_wisdom_import() in a later run to plan at once.
 * @param[in]  comm   communicator
 * @param[out] buf    NULL (with size 0) to ask the length only, or size bytes of host memory
 *                    that receive the text, NUL-terminated (size must exceed the length)
 *                    \mem{host} \len{size}
 * @param[in]  size   bytes at buf (0 when buf is NULL)
 * @param[out] length the text's length in bytes, without the NUL
 * @returns PLM_SUCCESS, or an error status (plm_last_error()); PLM_ERR_INVALID_ARG on every
 *          rank when buf is too small on one; a build without FFTW gives an empty text
 * \collective{comm}
 */
PLM_API plm_status_t plm_fft_wisdom_export(plm_comm_t comm, char *buf, int64_t size, int64_t *length);

/**
 * Imports FFTW wisdom text (from plm_fft_wisdom_export(), or FFTW's own export functions of
 * either precision): rank 0's text is broadcast and merged into every rank's wisdom, so the
 * ranks plan alike; later FFT operators of the problems it covers plan at once.
 * @param[in]  comm   communicator
 * @param[in]  wisdom NUL-terminated text on rank 0; elsewhere NULL or the same text
 *                    \mem{host} \len{strlen(wisdom) + 1}
 * @returns PLM_SUCCESS, or an error status (plm_last_error()); PLM_ERR_INVALID_ARG on every
 *          rank when rank 0 gives NULL, when a rank gives another text than rank 0's, or when
 *          FFTW cannot read it on one; a no-op in a build without FFTW
 * \collective{comm}
 */
PLM_API plm_status_t plm_fft_wisdom_import(plm_comm_t comm, const char *wisdom);

/**
 * The output of an FFT operator (plm_op_fftnd()): its global shape and the axis it is split
 * along (each rank's block is the default split of dimsd[axis], C order).
 * @param[in]  op    the FFT operator
 * @param[in]  ndim  the operator's number of dimensions
 * @param[out] dimsd the output's global shape \len{ndim}
 * @param[out] axis  the distributed axis of the output
 * @returns PLM_SUCCESS, or an error status (plm_last_error()); PLM_ERR_INVALID_ARG for
 *          another kind of operator or another ndim
 * \notcollective
 */
PLM_API plm_status_t plm_op_fft_range(plm_const_op_t op, int ndim, int64_t *dimsd, int *axis);

/**
 * The frequencies of FFT axis i of an FFT operator: numpy.fft.fftfreq(nfft, sampling[i])
 * (rfftfreq for the last axis when real; nfft = nffts[i], dims[axes[i]] by default),
 * fftshift-ed when fftshift_after[i] is set.
 * @param[in]  op the FFT operator
 * @param[in]  i  the index into the operator's axes (0..naxes-1)
 * @param[in]  n  the number of frequencies: the output length dimsd[axes[i]]
 * @param[out] f  n frequencies \len{n}
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \notcollective
 */
PLM_API plm_status_t plm_op_fft_frequencies(plm_const_op_t op, int i, int64_t n, double *f);

/**
 * fftshift (inverse = 0: roll by n / 2) or ifftshift (inverse = 1: by -(n / 2)) of a
 * distributed array along the given axes (PyLops-MPI's fftshift_nd / ifftshift_nd), into a
 * new array of x's layout, dtype and memory space: unlike the reference the distribution
 * stays. Along the distributed axis of a SCATTER array the slices move between ranks (one
 * all-to-all); any ndim >= 1. axes, naxes and inverse must be equal on every rank.
 * @param[in]  x       the array
 * @param[in]  naxes   number of axes; 0 (with axes NULL) for every axis
 * @param[in]  axes    the axes (-ndim..ndim-1, distinct) \len{naxes}
 * @param[in]  inverse 0 for fftshift, 1 for ifftshift
 * @param[out] out     new array; destroy with plm_array_destroy()
 * @returns PLM_SUCCESS, or an error status (plm_last_error())
 * \collective{x}
 */
PLM_API plm_status_t plm_array_fftshift(plm_const_array_t x, int naxes, const int *axes, int inverse, plm_array_t *out);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PYLOPSMPI_SIGNAL_H */
