// Checked int64 arithmetic for the symbolic expressions' constant folding,
// parsing and evaluation (core/symbolic/symbolic.h). Every function returns
// false on int64 overflow. Internal to core/symbolic/.
#ifndef MEMPLAN_CORE_SYMBOLIC_CHECKED_ARITHMETIC_H_
#define MEMPLAN_CORE_SYMBOLIC_CHECKED_ARITHMETIC_H_

#include <cstdint>
#include <limits>
#include <numeric>

namespace memplan {
namespace symbolic_internal {

inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// floor(a / b) and a - b * floor(a / b) for b != 0, as Python's // and %.
inline bool FloorDivInt(int64_t a, int64_t b, int64_t* out) {
  if (b == -1 && a == std::numeric_limits<int64_t>::min()) return false;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  *out = q;
  return true;
}
inline bool ModInt(int64_t a, int64_t b, int64_t* out) {
  if (b == -1) {
    *out = 0;
    return true;
  }
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  *out = r;
  return true;
}

// base ** exponent for exponent >= 0, by squaring: O(log exponent).
inline bool PowInt(int64_t base, int64_t exponent, int64_t* out) {
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) {
      if (!CheckedMul(result, base, &result)) return false;
    }
    exponent >>= 1;
    // A square that overflows (|base| >= 2^31.5) still to be multiplied
    // in makes the result overflow too.
    if (exponent > 0 && !CheckedMul(base, base, &base)) return false;
  }
  *out = result;
  return true;
}

inline int64_t Gcd(int64_t a, int64_t b) {
  // Divisors here are positive or 0; std::gcd of 0 and x is x.
  return std::gcd(a, b);
}

}  // namespace symbolic_internal
}  // namespace memplan

#endif  // MEMPLAN_CORE_SYMBOLIC_CHECKED_ARITHMETIC_H_
