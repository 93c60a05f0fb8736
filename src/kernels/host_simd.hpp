// Host kernels' code generation (host.cpp, stencil.cpp): the hot loops are compiled for
// AVX-512, AVX2 and baseline x86-64 and the loader picks one per CPU (ifunc), so the library
// runs on any x86-64 without -march flags. (-DPLM_CLONES= builds one baseline version, e.g.
// to test it on an AVX-512 machine.)
#pragma once

//
// Complex products use PLM_CLONES_NO512: GCC 12 fuses the (re, im) lanes of a complex product
// into AVX-512's vfmaddsub even with -ffp-contract=off, which would round differently from
// the device's (and the formula's) separate multiply and add. AVX2 without FMA cannot.
#if !defined(PLM_CLONES) && defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define PLM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define PLM_CLONES_NO512 __attribute__((target_clones("avx2", "default")))
// Loops that call std::fma on purpose (element::div3): with the FMA instructions (AVX-512F
// implies them, AVX2 does not: Haswell's set), else glibc's exact software fma.
#define PLM_CLONES_FMA __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#endif
#endif
#ifndef PLM_CLONES
#define PLM_CLONES
#endif
#ifndef PLM_CLONES_NO512
#define PLM_CLONES_NO512 PLM_CLONES
#endif
#ifndef PLM_CLONES_FMA
#define PLM_CLONES_FMA PLM_CLONES
#endif
#define PLM_INLINE inline __attribute__((always_inline))
