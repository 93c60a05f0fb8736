#include "core/dtype.hpp"

namespace plm {

DType from_public(int dt)
{
    switch (dt) {
    case PLM_FLOAT32: return DType::f32;
    case PLM_FLOAT64: return DType::f64;
    case PLM_COMPLEX64: return DType::c64;
    case PLM_COMPLEX128: return DType::c128;
    }
    PLM_FAIL(PLM_ERR_INVALID_ARG, "unknown dtype %d", dt);
}

plm_dtype_t to_public(DType dt)
{
    switch (dt) {
    case DType::f32: return PLM_FLOAT32;
    case DType::f64: return PLM_FLOAT64;
    case DType::c64: return PLM_COMPLEX64;
    case DType::c128: return PLM_COMPLEX128;
    default: break;
    }
    PLM_FAIL(PLM_ERR_INTERNAL, "dtype %s has no public value", dtype_name(dt));
}

std::size_t dtype_size(DType dt)
{
    switch (dt) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::c64: return 8;
    case DType::c128: return 16;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
    }
    return 0;
}

bool is_complex(DType dt) { return dt == DType::c64 || dt == DType::c128; }

const char *dtype_name(DType dt)
{
    switch (dt) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::c64: return "complex64";
    case DType::c128: return "complex128";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::u8: return "uint8";
    }
    return "invalid";
}

namespace {
void require_float(DType dt)
{
    PLM_REQUIRE(dt == DType::f32 || dt == DType::f64 || dt == DType::c64 || dt == DType::c128, PLM_ERR_INVALID_ARG,
                "dtype %s is not a floating dtype", dtype_name(dt));
}
bool wide(DType dt) { return dt == DType::f64 || dt == DType::c128; }
}  // namespace

DType dtype_real(DType dt)
{
    require_float(dt);
    return wide(dt) ? DType::f64 : DType::f32;
}

DType dtype_complex(DType dt)
{
    require_float(dt);
    return wide(dt) ? DType::c128 : DType::c64;
}

DType promote(DType a, DType b)
{
    require_float(a);
    require_float(b);
    const bool w = wide(a) || wide(b), c = is_complex(a) || is_complex(b);
    return c ? (w ? DType::c128 : DType::c64) : (w ? DType::f64 : DType::f32);
}

bool widens(DType from, DType to) { return promote(from, to) == to; }

}  // namespace plm
