// Symbolic sizes: integer expressions over size symbols (s0, u0, ...) in
// sympy's syntax, as Inductor writes a buffer's bytes under dynamic shapes
// (e.g. "3072*s50*(s33 - 1) + 3072*s50") and its pool sizes and offsets
// (e.g. "Max(2048*s77, 256*s77) + align(64*s0)").
//
// An ExprArena holds expressions as a DAG of hash-consed nodes: building
// the same expression twice gives the same ExprId, so equal subexpressions
// are shared and compared by id. Constructors simplify lightly and soundly
// (the value is unchanged for every symbol value at which the expression is
// defined): integer constants fold, sums and products flatten, like terms of
// a sum combine (3072*s50 + 256*s50 -> 3328*s50), nested Max/Min flatten,
// repeated arguments drop, and of Max/Min arguments that differ only by an
// integer constant (x + 3, x + 5) only the larger (smaller) stays. Nothing
// is dropped for being dominated unless that follows from those rules.
//
// Grammar (Python's precedence, as sympy prints):
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/' | '//' | '%') unary)*
//   unary   := ('-' | '+') unary | power
//   power   := primary ('**' unary)?            (right-associative)
//   primary := INTEGER | SYMBOL | FUNCTION '(' expr (',' expr)* ')'
//            | '(' expr ')'
// INTEGER is decimal digits (at most 2^63 - 1); SYMBOL is
// [A-Za-z_][A-Za-z0-9_]*, an integer-valued size symbol (not one of sympy's
// constants oo, zoo, nan, I, E, pi); FUNCTION is one of Max, Min (one or
// more arguments), FloorDiv, Mod (two), ceiling, floor, align (one).
// `/` is exact (rational) division, `//` and FloorDiv floor division, `%`
// and Mod sympy's Mod (a - b*floor(a/b)), and align(x) Inductor's: x rounded
// up to a multiple of 64 (ALIGN_BYTES). Whitespace is ignored.
//
// Division by zero is refused when parsing: a divisor of `/`, `//`, `%`,
// FloorDiv or Mod that is the constant 0 once built (so also `s0 - s0`,
// `0*s1`, `(3 - 3)`), or 0 raised to a negative integer power (sympy's zoo
// or nan, never a size). A divisor that is 0 only at some symbol values
// parses; evaluating it there is an error.
//
// Nothing recurses: the parser, the printer and the evaluator use explicit
// stacks, so deep expressions cost memory in proportion to their size, and
// parsing is capped at kMaxExpressionChars characters and
// kMaxExpressionNesting open parentheses / calls.
//
// ExprArena's builders are in expression_building.cc, Parse in parsing.cc,
// Print in printing.cc, Evaluate in evaluation.cc (beside this file).
#ifndef MEMPLAN_CORE_SYMBOLIC_SYMBOLIC_H_
#define MEMPLAN_CORE_SYMBOLIC_SYMBOLIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace memplan {

// A handle to an expression in one ExprArena (an index into its nodes).
using ExprId = int32_t;

// The longest expression text Parse accepts, in characters.
inline constexpr size_t kMaxExpressionChars = size_t{1} << 16;

// The most parentheses and function calls Parse accepts open at once.
inline constexpr int kMaxExpressionNesting = 200;

// Inductor's ALIGN_BYTES: the alignment `align(x)` rounds up to.
inline constexpr int64_t kInductorAlignBytes = 64;

enum class ExprKind : uint8_t {
  kInteger,   // value
  kSymbol,    // value: the symbol's index in the arena
  kAdd,       // the sum of two or more operands; an integer constant last
  kMul,       // the product of two or more operands; an integer first
  kDiv,       // operands[0] / operands[1], exact (a rational)
  kPow,       // operands[0] ** operands[1]
  kFloorDiv,  // floor(operands[0] / operands[1])
  kMod,       // a - b * floor(a / b) for (a, b) = operands
  kMax,       // the largest of two or more operands
  kMin,       // the smallest of two or more operands
  kCeiling,   // the least integer >= operands[0]
  kFloor,     // the greatest integer <= operands[0]
  kAlign,     // operands[0] rounded up to a multiple of value (> 0)
};

// Values of symbols by name, for evaluation.
using SymbolValues = absl::flat_hash_map<std::string, int64_t>;

class ExprArena {
 public:
  // Builders. Each returns the id of the (simplified) expression; operands
  // must be ids of this arena. Integer overflow while folding constants is
  // never an error here: the constants then stay unfolded. So does a
  // division (Div, FloorDiv, Mod) by the constant 0 and Pow of 0 to a
  // negative constant: Evaluate refuses them, Parse never builds them.
  ExprId Integer(int64_t value);
  ExprId Symbol(absl::string_view name);       // name as the grammar's SYMBOL
  ExprId Add(absl::Span<const ExprId> terms);  // 0 terms: 0
  ExprId Add(ExprId a, ExprId b) { return Add({a, b}); }
  ExprId Mul(absl::Span<const ExprId> factors);  // 0 factors: 1
  ExprId Mul(ExprId a, ExprId b) { return Mul({a, b}); }
  ExprId Neg(ExprId a) { return Mul(Integer(-1), a); }
  ExprId Div(ExprId a, ExprId b);
  ExprId Pow(ExprId base, ExprId exponent);
  ExprId FloorDiv(ExprId a, ExprId b);
  ExprId Mod(ExprId a, ExprId b);
  ExprId Max(absl::Span<const ExprId> args);  // at least one argument
  ExprId Min(absl::Span<const ExprId> args);  // at least one argument
  ExprId Ceiling(ExprId a);
  ExprId Floor(ExprId a);
  // `a` rounded up to a multiple of `alignment` bytes (> 0); as Inductor's
  // align when alignment is 64. Returns `a` itself when it is provably a
  // multiple already (Inductor's _is_aligned: a multiple of an integer
  // coefficient, or a sum / Max of such, or an align).
  ExprId Align(ExprId a, int64_t alignment);

