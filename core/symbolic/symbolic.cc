#include "core/symbolic/symbolic.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace memplan {
namespace {

// ---------------------------------------------------------------------------
// Checked integer and rational arithmetic for constant folding and
// evaluation. Every function returns false on int64 overflow.

bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// floor(a / b) and a - b * floor(a / b) for b != 0, as Python's // and %.
bool FloorDivInt(int64_t a, int64_t b, int64_t* out) {
  if (b == -1 && a == std::numeric_limits<int64_t>::min()) return false;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  *out = q;
  return true;
}
bool ModInt(int64_t a, int64_t b, int64_t* out) {
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
bool PowInt(int64_t base, int64_t exponent, int64_t* out) {
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

int64_t Gcd(int64_t a, int64_t b) {
  // Divisors here are positive or 0; std::gcd of 0 and x is x.
  return std::gcd(a, b);
}

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

// ---------------------------------------------------------------------------
// Precedences for printing, as sympy's printer: a subexpression is wrapped
// in parentheses where its precedence is below what its place requires.
constexpr int kPrecAdd = 1;
constexpr int kPrecMul = 2;
constexpr int kPrecPow = 3;
constexpr int kPrecAtom = 4;

// The functions of the grammar.
enum class Function : uint8_t {
  kMax,
  kMin,
  kFloorDiv,
  kMod,
  kCeiling,
  kFloor,
  kAlign,
};

struct FunctionInfo {
  const char* name;
  Function function;
  int min_args;
  int max_args;  // -1: any
};

constexpr FunctionInfo kFunctions[] = {
    {"Max", Function::kMax, 1, -1},
    {"Min", Function::kMin, 1, -1},
    {"FloorDiv", Function::kFloorDiv, 2, 2},
    {"Mod", Function::kMod, 2, 2},
    {"ceiling", Function::kCeiling, 1, 1},
    {"floor", Function::kFloor, 1, 1},
    {"align", Function::kAlign, 1, 1},
};

const FunctionInfo* FindFunction(absl::string_view name) {
  for (const FunctionInfo& info : kFunctions) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

// sympy's constants: not sizes, and not symbols in sympy's parser either.
bool IsSympyConstant(absl::string_view name) {
  return name == "oo" || name == "zoo" || name == "nan" || name == "I" ||
         name == "E" || name == "pi";
}

// ---------------------------------------------------------------------------
// The lexer.

enum class TokenType : uint8_t {
  kNumber,
  kIdent,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kSlashSlash,
  kPercent,
  kStarStar,
  kLParen,
  kRParen,
  kComma,
  kEnd,
  kBad,  // a character outside the grammar
};

struct Token {
  TokenType type = TokenType::kEnd;
  int32_t begin = 0;  // 0-based position of the first character
  int32_t end = 0;    // one past the last character
};

bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

Token NextToken(absl::string_view text, int32_t pos) {
  const int32_t n = static_cast<int32_t>(text.size());
  while (pos < n && IsSpace(text[pos])) ++pos;
  Token token{TokenType::kEnd, pos, pos};
  if (pos >= n) return token;
  const char c = text[pos];
  token.end = pos + 1;
  auto next_is = [&](char expected) {
    return pos + 1 < n && text[pos + 1] == expected;
  };
  if (IsDigit(c)) {
    token.type = TokenType::kNumber;
    while (token.end < n && IsDigit(text[token.end])) ++token.end;
  } else if (IsIdentStart(c)) {
    token.type = TokenType::kIdent;
    while (token.end < n &&
           (IsIdentStart(text[token.end]) || IsDigit(text[token.end]))) {
      ++token.end;
    }
  } else if (c == '+') {
    token.type = TokenType::kPlus;
  } else if (c == '-') {
    token.type = TokenType::kMinus;
  } else if (c == '*') {
    token.type = next_is('*') ? TokenType::kStarStar : TokenType::kStar;
  } else if (c == '/') {
    token.type = next_is('/') ? TokenType::kSlashSlash : TokenType::kSlash;
  } else if (c == '%') {
    token.type = TokenType::kPercent;
  } else if (c == '(') {
    token.type = TokenType::kLParen;
  } else if (c == ')') {
    token.type = TokenType::kRParen;
  } else if (c == ',') {
    token.type = TokenType::kComma;
  } else {
    token.type = TokenType::kBad;
  }
  if (token.type == TokenType::kStarStar ||
      token.type == TokenType::kSlashSlash) {
    token.end = pos + 2;
  }
  return token;
}

// Returns how an error message names `token`: 'text' or "the end".
std::string Describe(absl::string_view text, const Token& token) {
  if (token.type == TokenType::kEnd) return "the end of the expression";
  return absl::StrCat("'",
                      absl::CHexEscape(text.substr(token.begin,
                                                   token.end - token.begin)),
                      "'");
}

absl::Status ParseError(int32_t position, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("at position ", position, ": ", message));
}

// An operator or an open parenthesis / call waiting on the parser's stack.
enum class Pending : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kMod,
  kPow,
  kNeg,
  kParen,
  kCall,
};

struct PendingEntry {
  Pending op;
  const FunctionInfo* function;  // kCall
  int32_t position;              // of the operator or the function name
  int32_t args;                  // kCall: arguments completed so far
};

int Precedence(Pending op) {
  switch (op) {
    case Pending::kAdd:
    case Pending::kSub:
      return 1;
    case Pending::kMul:
    case Pending::kDiv:
    case Pending::kFloorDiv:
    case Pending::kMod:
      return 2;
    case Pending::kNeg:
      return 3;
    case Pending::kPow:
      return 4;
    case Pending::kParen:
    case Pending::kCall:
      return 0;
  }
  return 0;
}

bool BinaryOp(TokenType type, Pending* op) {
  switch (type) {
    case TokenType::kPlus:
      *op = Pending::kAdd;
      return true;
    case TokenType::kMinus:
      *op = Pending::kSub;
      return true;
    case TokenType::kStar:
      *op = Pending::kMul;
      return true;
    case TokenType::kSlash:
      *op = Pending::kDiv;
      return true;
    case TokenType::kSlashSlash:
      *op = Pending::kFloorDiv;
      return true;
    case TokenType::kPercent:
      *op = Pending::kMod;
      return true;
    case TokenType::kStarStar:
      *op = Pending::kPow;
      return true;
    default:
      return false;
  }
}

// A piece of printing work on the printer's stack.
struct PrintTask {
  enum Type : uint8_t { kNode, kNodeAbs, kText, kInt } type;
  ExprId id = 0;        // kNode, kNodeAbs
  int min_prec = 0;     // kNode: parenthesize below this precedence
  const char* text = nullptr;  // kText
  int64_t number = 0;   // kInt
};

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

// Appends |value| (also for INT64_MIN).
void AppendAbs(std::string* out, int64_t value) {
  const uint64_t magnitude =
      value < 0 ? ~static_cast<uint64_t>(value) + 1 : static_cast<uint64_t>(value);
  absl::StrAppend(out, magnitude);
}

}  // namespace

// ---------------------------------------------------------------------------
// Building.

ExprId ExprArena::Make(ExprKind kind, int64_t value,
                       absl::Span<const ExprId> operands) {
  const uint64_t hash = absl::HashOf(static_cast<uint8_t>(kind), value,
                                     operands);
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
      divisor = value == std::numeric_limits<int64_t>::min() ? 1
                                                              : std::llabs(value);
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
      scaled.push_back(rest < 0 ? Integer(product)
                                : product == 1 ? rest
                                               : Make(ExprKind::kMul, 0,
                                                      MulOperands(product, rest)));
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
    if (a_int && x % y == 0 && !(y == -1 && x == std::numeric_limits<int64_t>::min())) {
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
      constant = !has_constant ? c : is_max ? std::max(constant, c)
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

// ---------------------------------------------------------------------------
// Parsing.

absl::StatusOr<ExprId> ExprArena::Parse(absl::string_view text) {
  if (text.size() > kMaxExpressionChars) {
    return absl::InvalidArgumentError(
        absl::StrCat("the expression is ", text.size(),
                     " characters long, more than the ", kMaxExpressionChars,
                     " accepted"));
  }
  std::vector<ExprId> values;
  std::vector<PendingEntry> pending;
  int nesting = 0;
  bool expect_operand = true;

  // Pops the operator on top of `pending` and applies it to `values`.
  auto apply = [&]() {
    const PendingEntry entry = pending.back();
    pending.pop_back();
    if (entry.op == Pending::kNeg) {
      values.back() = Neg(values.back());
      return;
    }
    const ExprId b = values.back();
    values.pop_back();
    const ExprId a = values.back();
    ExprId& out = values.back();
    switch (entry.op) {
      case Pending::kAdd:
        out = Add(a, b);
        break;
      case Pending::kSub:
        out = Add(a, Neg(b));
        break;
      case Pending::kMul:
        out = Mul(a, b);
        break;
      case Pending::kDiv:
        out = Div(a, b);
        break;
      case Pending::kFloorDiv:
        out = FloorDiv(a, b);
        break;
      case Pending::kMod:
        out = Mod(a, b);
        break;
      case Pending::kPow:
        out = Pow(a, b);
        break;
      default:
        break;  // kNeg handled above; kParen and kCall never applied
    }
  };
  // Applies pending operators that bind at least as tightly as one of
  // precedence `precedence` (more tightly, for a right-associative one).
  auto reduce = [&](int precedence, bool right_associative) {
    while (!pending.empty()) {
      const Pending top = pending.back().op;
      if (top == Pending::kParen || top == Pending::kCall) break;
      const int p = Precedence(top);
      if (p > precedence || (p == precedence && !right_associative)) {
        apply();
      } else {
        break;
      }
    }
  };
  auto open = [&](PendingEntry entry) -> absl::Status {
    if (++nesting > kMaxExpressionNesting) {
      return ParseError(entry.position,
                        absl::StrCat("more than ", kMaxExpressionNesting,
                                     " parentheses and calls open at once"));
    }
    pending.push_back(entry);
    return absl::OkStatus();
  };

  int32_t pos = 0;
  while (true) {
    const Token token = NextToken(text, pos);
    pos = token.end;
    if (token.type == TokenType::kBad) {
      return ParseError(token.begin,
                        absl::StrCat("unexpected character ",
                                     Describe(text, token)));
    }
    if (expect_operand) {
      switch (token.type) {
        case TokenType::kNumber: {
          int64_t value = 0;
          for (int32_t i = token.begin; i < token.end; ++i) {
            if (!CheckedMul(value, 10, &value) ||
                !CheckedAdd(value, text[i] - '0', &value)) {
              return ParseError(
                  token.begin,
                  absl::StrCat("integer ", Describe(text, token),
                               " is larger than ",
                               std::numeric_limits<int64_t>::max()));
            }
          }
          values.push_back(Integer(value));
          expect_operand = false;
          continue;
        }
        case TokenType::kIdent: {
          const absl::string_view name =
              text.substr(token.begin, token.end - token.begin);
          const Token next = NextToken(text, pos);
          const FunctionInfo* function = FindFunction(name);
          if (next.type == TokenType::kLParen) {
            if (function == nullptr) {
              return ParseError(
                  token.begin,
                  absl::StrCat("unknown function ", Describe(text, token),
                               "; expected Max, Min, FloorDiv, Mod, ceiling, "
                               "floor or align"));
            }
            absl::Status status =
                open({Pending::kCall, function, token.begin, 0});
            if (!status.ok()) return status;
            pos = next.end;
            continue;  // still expecting an operand: the first argument
          }
          if (function != nullptr) {
            return ParseError(next.begin,
                              absl::StrCat("expected '(' after ", name,
                                           ", got ", Describe(text, next)));
          }
          if (IsSympyConstant(name)) {
            return ParseError(
                token.begin,
                absl::StrCat(Describe(text, token),
                             " is one of sympy's constants, not a size "
                             "symbol"));
          }
          values.push_back(Symbol(name));
          expect_operand = false;
          continue;
        }
        case TokenType::kLParen: {
          absl::Status status =
              open({Pending::kParen, nullptr, token.begin, 0});
          if (!status.ok()) return status;
          continue;
        }
        case TokenType::kMinus:
          pending.push_back({Pending::kNeg, nullptr, token.begin, 0});
          continue;
        case TokenType::kPlus:
          continue;  // unary plus changes nothing
        default:
          return ParseError(
              token.begin,
              absl::StrCat("expected an integer, a symbol, a function call, "
                           "'(' or a sign, got ",
                           Describe(text, token)));
      }
    }
    // Expecting an operator, a ')' or ',' or the end.
    Pending op;
    if (BinaryOp(token.type, &op)) {
      reduce(Precedence(op), op == Pending::kPow);
      pending.push_back({op, nullptr, token.begin, 0});
      expect_operand = true;
      continue;
    }
    if (token.type == TokenType::kRParen || token.type == TokenType::kComma) {
      reduce(0, false);
      if (pending.empty()) {
        return ParseError(token.begin,
                          token.type == TokenType::kRParen
                              ? "unmatched ')'"
                              : "',' outside a function call");
      }
      PendingEntry& open_entry = pending.back();
      if (token.type == TokenType::kComma) {
        if (open_entry.op != Pending::kCall) {
          return ParseError(token.begin,
                            "',' outside a function call's parentheses");
        }
        ++open_entry.args;
        expect_operand = true;
        continue;
      }
      --nesting;
      if (open_entry.op == Pending::kParen) {
        pending.pop_back();
        continue;
      }
      // The end of a call: its arguments are the last args + 1 values.
      const FunctionInfo& function = *open_entry.function;
      const int args = open_entry.args + 1;
      const int32_t call_position = open_entry.position;
      pending.pop_back();
      if (args < function.min_args ||
          (function.max_args >= 0 && args > function.max_args)) {
        return ParseError(
            call_position,
            absl::StrCat(function.name, " takes ",
                         function.max_args < 0
                             ? absl::StrCat("at least ", function.min_args)
                             : absl::StrCat(function.min_args),
                         " argument", function.min_args == 1 ? "" : "s",
                         ", got ", args));
      }
      const absl::InlinedVector<ExprId, 4> call_args(values.end() - args,
                                                     values.end());
      values.resize(values.size() - args);
      ExprId result = 0;
      switch (function.function) {
        case Function::kMax:
          result = Max(call_args);
          break;
        case Function::kMin:
          result = Min(call_args);
          break;
        case Function::kFloorDiv:
          result = FloorDiv(call_args[0], call_args[1]);
          break;
        case Function::kMod:
          result = Mod(call_args[0], call_args[1]);
          break;
        case Function::kCeiling:
          result = Ceiling(call_args[0]);
          break;
        case Function::kFloor:
          result = Floor(call_args[0]);
          break;
        case Function::kAlign:
          result = Align(call_args[0], kInductorAlignBytes);
          break;
      }
      values.push_back(result);
      continue;
    }
    if (token.type == TokenType::kEnd) break;
    return ParseError(token.begin,
                      absl::StrCat("expected an operator, ')', ',' or the "
                                   "end, got ",
                                   Describe(text, token)));
  }
  reduce(0, false);
  if (!pending.empty()) {
    return ParseError(pending.back().position,
                      pending.back().op == Pending::kCall
                          ? absl::StrCat("the call of ",
                                         pending.back().function->name,
                                         " is not closed with ')'")
                          : "'(' is not closed with ')'");
  }
  return values.back();
}

// ---------------------------------------------------------------------------
// Printing.

namespace {

// The precedence a node prints at.
int PrintPrecedence(ExprKind kind, int64_t value, bool negative_coefficient) {
  switch (kind) {
    case ExprKind::kInteger:
      return value < 0 ? kPrecAdd : kPrecAtom;
    case ExprKind::kAdd:
      return kPrecAdd;
    case ExprKind::kMul:
      return negative_coefficient ? kPrecAdd : kPrecMul;
    case ExprKind::kDiv:
      return kPrecMul;
    case ExprKind::kPow:
      return kPrecPow;
    case ExprKind::kAlign:
      return value == kInductorAlignBytes ? kPrecAtom : kPrecMul;
    default:
      return kPrecAtom;
  }
}

}  // namespace

std::string ExprArena::Print(ExprId root) const {
  std::string out;
  PrintWithin(root, std::numeric_limits<size_t>::max(), &out);
  return out;
}

bool ExprArena::PrintWithin(ExprId root, size_t limit,
                            std::string* out_text) const {
  std::string& out = *out_text;
  out.clear();
  std::vector<PrintTask> stack;
  auto text = [](const char* t) {
    PrintTask task;
    task.type = PrintTask::kText;
    task.text = t;
    return task;
  };
  auto node_task = [](ExprId id, int min_prec) {
    PrintTask task;
    task.type = PrintTask::kNode;
    task.id = id;
    task.min_prec = min_prec;
    return task;
  };
  auto number = [](int64_t value) {
    PrintTask task;
    task.type = PrintTask::kInt;
    task.number = value;
    return task;
  };
  // A negative coefficient: an integer below 0, or a product led by one.
  auto negative = [&](ExprId id) {
    const Node& node = nodes_[id];
    if (node.kind == ExprKind::kInteger) return node.value < 0;
    return node.kind == ExprKind::kMul &&
           nodes_[operands_[node.first]].kind == ExprKind::kInteger &&
           nodes_[operands_[node.first]].value < 0;
  };
  // Pushes `items` so that they print in order.
  auto push_in_order = [&](std::initializer_list<PrintTask> items) {
    for (auto it = std::rbegin(items); it != std::rend(items); ++it) {
      stack.push_back(*it);
    }
  };
  // Pushes "name(a, b, ...)" for a function call.
  auto push_call = [&](const char* name, absl::Span<const ExprId> args) {
    out.append(name);
    out.push_back('(');
    stack.push_back(text(")"));
    for (size_t i = args.size(); i-- > 0;) {
      stack.push_back(node_task(args[i], 0));
      if (i > 0) stack.push_back(text(", "));
    }
  };
  // Pushes the factors of a product joined by '*', the coefficient left out.
  auto push_factors = [&](absl::Span<const ExprId> factors) {
    for (size_t i = factors.size(); i-- > 0;) {
      stack.push_back(node_task(factors[i], kPrecMul));
      if (i > 0) stack.push_back(text("*"));
    }
  };

  stack.push_back(node_task(root, 0));
  while (!stack.empty()) {
    if (out.size() > limit) return false;
    const PrintTask task = stack.back();
    stack.pop_back();
    if (task.type == PrintTask::kText) {
      out.append(task.text);
      continue;
    }
    if (task.type == PrintTask::kInt) {
      absl::StrAppend(&out, task.number);
      continue;
    }
    const Node& node = nodes_[task.id];
    const absl::Span<const ExprId> ops = operands(task.id);
    if (task.type == PrintTask::kNodeAbs) {
      // |term| of a negative term, after " - " in a sum.
      if (node.kind == ExprKind::kInteger) {
        AppendAbs(&out, node.value);
        continue;
      }
      const int64_t coefficient = nodes_[ops[0]].value;
      if (coefficient != -1) {
        AppendAbs(&out, coefficient);
        out.push_back('*');
      }
      push_factors(ops.subspan(1));
      continue;
    }
    const int precedence =
        PrintPrecedence(node.kind, node.value, negative(task.id));
    if (precedence < task.min_prec) {
      out.push_back('(');
      stack.push_back(text(")"));
    }
    switch (node.kind) {
      case ExprKind::kInteger:
        absl::StrAppend(&out, node.value);
        break;
      case ExprKind::kSymbol:
        out.append(symbols_[node.value]);
        break;
      case ExprKind::kAdd:
        for (size_t i = ops.size(); i-- > 1;) {
          if (negative(ops[i])) {
            PrintTask abs_task;
            abs_task.type = PrintTask::kNodeAbs;
            abs_task.id = ops[i];
            stack.push_back(abs_task);
            stack.push_back(text(" - "));
          } else {
            stack.push_back(node_task(ops[i], kPrecAdd));
            stack.push_back(text(" + "));
          }
        }
        stack.push_back(node_task(ops[0], kPrecAdd));
        break;
      case ExprKind::kMul: {
        int64_t coefficient = 1;
        if (IsInteger(ops[0], &coefficient)) {
          if (coefficient == -1) {
            out.push_back('-');
          } else {
            absl::StrAppend(&out, coefficient, "*");
          }
          push_factors(ops.subspan(1));
        } else {
          push_factors(ops);
        }
        break;
      }
      case ExprKind::kDiv:
        push_in_order({node_task(ops[0], kPrecMul), text("/"),
                       node_task(ops[1], kPrecMul + 1)});
        break;
      case ExprKind::kPow:
        push_in_order({node_task(ops[0], kPrecPow + 1), text("**"),
                       node_task(ops[1], kPrecPow + 1)});
        break;
      case ExprKind::kFloorDiv:
        // As torch's FloorDiv prints: "(a//b)".
        out.push_back('(');
        push_in_order({node_task(ops[0], kPrecAtom), text("//"),
                       node_task(ops[1], kPrecAtom), text(")")});
        break;
      case ExprKind::kMod:
        push_call("Mod", ops);
        break;
      case ExprKind::kMax:
        push_call("Max", ops);
        break;
      case ExprKind::kMin:
        push_call("Min", ops);
        break;
      case ExprKind::kCeiling:
        push_call("ceiling", ops);
        break;
      case ExprKind::kFloor:
        push_call("floor", ops);
        break;
      case ExprKind::kAlign:
        if (node.value == kInductorAlignBytes) {
          push_call("align", ops);
        } else {
          absl::StrAppend(&out, node.value, "*ceiling(");
          push_in_order({node_task(ops[0], kPrecMul), text("/"),
                         number(node.value), text(")")});
        }
        break;
    }
  }
  return out.size() <= limit;
}

size_t ExprArena::PrintedLengthBound(ExprId root, size_t limit) const {
  return static_cast<size_t>(
      std::min<uint64_t>(nodes_[root].printed_bound, limit));
}

// ---------------------------------------------------------------------------
// Evaluation.

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
          return absl::InvalidArgumentError(absl::StrCat(
              "symbol ", symbols_[node.value], " has no value"));
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
        Rational quotient;
        if (!DivRational(args[0], args[1], &quotient)) return overflow(id);
        if (node.kind == ExprKind::kDiv) {
          result = quotient;
        } else if (node.kind == ExprKind::kFloorDiv) {
          result = FloorRational(quotient);
        } else {
          Rational product;
          if (!MulRational(args[1], FloorRational(quotient), &product) ||
              !AddRational(args[0], Rational{-product.num, product.den},
                           &result)) {
            return overflow(id);
          }
        }
        break;
      }
      case ExprKind::kPow: {
        if (!args[1].is_integer()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "non-integer power evaluating ", Snippet(id)));
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
    return absl::InvalidArgumentError(absl::StrCat(
        "the value ", value.num, "/", value.den, " of ", Snippet(root),
        " is not an integer"));
  }
  return value.num;
}

std::string ExprArena::Snippet(ExprId id) const {
  std::string text;
  if (!PrintWithin(id, 200, &text)) return "a long expression";
  return text;
}

std::vector<std::string> ExprArena::SymbolsOf(ExprId root) const {
  absl::flat_hash_set<ExprId> seen = {root};
  std::vector<ExprId> stack = {root};
  std::vector<int64_t> indices;
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (nodes_[id].kind == ExprKind::kSymbol) indices.push_back(nodes_[id].value);
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
