// ExprArena's builders (core/symbolic/symbolic.h): hash-consing and the
// light, sound simplifications of sums, products, Max/Min and the rest.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/symbolic/checked_arithmetic.h"
#include "core/symbolic/symbolic.h"

namespace memplan {
namespace {

using symbolic_internal::CheckedAdd;
using symbolic_internal::CheckedMul;
using symbolic_internal::FloorDivInt;
using symbolic_internal::Gcd;
using symbolic_internal::ModInt;
using symbolic_internal::PowInt;

// The position of each distinct key in order of first use: a scan while
// there are few keys, a hash map beyond.
class KeyIndex {
 public:
  // Returns the position of `key`, giving it the next one when new.
  size_t FindOrAdd(ExprId key, bool* inserted) {
    if (keys_.size() <= kScanLimit) {
      for (size_t i = 0; i < keys_.size(); ++i) {
        if (keys_[i] == key) {
          *inserted = false;
          return i;
        }
      }
    } else {
      const auto it = map_.find(key);
      if (it != map_.end()) {
        *inserted = false;
        return it->second;
      }
    }
    *inserted = true;
    keys_.push_back(key);
    if (keys_.size() == kScanLimit + 1) {
      for (size_t i = 0; i < keys_.size(); ++i) map_[keys_[i]] = i;
    } else if (keys_.size() > kScanLimit + 1) {
      map_[key] = keys_.size() - 1;
    }
    return keys_.size() - 1;
  }