  // Returns the expression `text` spells (grammar above). Returns
  // INVALID_ARGUMENT, with the 0-based character position and what was
  // expected, e.g.
  //   at position 5: expected an integer, a symbol, a function call, '(' or
  //   a sign, got '*'
  // also for an unknown function, a wrong argument count, an integer above
  // 2^63 - 1, unbalanced parentheses, empty text, text longer than
  // kMaxExpressionChars or nesting deeper than kMaxExpressionNesting; and
  // for a division by zero (above), at the first character of the divisor
  // (of its '(' when parenthesized, its '-' when negated) or of the base
  // of the power:
  //   at position 16: division by zero: the divisor of '//' is 0
  //     (for "Max(s0, 256) // 0"; "the divisor of Mod is 0" for Mod)
  //   at position 0: division by zero: '**' raises 0 to the negative
  //   power -1
  absl::StatusOr<ExprId> Parse(absl::string_view text);

  // Returns `id` in sympy's syntax, parseable by Parse and by sympy:
  // sums as "a + b - c", products "3*s0*s1", "(a//b)" for floor division,
  // "Max(a, b)", align(x) for 64-byte alignment and "A*ceiling(x/A)" for
  // another alignment A. Shared subexpressions are written out each time,
  // so the text may be much longer than the DAG: see PrintedLengthBound.
  std::string Print(ExprId id) const;
  // Print(id) into *out when it takes at most `limit` characters; returns
  // false (stopping early, *out then partial) when it would take more.
  bool PrintWithin(ExprId id, size_t limit, std::string* out) const;

  // Returns Print(id), or "a long expression" where that would take more
  // than 200 characters: for error messages.
  std::string Snippet(ExprId id) const;

  // Returns an upper bound on Print(id).size(), saturating at `limit`, in
  // constant time (each node keeps its bound).
  size_t PrintedLengthBound(ExprId id, size_t limit) const;

  // Returns the value of `id` with `values` for its symbols. Returns
  // INVALID_ARGUMENT for a symbol without a value, a division (or floor
  // division, Mod, negative power) by a divisor that is 0 at `values`
  // (sympy gives zoo or nan there, no integer), a non-integer power or a
  // non-integer result; OUT_OF_RANGE when an intermediate rational leaves
  // int64. Exact: intermediate values are rationals of int64s. Never
  // divides by zero itself.
  absl::StatusOr<int64_t> Evaluate(ExprId id, const SymbolValues& values) const;

  // Returns true and sets *value when `id` is an integer constant.
  bool IsInteger(ExprId id, int64_t* value = nullptr) const;
  // Returns whether `id` takes only integer values (no `/` or negative
  // power left in it).
  bool IsIntegerValued(ExprId id) const { return nodes_[id].integer_valued; }
  // Returns the names of the symbols under `id`, in order of first use in
  // the arena.
  std::vector<std::string> SymbolsOf(ExprId id) const;

  ExprKind kind(ExprId id) const { return nodes_[id].kind; }
  absl::Span<const ExprId> operands(ExprId id) const {
    const Node& node = nodes_[id];
    return absl::MakeConstSpan(operands_.data() + node.first, node.count);
  }
  // Number of distinct nodes: the arena's size.
  size_t size() const { return nodes_.size(); }

 private:
  struct Node {
    ExprKind kind;
    bool integer_valued;
    int32_t first;  // index into operands_
    int32_t count;  // number of operands
    int64_t value;  // kInteger: the value; kSymbol: index; kAlign: bytes
    // Every value of the expression is a multiple of this (>= 1); 0 for
    // the constant 0 (a multiple of everything).
    int64_t divisor;
    // An upper bound on the printed length, saturating (PrintedLengthBound).
    uint64_t printed_bound;
    // The previous node whose content hashes alike, or -1 (interned_).
    ExprId next_same_hash;
  };

  // Returns the id of the node (kind, value, operands), making it when new.
  // `operands` must not point into operands_ (it may grow).
  ExprId Make(ExprKind kind, int64_t value, absl::Span<const ExprId> operands);
  // Max and Min.
  ExprId Extremum(ExprKind kind, absl::Span<const ExprId> args);
  // Splits `id` into coefficient * rest (rest -1 for a constant).
  void SplitCoefficient(ExprId id, int64_t* coefficient, ExprId* rest);
  // Splits `id` into rest + constant (rest -1 for a constant).
  void SplitConstant(ExprId id, int64_t* constant, ExprId* rest);
  bool IsMultipleOf(ExprId id, int64_t alignment) const;
  // The operands of coefficient * rest, rest's factors inlined.
  absl::InlinedVector<ExprId, 8> MulOperands(int64_t coefficient, ExprId rest);

  std::vector<Node> nodes_;
  std::vector<ExprId> operands_;
  std::vector<std::string> symbols_;
  absl::flat_hash_map<std::string, int32_t> symbol_index_;
  // Hash of (kind, value, operands) -> the last node made with that hash;
  // earlier ones follow Node::next_same_hash.
  absl::flat_hash_map<uint64_t, ExprId> interned_;
};

}  // namespace memplan

#endif  // MEMPLAN_CORE_SYMBOLIC_SYMBOLIC_H_
