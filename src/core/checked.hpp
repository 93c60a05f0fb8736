// Checked size arithmetic, the one place for it. Every extent, element count, offset and byte
// size that caller-given sizes feed is combined through these, so a result past int64 is an
// error naming what overflowed, never a wrapped (small, zero or negative) size. The status is
// PLM_ERR_INVALID_ARG by default (one rank's own arguments); callers combining sizes gathered
// from several ranks pass PLM_ERR_SIZE_MISMATCH.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "core/dtype.hpp"

namespace plm {

// a + b, or throws st: "<what> overflows 64 bits".
inline int64_t checked_add(int64_t a, int64_t b, const char *what, plm_status_t st = PLM_ERR_INVALID_ARG)
{
    int64_t r = 0;
    PLM_REQUIRE(!__builtin_add_overflow(a, b, &r), st, "%s overflows 64 bits", what);
    return r;
}

// a * b, or throws st: "<what> overflows 64 bits".
inline int64_t checked_mul(int64_t a, int64_t b, const char *what, plm_status_t st = PLM_ERR_INVALID_ARG)
{
    int64_t r = 0;
    PLM_REQUIRE(!__builtin_mul_overflow(a, b, &r), st, "%s overflows 64 bits", what);
    return r;
}

// The sum of a range of int64 values (0 when empty).
template <typename C> int64_t checked_sum(const C &values, const char *what, plm_status_t st = PLM_ERR_INVALID_ARG)
{
    int64_t s = 0;
    for (int64_t v : values) s = checked_add(s, v, what, st);
    return s;
}
inline int64_t checked_sum(std::initializer_list<int64_t> values, const char *what,
                           plm_status_t st = PLM_ERR_INVALID_ARG)
{
    return checked_sum<std::initializer_list<int64_t>>(values, what, st);
}

// The product of a range of int64 values (1 when empty): a shape's element count.
template <typename C>
int64_t checked_product(const C &values, const char *what, plm_status_t st = PLM_ERR_INVALID_ARG)
{
    int64_t p = 1;
    for (int64_t v : values) p = checked_mul(p, v, what, st);
    return p;
}
inline int64_t checked_product(std::initializer_list<int64_t> values, const char *what,
                               plm_status_t st = PLM_ERR_INVALID_ARG)
{
    return checked_product<std::initializer_list<int64_t>>(values, what, st);
}

// The bytes of count (>= 0) elements of dt. They fit int64, so byte offsets into the buffer
// (element index times element size) cannot overflow either.
inline std::size_t checked_bytes(int64_t count, DType dt, const char *what, plm_status_t st = PLM_ERR_INVALID_ARG)
{
    PLM_REQUIRE(count >= 0, st, "%s is negative (%lld elements)", what, static_cast<long long>(count));
    return static_cast<std::size_t>(checked_mul(count, static_cast<int64_t>(dtype_size(dt)), what, st));
}

// A caller's buffer `what` (e.g. "asarray: out") of `bytes` bytes that the call reads or
// writes as count elements of dt: bytes must equal count * dtype size exactly, so a short or
// long buffer, or one sized for another dtype, is st ("asarray: out_bytes = 400, expected 800
// (100 float64 elements)"). Every *_bytes argument of the C API goes through here. Returns
// the byte count.
inline std::size_t require_buffer_bytes(const char *what, int64_t bytes, int64_t count, DType dt,
                                        plm_status_t st = PLM_ERR_INVALID_ARG)
{
    const std::size_t want = checked_bytes(count, dt, what, st);
    PLM_REQUIRE(bytes >= 0 && static_cast<std::size_t>(bytes) == want, st,
                "%s_bytes = %lld, expected %lld (%lld %s elements)", what, static_cast<long long>(bytes),
                static_cast<long long>(want), static_cast<long long>(count), dtype_name(dt));
    return want;
}

}  // namespace plm
