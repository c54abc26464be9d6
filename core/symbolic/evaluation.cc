// ExprArena::Evaluate (core/symbolic/symbolic.h), exact in rationals of
// int64s, and ExprArena::SymbolsOf.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/symbolic/checked_arithmetic.h"
#include "core/symbolic/symbolic.h"

namespace memplan {
namespace {

using symbolic_internal::FloorDivInt;
using symbolic_internal::PowInt;

// Exact rational arithmetic for evaluation. Every function returns false
// on int64 overflow.

using Int128 = __int128;

bool FitsInt64(Int128 value) {
  return value >= std::numeric_limits<int64_t>::min() &&
         value <= std::numeric_limits<int64_t>::max();
}

Int128 Gcd128(Int128 a, Int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    Int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// An exact rational num / den with den > 0, in lowest terms.
struct Rational {
  int64_t num = 0;
  int64_t den = 1;

  bool is_integer() const { return den == 1; }
};

// Reduces n / d (d != 0) into *out; false when it does not fit int64.
bool MakeRational(Int128 n, Int128 d, Rational* out) {
  if (d < 0) {
    n = -n;
    d = -d;
  }
  const Int128 g = Gcd128(n, d);
  if (g > 1) {
    n /= g;
    d /= g;
  }
  if (!FitsInt64(n) || !FitsInt64(d)) return false;
  *out = Rational{static_cast<int64_t>(n), static_cast<int64_t>(d)};
  return true;
}

bool AddRational(Rational a, Rational b, Rational* out) {
  return MakeRational(Int128{a.num} * b.den + Int128{b.num} * a.den,
                      Int128{a.den} * b.den, out);
}
bool MulRational(Rational a, Rational b, Rational* out) {
  return MakeRational(Int128{a.num} * b.num, Int128{a.den} * b.den, out);
}
// b must not be 0.
bool DivRational(Rational a, Rational b, Rational* out) {
  return MakeRational(Int128{a.num} * b.den, Int128{a.den} * b.num, out);
}
// a - b * floor(a / b), sympy's Mod (Python's %); b must not be 0. Exact
// in 128 bits: over the common denominator a.den * b.den it is the
// remainder of two numerators below 2^126, so only a result that does not
// fit int64 fails (never for integers: |result| < |b|).
bool ModRational(Rational a, Rational b, Rational* out) {
  const Int128 x = Int128{a.num} * b.den;
  const Int128 y = Int128{b.num} * a.den;
  Int128 remainder = x % y;
  if (remainder != 0 && ((remainder < 0) != (y < 0))) remainder += y;
  return MakeRational(remainder, Int128{a.den} * b.den, out);
}
int CompareRational(Rational a, Rational b) {
  const Int128 left = Int128{a.num} * b.den;
  const Int128 right = Int128{b.num} * a.den;
  return left < right ? -1 : left > right ? 1 : 0;
}
Rational FloorRational(Rational a) {
  int64_t q = 0;
  FloorDivInt(a.num, a.den, &q);  // den > 0: cannot overflow
  return Rational{q, 1};
}
Rational CeilRational(Rational a) {
  Rational floor = FloorRational(a);
  if (!a.is_integer()) ++floor.num;  // floor < a <= max, so no overflow
  return floor;
}

}  // namespace

absl::StatusOr<int64_t> ExprArena::Evaluate(ExprId root,
                                            const SymbolValues& values) const {
  absl::flat_hash_map<ExprId, Rational> memo;
  std::vector<std::pair<ExprId, bool>> stack = {{root, false}};
  auto overflow = [&](ExprId id) {
    return absl::OutOfRangeError(
        absl::StrCat("int64 overflow evaluating ", Snippet(id)));
  };
  while (!stack.empty()) {
    auto [id, children_done] = stack.back();
    stack.pop_back();
    if (memo.contains(id)) continue;
    const absl::Span<const ExprId> ops = operands(id);
    if (!children_done) {
      stack.push_back({id, true});
      for (ExprId op : ops) {
        if (!memo.contains(op)) stack.push_back({op, false});
      }
      continue;
    }
    const Node& node = nodes_[id];
    absl::InlinedVector<Rational, 4> args;
    for (ExprId op : ops) args.push_back(memo[op]);
    Rational result;
    switch (node.kind) {
      case ExprKind::kInteger:
        result = Rational{node.value, 1};
        break;
      case ExprKind::kSymbol: {
        const auto it = values.find(symbols_[node.value]);
        if (it == values.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("symbol ", symbols_[node.value], " has no value"));
        }
        result = Rational{it->second, 1};
        break;
      }
      case ExprKind::kAdd:
      case ExprKind::kMul:
        result = Rational{node.kind == ExprKind::kAdd ? 0 : 1, 1};
        for (const Rational& arg : args) {
          const bool ok = node.kind == ExprKind::kAdd
                              ? AddRational(result, arg, &result)
                              : MulRational(result, arg, &result);
          if (!ok) return overflow(id);
        }
        break;
      case ExprKind::kMax:
      case ExprKind::kMin:
        result = args[0];
        for (const Rational& arg : args) {
          const int order = CompareRational(arg, result);
          if (node.kind == ExprKind::kMax ? order > 0 : order < 0) {
            result = arg;
          }
        }
        break;
      case ExprKind::kDiv:
      case ExprKind::kFloorDiv:
      case ExprKind::kMod: {
        if (args[1].num == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("division by zero evaluating ", Snippet(id)));
        }
        if (node.kind == ExprKind::kMod) {
          if (!ModRational(args[0], args[1], &result)) return overflow(id);
          break;
        }
        Rational quotient;
        if (!DivRational(args[0], args[1], &quotient)) return overflow(id);
        result =
            node.kind == ExprKind::kDiv ? quotient : FloorRational(quotient);
        break;
      }
      case ExprKind::kPow: {
        if (!args[1].is_integer()) {
          return absl::InvalidArgumentError(
              absl::StrCat("non-integer power evaluating ", Snippet(id)));
        }
        int64_t exponent = args[1].num;
        Rational base = args[0];
        if (exponent < 0) {
          if (base.num == 0) {
            return absl::InvalidArgumentError(
                absl::StrCat("division by zero evaluating ", Snippet(id)));
          }
          if (exponent == std::numeric_limits<int64_t>::min()) {
            return overflow(id);
          }
          exponent = -exponent;
          if (!DivRational(Rational{1, 1}, base, &base)) return overflow(id);
        }
        int64_t num = 0;
        int64_t den = 0;
        if (!PowInt(base.num, exponent, &num) ||
            !PowInt(base.den, exponent, &den)) {
          return overflow(id);
        }
        result = Rational{num, den};
        break;
      }
      case ExprKind::kCeiling:
        result = CeilRational(args[0]);
        break;
      case ExprKind::kFloor:
        result = FloorRational(args[0]);
        break;
      case ExprKind::kAlign: {
        Rational quotient;
        Rational up;
        if (!DivRational(args[0], Rational{node.value, 1}, &quotient) ||
            !MulRational(CeilRational(quotient), Rational{node.value, 1},
                         &up)) {
          return overflow(id);
        }
        result = up;
        break;
      }
    }
    memo[id] = result;
  }
  const Rational value = memo[root];
  if (!value.is_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value ", value.num, "/", value.den, " of ",
                     Snippet(root), " is not an integer"));
  }
  return value.num;
}

std::vector<std::string> ExprArena::SymbolsOf(ExprId root) const {
  absl::flat_hash_set<ExprId> seen = {root};
  std::vector<ExprId> stack = {root};
  std::vector<int64_t> indices;
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (nodes_[id].kind == ExprKind::kSymbol)
      indices.push_back(nodes_[id].value);
    for (ExprId op : operands(id)) {
      if (seen.insert(op).second) stack.push_back(op);
    }
  }
  std::sort(indices.begin(), indices.end());
  std::vector<std::string> names;
  for (int64_t index : indices) names.push_back(symbols_[index]);
  return names;
}

}  // namespace memplan