 private:
  static constexpr size_t kScanLimit = 16;
  absl::InlinedVector<ExprId, kScanLimit + 1> keys_;
  absl::flat_hash_map<ExprId, size_t> map_;
};

}  // namespace

ExprId ExprArena::Make(ExprKind kind, int64_t value,
                       absl::Span<const ExprId> operands) {
  const uint64_t hash =
      absl::HashOf(static_cast<uint8_t>(kind), value, operands);
  auto [it, inserted] =
      interned_.try_emplace(hash, static_cast<ExprId>(nodes_.size()));
  if (!inserted) {
    for (ExprId id = it->second; id >= 0; id = nodes_[id].next_same_hash) {
      const Node& other = nodes_[id];
      if (other.kind == kind && other.value == value &&
          absl::MakeConstSpan(operands_.data() + other.first, other.count) ==
              operands) {
        return id;
      }
    }
  }
  const ExprId made = static_cast<ExprId>(nodes_.size());
  const ExprId previous = inserted ? -1 : it->second;
  it->second = made;

  Node node;
  node.kind = kind;
  node.value = value;
  node.first = static_cast<int32_t>(operands_.size());
  node.count = static_cast<int32_t>(operands.size());
  for (ExprId id : operands) operands_.push_back(id);
  bool all_integer = true;
  for (ExprId id : operands) all_integer &= nodes_[id].integer_valued;
  int64_t divisor = 1;
  switch (kind) {
    case ExprKind::kInteger:
      node.integer_valued = true;
      divisor =
          value == std::numeric_limits<int64_t>::min() ? 1 : std::llabs(value);
      break;
    case ExprKind::kSymbol:
      node.integer_valued = true;
      break;
    case ExprKind::kAdd:
    case ExprKind::kMax:
    case ExprKind::kMin:
      node.integer_valued = all_integer;
      if (all_integer) {
        divisor = 0;
        for (ExprId id : operands) divisor = Gcd(divisor, nodes_[id].divisor);
      }
      break;
    case ExprKind::kMul:
      node.integer_valued = all_integer;
      if (all_integer) {
        int64_t product = 1;
        int64_t largest = 1;
        bool overflow = false;
        for (ExprId id : operands) {
          const int64_t d = nodes_[id].divisor;
          largest = std::max(largest, d);
          if (d == 0) {
            product = 0;
            break;
          }
          overflow |= !CheckedMul(product, d, &product);
        }
        // Any factor's divisor divides the product.
        divisor = overflow ? largest : product;
      }
      break;
    case ExprKind::kPow: {
      int64_t exponent = 0;
      node.integer_valued = nodes_[operands[0]].integer_valued &&
                            IsInteger(operands[1], &exponent) && exponent >= 0;
      if (node.integer_valued && exponent > 0) {
        const int64_t d = nodes_[operands[0]].divisor;
        int64_t power = 1;
        divisor = PowInt(d, exponent, &power) ? power : std::max<int64_t>(d, 1);
      }
      break;
    }
    case ExprKind::kDiv:
      node.integer_valued = false;
      break;
    case ExprKind::kMod:
      node.integer_valued = all_integer;
      break;
    case ExprKind::kFloorDiv:
    case ExprKind::kCeiling:
    case ExprKind::kFloor:
      node.integer_valued = true;
      break;
    case ExprKind::kAlign:
      node.integer_valued = true;
      divisor = value;
      break;
  }
  node.divisor = divisor;
  node.next_same_hash = previous;
  // Own text (a number, a name, a call's syntax) plus, per operand, its
  // bound, parentheses and a separator.
  uint64_t bound = 48;
  if (kind == ExprKind::kSymbol) bound += symbols_[value].size();
  for (ExprId id : operands) {
    if (__builtin_add_overflow(bound, nodes_[id].printed_bound + 8, &bound)) {
      bound = std::numeric_limits<uint64_t>::max();
    }
  }
  node.printed_bound = bound;
  nodes_.push_back(node);
  return made;
}

ExprId ExprArena::Integer(int64_t value) {
  return Make(ExprKind::kInteger, value, {});
}

ExprId ExprArena::Symbol(absl::string_view name) {
  auto [it, inserted] = symbol_index_.try_emplace(
      std::string(name), static_cast<int32_t>(symbols_.size()));
  if (inserted) symbols_.emplace_back(name);
  return Make(ExprKind::kSymbol, it->second, {});
}

bool ExprArena::IsInteger(ExprId id, int64_t* value) const {
  if (nodes_[id].kind != ExprKind::kInteger) return false;
  if (value != nullptr) *value = nodes_[id].value;
  return true;
}

void ExprArena::SplitCoefficient(ExprId id, int64_t* coefficient,
                                 ExprId* rest) {
  const Node& node = nodes_[id];
  if (node.kind == ExprKind::kInteger) {
    *coefficient = node.value;
    *rest = -1;
    return;
  }
  if (node.kind == ExprKind::kMul && IsInteger(operands_[node.first])) {
    *coefficient = nodes_[operands_[node.first]].value;
    const absl::InlinedVector<ExprId, 4> others(
        operands_.begin() + node.first + 1,
        operands_.begin() + node.first + node.count);
    *rest = others.size() == 1 ? others[0] : Make(ExprKind::kMul, 0, others);
    return;
  }
  *coefficient = 1;
  *rest = id;
}

void ExprArena::SplitConstant(ExprId id, int64_t* constant, ExprId* rest) {
  const Node& node = nodes_[id];
  if (node.kind == ExprKind::kInteger) {
    *constant = node.value;
    *rest = -1;
    return;
  }
  if (node.kind == ExprKind::kAdd &&
      IsInteger(operands_[node.first + node.count - 1])) {
    *constant = nodes_[operands_[node.first + node.count - 1]].value;
    const absl::InlinedVector<ExprId, 4> others(
        operands_.begin() + node.first,
        operands_.begin() + node.first + node.count - 1);
    *rest = others.size() == 1 ? others[0] : Make(ExprKind::kAdd, 0, others);
    return;
  }
  *constant = 0;
  *rest = id;
}

ExprId ExprArena::Add(absl::Span<const ExprId> terms) {
  // Flatten one level: an Add's operands are never Adds.
  absl::InlinedVector<ExprId, 8> flat;
  for (ExprId term : terms) {
    if (nodes_[term].kind == ExprKind::kAdd) {
      const absl::Span<const ExprId> inner = operands(term);
      flat.insert(flat.end(), inner.begin(), inner.end());
    } else {
      flat.push_back(term);
    }
  }
  // Like terms: coefficient per distinct rest, in order of first use.
  absl::InlinedVector<std::pair<ExprId, int64_t>, 8> like;
  KeyIndex index;
  int64_t constant = 0;
  bool overflow = false;
  for (ExprId term : flat) {
    int64_t coefficient = 1;
    ExprId rest = -1;
    SplitCoefficient(term, &coefficient, &rest);
    if (rest < 0) {
      overflow |= !CheckedAdd(constant, coefficient, &constant);
      continue;
    }
    bool inserted = false;
    const size_t at = index.FindOrAdd(rest, &inserted);
    if (inserted) {
      like.push_back({rest, coefficient});
    } else {
      overflow |= !CheckedAdd(like[at].second, coefficient, &like[at].second);
    }
  }
  if (overflow) return Make(ExprKind::kAdd, 0, flat);
  absl::InlinedVector<ExprId, 8> out;
  for (const auto& [rest, coefficient] : like) {
    if (coefficient == 0) continue;
    out.push_back(coefficient == 1 ? rest : Mul(Integer(coefficient), rest));
  }
  if (constant != 0) out.push_back(Integer(constant));
  if (out.empty()) return Integer(0);
  if (out.size() == 1) return out[0];
  return Make(ExprKind::kAdd, 0, out);
}

ExprId ExprArena::Mul(absl::Span<const ExprId> factors) {
  absl::InlinedVector<ExprId, 8> flat;
  for (ExprId factor : factors) {
    if (nodes_[factor].kind == ExprKind::kMul) {
      const absl::Span<const ExprId> inner = operands(factor);
      flat.insert(flat.end(), inner.begin(), inner.end());
    } else {
      flat.push_back(factor);
    }
  }
  int64_t coefficient = 1;
  bool overflow = false;
  absl::InlinedVector<ExprId, 8> others;
  for (ExprId factor : flat) {
    int64_t value = 0;
    if (IsInteger(factor, &value)) {
      overflow |= !CheckedMul(coefficient, value, &coefficient);
    } else {
      others.push_back(factor);
    }
  }
  if (overflow) return Make(ExprKind::kMul, 0, flat);
  if (coefficient == 0 || others.empty()) return Integer(coefficient);
  if (coefficient == 1 && others.size() == 1) return others[0];
  // A number times a sum distributes, as in sympy (2*(x + 1) -> 2*x + 2),
  // so that like terms meet.
  if (others.size() == 1 && nodes_[others[0]].kind == ExprKind::kAdd) {
    // A copy: making nodes below may move operands_.
    const absl::InlinedVector<ExprId, 8> terms(operands(others[0]).begin(),
                                               operands(others[0]).end());
    absl::InlinedVector<ExprId, 8> scaled;
    for (ExprId term : terms) {
      int64_t c = 1;
      ExprId rest = -1;
      SplitCoefficient(term, &c, &rest);
      int64_t product = 0;
      if (!CheckedMul(c, coefficient, &product)) {
        return Make(ExprKind::kMul, 0, {Integer(coefficient), others[0]});
      }
      scaled.push_back(
          rest < 0       ? Integer(product)
          : product == 1 ? rest
                         : Make(ExprKind::kMul, 0, MulOperands(product, rest)));
    }
    return Add(scaled);
  }
  if (coefficient != 1) others.insert(others.begin(), Integer(coefficient));
  return Make(ExprKind::kMul, 0, others);
}

absl::InlinedVector<ExprId, 8> ExprArena::MulOperands(int64_t coefficient,
                                                      ExprId rest) {
  absl::InlinedVector<ExprId, 8> out{Integer(coefficient)};
  if (nodes_[rest].kind == ExprKind::kMul) {
    const absl::Span<const ExprId> inner = operands(rest);
    out.insert(out.end(), inner.begin(), inner.end());
  } else {
    out.push_back(rest);
  }
  return out;
}

ExprId ExprArena::Div(ExprId a, ExprId b) {
  int64_t x = 0;
  int64_t y = 0;
  const bool a_int = IsInteger(a, &x);
  if (IsInteger(b, &y) && y != 0) {
    if (y == 1) return a;
    // INT64_MIN / -1 overflows, and so does INT64_MIN % -1 (SIGFPE on
    // x86): test that before the remainder.
    if (a_int && !(y == -1 && x == std::numeric_limits<int64_t>::min()) &&
        x % y == 0) {
      return Integer(x / y);
    }
    if (a_int && x == 0) return Integer(0);
  }
  return Make(ExprKind::kDiv, 0, {a, b});
}

ExprId ExprArena::Pow(ExprId base, ExprId exponent) {
  int64_t e = 0;
  if (IsInteger(exponent, &e)) {
    if (e == 0) return Integer(1);
    if (e == 1) return base;
    int64_t b = 0;
    int64_t power = 0;
    if (e > 0 && IsInteger(base, &b) && PowInt(b, e, &power)) {
      return Integer(power);
    }
  }
  return Make(ExprKind::kPow, 0, {base, exponent});
}

ExprId ExprArena::FloorDiv(ExprId a, ExprId b) {
  int64_t x = 0;
  int64_t y = 0;
  if (IsInteger(b, &y) && y != 0) {
    int64_t q = 0;
    if (IsInteger(a, &x) && FloorDivInt(x, y, &q)) return Integer(q);
    if (y == 1 && nodes_[a].integer_valued) return a;
  }
  return Make(ExprKind::kFloorDiv, 0, {a, b});
}

ExprId ExprArena::Mod(ExprId a, ExprId b) {
  int64_t x = 0;
  int64_t y = 0;
  if (IsInteger(b, &y) && y != 0) {
    int64_t r = 0;
    if (IsInteger(a, &x) && ModInt(x, y, &r)) return Integer(r);
    if ((y == 1 || y == -1) && nodes_[a].integer_valued) return Integer(0);
  }
  return Make(ExprKind::kMod, 0, {a, b});
}

ExprId ExprArena::Extremum(ExprKind kind, absl::Span<const ExprId> args) {
  const bool is_max = kind == ExprKind::kMax;
  absl::InlinedVector<ExprId, 8> flat;
  for (ExprId arg : args) {
    if (nodes_[arg].kind == kind) {
      const absl::Span<const ExprId> inner = operands(arg);
      flat.insert(flat.end(), inner.begin(), inner.end());
    } else {
      flat.push_back(arg);
    }
  }
  // Arguments that differ only by a constant keep the extreme constant.
  bool has_constant = false;
  int64_t constant = 0;
  absl::InlinedVector<std::pair<ExprId, int64_t>, 8> kept;
  KeyIndex index;
  for (ExprId arg : flat) {
    int64_t c = 0;
    ExprId rest = -1;
    SplitConstant(arg, &c, &rest);
    if (rest < 0) {
      constant = !has_constant ? c
                 : is_max      ? std::max(constant, c)
                               : std::min(constant, c);
      has_constant = true;
      continue;
    }
    bool inserted = false;
    const size_t at = index.FindOrAdd(rest, &inserted);
    if (inserted) {
      kept.push_back({rest, c});
    } else {
      int64_t& best = kept[at].second;
      best = is_max ? std::max(best, c) : std::min(best, c);
    }
  }
  absl::InlinedVector<ExprId, 8> out;
  if (has_constant) out.push_back(Integer(constant));
  for (const auto& [rest, c] : kept) {
    out.push_back(c == 0 ? rest : Add(rest, Integer(c)));
  }
  if (out.size() == 1) return out[0];
  return Make(kind, 0, out);
}

ExprId ExprArena::Max(absl::Span<const ExprId> args) {
  return Extremum(ExprKind::kMax, args);
}

ExprId ExprArena::Min(absl::Span<const ExprId> args) {
  return Extremum(ExprKind::kMin, args);
}

ExprId ExprArena::Ceiling(ExprId a) {
  if (nodes_[a].integer_valued) return a;
  if (nodes_[a].kind == ExprKind::kDiv) {
    int64_t x = 0;
    int64_t y = 0;
    int64_t q = 0;
    if (IsInteger(operands(a)[0], &x) && IsInteger(operands(a)[1], &y) &&
        y != 0 && FloorDivInt(x, y, &q)) {
      return Integer(x % y == 0 ? q : q + 1);
    }
  }
  return Make(ExprKind::kCeiling, 0, {a});
}

ExprId ExprArena::Floor(ExprId a) {
  if (nodes_[a].integer_valued) return a;
  if (nodes_[a].kind == ExprKind::kDiv) {
    int64_t x = 0;
    int64_t y = 0;
    int64_t q = 0;
    if (IsInteger(operands(a)[0], &x) && IsInteger(operands(a)[1], &y) &&
        y != 0 && FloorDivInt(x, y, &q)) {
      return Integer(q);
    }
  }
  return Make(ExprKind::kFloor, 0, {a});
}

bool ExprArena::IsMultipleOf(ExprId id, int64_t alignment) const {
  const Node& node = nodes_[id];
  return node.integer_valued &&
         (node.divisor == 0 || node.divisor % alignment == 0);
}

ExprId ExprArena::Align(ExprId a, int64_t alignment) {
  if (IsMultipleOf(a, alignment)) return a;
  int64_t x = 0;
  int64_t q = 0;
  int64_t aligned = 0;
  if (IsInteger(a, &x) && FloorDivInt(x, alignment, &q)) {
    const int64_t up = x % alignment == 0 ? q : q + 1;
    if (CheckedMul(up, alignment, &aligned)) return Integer(aligned);
  }
  if (alignment == 1) return Ceiling(a);
  const Node& node = nodes_[a];
  if (node.kind == ExprKind::kAlign && node.value % alignment == 0) return a;
  return Make(ExprKind::kAlign, alignment, {a});
}

}  // namespace memplan
