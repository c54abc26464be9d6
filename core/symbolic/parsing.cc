// ExprArena::Parse (core/symbolic/symbolic.h): the lexer and the parser of
// sympy's syntax, on an explicit stack.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/symbolic/checked_arithmetic.h"
#include "core/symbolic/symbolic.h"

namespace memplan {
namespace {

using symbolic_internal::CheckedAdd;
using symbolic_internal::CheckedMul;

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
    {"Max", Function::kMax, 1, -1},          {"Min", Function::kMin, 1, -1},
    {"FloorDiv", Function::kFloorDiv, 2, 2}, {"Mod", Function::kMod, 2, 2},
    {"ceiling", Function::kCeiling, 1, 1},   {"floor", Function::kFloor, 1, 1},
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
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

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
  return absl::StrCat(
      "'", absl::CHexEscape(text.substr(token.begin, token.end - token.begin)),
      "'");
}

absl::Status ParseError(int32_t position, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("at position ", position, ": ", message));
}

// The error for a divisor that is the constant 0 once built (simplified),
// at the divisor's first character. `divisor_of` names the operation:
// "'//'", "Mod", ...
absl::Status DivisionByZero(int32_t divisor_position,
                            absl::string_view divisor_of) {
  return ParseError(
      divisor_position,
      absl::StrCat("division by zero: the divisor of ", divisor_of, " is 0"));
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

}  // namespace

absl::StatusOr<ExprId> ExprArena::Parse(absl::string_view text) {
  if (text.size() > kMaxExpressionChars) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the expression is ", text.size(), " characters long, more than the ",
        kMaxExpressionChars, " accepted"));
  }
  std::vector<ExprId> values;
  // Parallel to `values`: the position of each one's first character (of
  // its '(' when parenthesized, of its '-' when negated), where an error
  // about it points.
  std::vector<int32_t> starts;
  std::vector<PendingEntry> pending;
  int nesting = 0;
  bool expect_operand = true;

  auto is_zero = [&](ExprId id) {
    int64_t value = 0;
    return IsInteger(id, &value) && value == 0;
  };
  // Pops the operator on top of `pending` and applies it to `values`.
  // Returns INVALID_ARGUMENT for a division by the constant 0.
  auto apply = [&]() -> absl::Status {
    const PendingEntry entry = pending.back();
    pending.pop_back();
    if (entry.op == Pending::kNeg) {
      values.back() = Neg(values.back());
      starts.back() = entry.position;
      return absl::OkStatus();
    }
    const ExprId b = values.back();
    const int32_t b_start = starts.back();
    values.pop_back();
    starts.pop_back();
    const ExprId a = values.back();
    if (is_zero(b)) {
      if (entry.op == Pending::kDiv) return DivisionByZero(b_start, "'/'");
      if (entry.op == Pending::kFloorDiv) {
        return DivisionByZero(b_start, "'//'");
      }
      if (entry.op == Pending::kMod) return DivisionByZero(b_start, "'%'");
    }
    int64_t exponent = 0;
    if (entry.op == Pending::kPow && is_zero(a) && IsInteger(b, &exponent) &&
        exponent < 0) {
      return ParseError(starts.back(),
                        absl::StrCat("division by zero: '**' raises 0 to "
                                     "the negative power ",
                                     exponent));
    }
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
    return absl::OkStatus();
  };
  // Applies pending operators that bind at least as tightly as one of
  // precedence `precedence` (more tightly, for a right-associative one).
  auto reduce = [&](int precedence, bool right_associative) {
    while (!pending.empty()) {
      const Pending top = pending.back().op;
      if (top == Pending::kParen || top == Pending::kCall) break;
      const int p = Precedence(top);
      if (p < precedence || (p == precedence && right_associative)) break;
      if (absl::Status status = apply(); !status.ok()) return status;
    }
    return absl::OkStatus();
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
      return ParseError(token.begin, absl::StrCat("unexpected character ",
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
          starts.push_back(token.begin);
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
            return ParseError(
                next.begin, absl::StrCat("expected '(' after ", name, ", got ",
                                         Describe(text, next)));
          }
          if (IsSympyConstant(name)) {
            return ParseError(
                token.begin,
                absl::StrCat(Describe(text, token),
                             " is one of sympy's constants, not a size "
                             "symbol"));
          }
          values.push_back(Symbol(name));
          starts.push_back(token.begin);
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
      if (absl::Status status = reduce(Precedence(op), op == Pending::kPow);
          !status.ok()) {
        return status;
      }
      pending.push_back({op, nullptr, token.begin, 0});
      expect_operand = true;
      continue;
    }
    if (token.type == TokenType::kRParen || token.type == TokenType::kComma) {
      if (absl::Status status = reduce(0, false); !status.ok()) return status;
      if (pending.empty()) {
        return ParseError(token.begin, token.type == TokenType::kRParen
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
        starts.back() = open_entry.position;
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
      const absl::InlinedVector<int32_t, 4> arg_starts(starts.end() - args,
                                                       starts.end());
      values.resize(values.size() - args);
      starts.resize(starts.size() - args);
      if ((function.function == Function::kFloorDiv ||
           function.function == Function::kMod) &&
          is_zero(call_args[1])) {
        return DivisionByZero(arg_starts[1], function.name);
      }
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
      starts.push_back(call_position);
      continue;
    }
    if (token.type == TokenType::kEnd) break;
    return ParseError(token.begin,
                      absl::StrCat("expected an operator, ')', ',' or the "
                                   "end, got ",
                                   Describe(text, token)));
  }
  if (absl::Status status = reduce(0, false); !status.ok()) return status;
  if (!pending.empty()) {
    return ParseError(
        pending.back().position,
        pending.back().op == Pending::kCall
            ? absl::StrCat("the call of ", pending.back().function->name,
                           " is not closed with ')'")
            : "'(' is not closed with ')'");
  }
  return values.back();
}

}  // namespace memplan
