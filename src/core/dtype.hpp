// Element types and compile-time dispatch over them. The internal set adds the integer
// types the library sends as metadata (shapes, counts, flags).
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>

#include "core/error.hpp"

namespace plm {

enum class DType { f32, f64, c64, c128, i32, i64, u8 };

DType from_public(int dt);  // a plm_dtype_t value; throws INVALID_ARG for an unknown one
plm_dtype_t to_public(DType dt);
std::size_t dtype_size(DType dt);
bool is_complex(DType dt);
const char *dtype_name(DType dt);

// NumPy's promotion of two floating dtypes (numpy.result_type): the wider precision, complex
// when either is (float32 and complex64 give complex64, float64 and complex64 complex128).
// INVALID_ARG for the internal integer dtypes.
DType promote(DType a, DType b);
// Whether a value of dtype from converts to dtype to without loss (numpy.can_cast, "safe"):
// promote(from, to) == to.
bool widens(DType from, DType to);
// The real dtype of a dtype's precision (complex128: float64), and the complex one.
DType dtype_real(DType dt);
DType dtype_complex(DType dt);

template <typename T> struct real_of { using type = T; };
template <typename T> struct real_of<std::complex<T>> { using type = T; };
template <typename T> using real_t = typename real_of<T>::type;

template <typename T> constexpr bool is_complex_v = false;
template <typename T> constexpr bool is_complex_v<std::complex<T>> = true;

template <typename T> inline T conj_if(T v) { return v; }
template <typename T> inline std::complex<T> conj_if(std::complex<T> v) { return std::conj(v); }

// Calls f(T{}) with T the C++ type of one of the four floating dtypes.
template <typename F> decltype(auto) dispatch_float(DType dt, F &&f)
{
    switch (dt) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::c64: return f(std::complex<float>{});
    case DType::c128: return f(std::complex<double>{});
    default: break;
    }
    PLM_FAIL(PLM_ERR_INTERNAL, "dtype %s is not a floating dtype", dtype_name(dt));
}

}  // namespace plm
