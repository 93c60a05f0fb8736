// The library's host-twin counter for the GPU tests, which are C (links the internal archive).
#include "ops/operator.hpp"

extern "C" long long plm_test_twins(void) { return plm::ops::twins_made(); }
