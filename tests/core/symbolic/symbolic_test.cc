// Tests of core/symbolic/symbolic.h: the sympy-syntax parser (every operator,
// precedence, calls, whitespace, errors with positions, the nesting cap),
// printing, light simplification and exact evaluation.
#include "core/symbolic/symbolic.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memplan {
namespace {

using ::testing::HasSubstr;

// Parses `text` and evaluates it at `values`.
absl::StatusOr<int64_t> Eval(const std::string& text,
                             const SymbolValues& values = {}) {
  ExprArena arena;
  absl::StatusOr<ExprId> id = arena.Parse(text);
  if (!id.ok()) return id.status();
  return arena.Evaluate(*id, values);
}

// Parses `text` and prints it back.
std::string Reprint(const std::string& text) {
  ExprArena arena;
  absl::StatusOr<ExprId> id = arena.Parse(text);
  if (!id.ok()) return absl::StrCat("error: ", id.status().message());
  return arena.Print(*id);
}

// The parse error of `text` (empty when it parses).
std::string ParseError(const std::string& text) {
  ExprArena arena;
  absl::StatusOr<ExprId> id = arena.Parse(text);
  if (id.ok()) return "";
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(id.status().message());
}

TEST(SymbolicParseTest, EveryOperatorAndFunction) {
  const SymbolValues v = {{"s0", 13}, {"s1", 4}};
  EXPECT_EQ(Eval("s0 + s1", v).value(), 17);
  EXPECT_EQ(Eval("s0 - s1", v).value(), 9);
  EXPECT_EQ(Eval("s0*s1", v).value(), 52);
  EXPECT_EQ(Eval("s0*s1/2", v).value(), 26);  // exact division
  EXPECT_EQ(Eval("s0//s1", v).value(), 3);
  EXPECT_EQ(Eval("s0 % s1", v).value(), 1);
  EXPECT_EQ(Eval("s1**3", v).value(), 64);
  EXPECT_EQ(Eval("Max(s0, s1, 20)", v).value(), 20);
  EXPECT_EQ(Eval("Min(s0, s1, 20)", v).value(), 4);
  EXPECT_EQ(Eval("Max(s0)", v).value(), 13);
  EXPECT_EQ(Eval("FloorDiv(s0, s1)", v).value(), 3);
  EXPECT_EQ(Eval("Mod(s0, s1)", v).value(), 1);
  EXPECT_EQ(Eval("ceiling(s0/s1)", v).value(), 4);
  EXPECT_EQ(Eval("floor(s0/s1)", v).value(), 3);
  EXPECT_EQ(Eval("align(s0)", v).value(), 64);
  EXPECT_EQ(Eval("align(65)").value(), 128);
  EXPECT_EQ(Eval("align(0)").value(), 0);
  EXPECT_EQ(Eval("align(64*s0)", v).value(), 64 * 13);
  EXPECT_EQ(Eval("(s0)", v).value(), 13);
}

TEST(SymbolicParseTest, PythonPrecedenceAndAssociativity) {
  EXPECT_EQ(Eval("1 + 2*3").value(), 7);
  EXPECT_EQ(Eval("(1 + 2)*3").value(), 9);
  EXPECT_EQ(Eval("2*3**2").value(), 18);
  EXPECT_EQ(Eval("2**3**2").value(), 512);  // right-associative
  EXPECT_EQ(Eval("(2**3)**2").value(), 64);
  EXPECT_EQ(Eval("10 - 3 - 2").value(), 5);  // left-associative
  EXPECT_EQ(Eval("100//7//2").value(), 7);
  EXPECT_EQ(Eval("2*7 % 4").value(), 2);     // (2*7) % 4
  EXPECT_EQ(Eval("12/4*3").value(), 9);      // (12/4)*3
  EXPECT_EQ(Eval("1 + 7//2*2").value(), 7);  // 1 + ((7//2)*2)
}

TEST(SymbolicParseTest, UnaryMinusBindsBelowPowerAboveProducts) {
  const SymbolValues v = {{"s0", 5}};
  EXPECT_EQ(Eval("-2**2").value(), -4);  // -(2**2)
  EXPECT_EQ(Eval("(-2)**2").value(), 4);
  EXPECT_EQ(Eval("2**-1*4").value(), 2);     // (2**(-1))*4
  EXPECT_EQ(Eval("-s0//4", v).value(), -2);  // (-s0)//4, as Python
  EXPECT_EQ(Eval("-7 % 3").value(), 2);      // (-7) % 3 = 2
  EXPECT_EQ(Eval("Mod(-7, 3)").value(), 2);  // sympy's Mod: sign of b
  EXPECT_EQ(Eval("Mod(7, -3)").value(), -2);
  EXPECT_EQ(Eval("FloorDiv(-7, 2)").value(), -4);
  EXPECT_EQ(Eval("7 - -3").value(), 10);
  EXPECT_EQ(Eval("--s0", v).value(), 5);
  EXPECT_EQ(Eval("+s0 - +1", v).value(), 4);
  EXPECT_EQ(Eval("s0*-2", v).value(), -10);
  EXPECT_EQ(Eval("ceiling(-s0/2)", v).value(), -2);
  EXPECT_EQ(Eval("floor(-s0/2)", v).value(), -3);
}

TEST(SymbolicParseTest, NestedCallsAndWhitespace) {
  const SymbolValues v = {{"s0", 10}, {"s1", 7}};
  EXPECT_EQ(Eval("Max(1, Min(s0, FloorDiv(s1, 2)), Mod(s0, 3))", v).value(), 3);
  EXPECT_EQ(Eval(" \t Max( s0 ,\n s1 )  *\t2 ", v).value(), 20);
  EXPECT_EQ(Eval("align(Max(6144*s0, 4*s1**2*(12*s0 - 1) + 4*s1))", v).value(),
            61440);  // Max(61440, 23352), already a multiple of 64
}

TEST(SymbolicParseTest, InductorsCorpusExpressions) {
  // From resnet18_infer_dyn and bert_base_infer_dyn: with the size hints
  // s77 = 8, s53 = 224 and s33 = 2, s50 = 128 they give the hints.
  EXPECT_EQ(Eval("256*(s77 - 1)*((((s53 - 1)//4)) + 1)**2 + "
                 "252*((((s53 - 1)//4)) + 1)**2 + "
                 "4*((((s53 - 1)//4)) + 1)*(((s53 - 1)//4)) + "
                 "4*(((s53 - 1)//4)) + 4",
                 {{"s77", 8}, {"s53", 224}})
                .value(),
            6422528);
  EXPECT_EQ(Eval("4*s50**2*(12*s33 - 1) + 4*s50*(s50 - 1) + 4*s50",
                 {{"s33", 2}, {"s50", 128}})
                .value(),
            1572864);
}

TEST(SymbolicParseTest, SymbolNames) {
  ExprArena arena;
  absl::StatusOr<ExprId> id = arena.Parse("u0*s1 + ps2 + _x3 + s1");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_THAT(arena.SymbolsOf(*id),
              ::testing::ElementsAre("u0", "s1", "ps2", "_x3"));
}

TEST(SymbolicParseTest, ErrorsGivePositionAndWhatWasExpected) {
  EXPECT_EQ(ParseError("s0 + * 2"),
            "at position 5: expected an integer, a symbol, a function call, "
            "'(' or a sign, got '*'");
  EXPECT_EQ(ParseError("s0 +"),
            "at position 4: expected an integer, a symbol, a function call, "
            "'(' or a sign, got the end of the expression");
  EXPECT_THAT(ParseError(""), HasSubstr("at position 0: expected an integer"));
  EXPECT_THAT(ParseError("   "), HasSubstr("at position 3: expected"));
  EXPECT_EQ(ParseError("s0 s1"),
            "at position 3: expected an operator, ')', ',' or the end, got "
            "'s1'");
  EXPECT_EQ(ParseError("s0)"), "at position 2: unmatched ')'");
  EXPECT_EQ(ParseError("(s0 + 1"), "at position 0: '(' is not closed with ')'");
  EXPECT_EQ(ParseError("2*Max(s0, 1"),
            "at position 2: the call of Max is not closed with ')'");
  EXPECT_EQ(ParseError("1 + Foo(s0)"),
            "at position 4: unknown function 'Foo'; expected Max, Min, "
            "FloorDiv, Mod, ceiling, floor or align");
  EXPECT_EQ(ParseError("FloorDiv(s0)"),
            "at position 0: FloorDiv takes 2 arguments, got 1");
  EXPECT_EQ(ParseError("1 + align(s0, 2)"),
            "at position 4: align takes 1 argument, got 2");
  EXPECT_EQ(ParseError("Max()"),
            "at position 4: expected an integer, a symbol, a function call, "
            "'(' or a sign, got ')'");
  EXPECT_EQ(ParseError("Max + 1"),
            "at position 4: expected '(' after Max, got '+'");
  EXPECT_EQ(ParseError("s0 $ 2"), "at position 3: unexpected character '$'");
  EXPECT_EQ(ParseError("1.5"), "at position 1: unexpected character '.'");
  EXPECT_EQ(ParseError("s0 + 99999999999999999999"),
            "at position 5: integer '99999999999999999999' is larger than "
            "9223372036854775807");
  EXPECT_EQ(ParseError("2*oo"),
            "at position 2: 'oo' is one of sympy's constants, not a size "
            "symbol");
  EXPECT_EQ(ParseError("(s0, s1)"),
            "at position 3: ',' outside a function call's parentheses");
  EXPECT_EQ(ParseError("s0, s1"), "at position 2: ',' outside a function call");
  EXPECT_EQ(ParseError("s0 ** "),
            "at position 6: expected an integer, a symbol, a function call, "
            "'(' or a sign, got the end of the expression");
}

// A divisor that is the constant 0 once built has no value at any symbol
// value (sympy: zoo or nan): an error at the divisor's first character.
TEST(SymbolicParseTest, DivisionByTheConstantZeroIsAnError) {
  // The forms of issue 19.
  EXPECT_EQ(ParseError("Max(s0, 256) // 0"),
            "at position 16: division by zero: the divisor of '//' is 0");
  EXPECT_EQ(ParseError("Mod(s0, 0)"),
            "at position 8: division by zero: the divisor of Mod is 0");
  EXPECT_EQ(ParseError("ceiling(s1/0)"),
            "at position 11: division by zero: the divisor of '/' is 0");
  // Every division-like operator and function.
  EXPECT_EQ(ParseError("s0/0"),
            "at position 3: division by zero: the divisor of '/' is 0");
  EXPECT_EQ(ParseError("s0 % 0"),
            "at position 5: division by zero: the divisor of '%' is 0");
  EXPECT_EQ(ParseError("FloorDiv(s0, 0)"),
            "at position 13: division by zero: the divisor of FloorDiv is 0");
  EXPECT_EQ(ParseError("0**-1"),
            "at position 0: division by zero: '**' raises 0 to the negative "
            "power -1");
  EXPECT_EQ(ParseError("2*(s0 - s0)**(1 - 3)"),
            "at position 2: division by zero: '**' raises 0 to the negative "
            "power -2");
  // Divisors that the builders simplify to 0: the position is the
  // divisor's '(' or '-', or its first character.
  EXPECT_EQ(ParseError("s0 // (s1 - s1)"),
            "at position 6: division by zero: the divisor of '//' is 0");
  EXPECT_EQ(ParseError("s0 % (3-3)"),
            "at position 5: division by zero: the divisor of '%' is 0");
  EXPECT_EQ(ParseError("s0/0*s1"),  // (s0/0)*s1: the divisor is 0
            "at position 3: division by zero: the divisor of '/' is 0");
  EXPECT_EQ(ParseError("s0/(0*s1)"),
            "at position 3: division by zero: the divisor of '/' is 0");
  EXPECT_EQ(ParseError("s0 // -0"),
            "at position 6: division by zero: the divisor of '//' is 0");
  EXPECT_EQ(ParseError("Mod(s0, s1 - s1)"),
            "at position 8: division by zero: the divisor of Mod is 0");
  EXPECT_EQ(ParseError("FloorDiv(s0, Max(0, 0*s1))"),
            "at position 13: division by zero: the divisor of FloorDiv is 0");
  EXPECT_EQ(ParseError("s0 // Mod(s1, 1)"),  // Mod(integer, 1) is 0
            "at position 6: division by zero: the divisor of '//' is 0");
  EXPECT_EQ(ParseError("s0 // (s1**0 - 1)"),
            "at position 6: division by zero: the divisor of '//' is 0");
  EXPECT_EQ(ParseError("s0 // Min(s1 - s1, 5)"),
            "at position 6: division by zero: the divisor of '//' is 0");
  // Nested: the innermost division is refused, even where what it is
  // part of would simplify away (a factor 0, a power 0).
  EXPECT_EQ(ParseError("Max(1, Min(s0, FloorDiv(s1, Max(0, 0*s2))))"),
            "at position 28: division by zero: the divisor of FloorDiv is 0");
  EXPECT_EQ(ParseError("align(Max(2048*s0, ceiling(s1/(s2 - s2))))"),
            "at position 30: division by zero: the divisor of '/' is 0");
  EXPECT_EQ(ParseError("0*(s0//0)"),
            "at position 7: division by zero: the divisor of '//' is 0");
  EXPECT_EQ(ParseError("(s0 % (s1*0))**0 + 1"),
            "at position 6: division by zero: the divisor of '%' is 0");
  EXPECT_EQ(ParseError("Mod(s0, Mod(s1, 0))"),
            "at position 16: division by zero: the divisor of Mod is 0");
  EXPECT_EQ(ParseError("s0 // (s1 // 0)"),
            "at position 13: division by zero: the divisor of '//' is 0");
  // Where the divisor is 0 only at some symbol values, or 0 is divided,
  // the text parses (evaluation refuses those values: see
  // SymbolicEvaluateTest.DivisorZeroAtTheValuesIsAnError).
  for (const char* text : {"s0 // s1", "s0/(s1 - 1)", "Mod(s0, s1 - s2)",
                           "0 // s0", "0 % s0", "0/s0", "0**s0", "0**0", "0**2",
                           "s0**-1", "FloorDiv(0, 3)", "Mod(s0, 1)"}) {
    EXPECT_EQ(ParseError(text), "") << text;
  }
  EXPECT_EQ(Reprint("0**0 + 0**2"), "1");  // sympy: 0**0 is 1
}

TEST(SymbolicParseTest, NestingBeyondTheCapIsAnErrorNotACrash) {
  const int cap = kMaxExpressionNesting;
  const std::string at_cap =
      std::string(cap, '(') + "s0" + std::string(cap, ')');
  EXPECT_EQ(Eval(at_cap, {{"s0", 3}}).value(), 3);
  const std::string beyond =
      std::string(cap + 1, '(') + "s0" + std::string(cap + 1, ')');
  EXPECT_EQ(ParseError(beyond),
            absl::StrCat("at position ", cap, ": more than ", cap,
                         " parentheses and calls open at once"));
  std::string calls;
  for (int i = 0; i <= cap; ++i) calls += "Max(";
  calls += "1";
  calls += std::string(cap + 1, ')');
  EXPECT_THAT(ParseError(calls), HasSubstr("more than 200 parentheses"));
  // Much deeper input is refused quickly too.
  EXPECT_THAT(ParseError(std::string(60000, '(')), HasSubstr("more than 200"));
}

TEST(SymbolicParseTest, LongInputIsCappedAndLongChainsParse) {
  EXPECT_THAT(ParseError(std::string(kMaxExpressionChars + 1, '1')),
              HasSubstr("characters long, more than the 65536 accepted"));
  // 30,000 unary minus signs: no recursion, so no crash.
  EXPECT_EQ(Eval(std::string(30000, '-') + "s0", {{"s0", 6}}).value(), 6);
  // A chain of 9,000 floor divisions and sums.
  std::string chain = "s0";
  for (int i = 0; i < 9000; ++i) chain += "//1 + 1";
  EXPECT_EQ(Eval(chain, {{"s0", 6}}).value(), 9006);
}

TEST(SymbolicPrintTest, SympyLikeSyntax) {
  EXPECT_EQ(Reprint("s0 - 1"), "s0 - 1");
  EXPECT_EQ(Reprint("-s0 + 4"), "-s0 + 4");
  EXPECT_EQ(Reprint("3 - 2*s0"), "-2*s0 + 3");  // the constant last
  EXPECT_EQ(Reprint("(s0 - 1)*(s1 + 2)"), "(s0 - 1)*(s1 + 2)");
  EXPECT_EQ(Reprint("s0//4"), "(s0//4)");
  EXPECT_EQ(Reprint("(s0 - 1)//4"), "((s0 - 1)//4)");
  EXPECT_EQ(Reprint("s0**2"), "s0**2");
  EXPECT_EQ(Reprint("(s0 + 1)**2"), "(s0 + 1)**2");
  EXPECT_EQ(Reprint("s0**-1"), "s0**(-1)");
  EXPECT_EQ(Reprint("(-s0)**3"), "(-s0)**3");
  EXPECT_EQ(Reprint("s0/(2*s1)"), "s0/(2*s1)");
  EXPECT_EQ(Reprint("Max(s0, 2*s1)"), "Max(s0, 2*s1)");
  EXPECT_EQ(Reprint("Mod(s0, 3) + ceiling(s0/3) + floor(s1/2)"),
            "Mod(s0, 3) + ceiling(s0/3) + floor(s1/2)");
  EXPECT_EQ(Reprint("align(s0) + 1"), "align(s0) + 1");
  EXPECT_EQ(Reprint("  s0 *  s1 "), "s0*s1");
  ExprArena arena;
  const ExprId s0 = arena.Symbol("s0");
  EXPECT_EQ(arena.Print(arena.Align(s0, 128)), "128*ceiling(s0/128)");
  EXPECT_EQ(arena.Print(arena.Align(arena.Add(s0, arena.Integer(1)), 256)),
            "256*ceiling((s0 + 1)/256)");
}

TEST(SymbolicPrintTest, LightSimplification) {
  EXPECT_EQ(Reprint("s0 + s0"), "2*s0");
  EXPECT_EQ(Reprint("3072*s50 + 256*s50"), "3328*s50");
  EXPECT_EQ(Reprint("s0 - s0"), "0");
  EXPECT_EQ(Reprint("2*(s0 + 1)"), "2*s0 + 2");
  EXPECT_EQ(Reprint("2*3*s0*1"), "6*s0");
  EXPECT_EQ(Reprint("0*s0 + 5"), "5");
  EXPECT_EQ(Reprint("Max(s0, Max(s1, s0))"), "Max(s0, s1)");
  EXPECT_EQ(Reprint("Max(s0 + 3, s0 + 5)"), "s0 + 5");
  EXPECT_EQ(Reprint("Min(s0 + 3, s0 + 5, s0)"), "s0");
  EXPECT_EQ(Reprint("Max(3, s0, 5)"), "Max(5, s0)");
  EXPECT_EQ(Reprint("Max(s0, s1) + 0"), "Max(s0, s1)");
  EXPECT_EQ(Reprint("align(64*s0)"), "64*s0");  // _is_aligned
  EXPECT_EQ(Reprint("align(3072*s0*(s1 - 1) + 3072*s0)"),
            "3072*s0*(s1 - 1) + 3072*s0");
  EXPECT_EQ(Reprint("align(Max(128*s0, 64))"), "Max(64, 128*s0)");
  EXPECT_EQ(Reprint("align(align(s0))"), "align(s0)");
  EXPECT_EQ(Reprint("align(32*s0)"), "align(32*s0)");  // not provable
  EXPECT_EQ(Reprint("FloorDiv(s0, 1)"), "s0");
  EXPECT_EQ(Reprint("ceiling(s0)"), "s0");
  EXPECT_EQ(Reprint("ceiling(7/2)"), "4");
  EXPECT_EQ(Reprint("s0**1 + s0**0"), "s0 + 1");
  EXPECT_EQ(Reprint("2**10"), "1024");
  EXPECT_EQ(Reprint("7/2"), "7/2");  // rationals stay exact
}

TEST(SymbolicPrintTest, SameExpressionSameId) {
  ExprArena arena;
  const ExprId a = arena.Parse("3072*s50*(s33 - 1) + 3072*s50").value();
  const ExprId b = arena.Parse("3072*s50*(s33 - 1)+3072*s50").value();
  EXPECT_EQ(a, b);
  EXPECT_EQ(arena.Parse(arena.Print(a)).value(), a);
}

// Printing then parsing gives an expression of the same value, over many
// random expressions and symbol values.
TEST(SymbolicPrintTest, PrintParsesBackToTheSameValue) {
  std::mt19937_64 rng(20240611);
  for (int trial = 0; trial < 300; ++trial) {
    ExprArena arena;
    std::vector<ExprId> pool = {arena.Symbol("s0"), arena.Symbol("s1"),
                                arena.Integer(3), arena.Integer(-2)};
    auto pick = [&] { return pool[rng() % pool.size()]; };
    for (int step = 0; step < 12; ++step) {
      const ExprId a = pick();
      const ExprId b = pick();
      ExprId made = 0;
      switch (rng() % 9) {
        case 0:
          made = arena.Add(a, b);
          break;
        case 1:
          made = arena.Add(a, arena.Neg(b));
          break;
        case 2:
          made = arena.Mul(a, b);
          break;
        case 3:
          made = arena.Max({a, b});
          break;
        case 4:
          made = arena.Min({a, b, arena.Integer(7)});
          break;
        case 5:
          made = arena.FloorDiv(a, arena.Integer(3));
          break;
        case 6:
          made = arena.Mod(a, arena.Integer(5));
          break;
        case 7:
          made = arena.Align(a, 64);
          break;
        default:
          made = arena.Ceiling(arena.Div(a, arena.Integer(4)));
          break;
      }
      pool.push_back(made);
    }
    const ExprId root = pool.back();
    const std::string text = arena.Print(root);
    ExprArena other;
    absl::StatusOr<ExprId> reparsed = other.Parse(text);
    ASSERT_TRUE(reparsed.ok()) << text << ": " << reparsed.status();
    for (int k = 0; k < 5; ++k) {
      const SymbolValues v = {{"s0", static_cast<int64_t>(rng() % 200) - 50},
                              {"s1", static_cast<int64_t>(rng() % 200) - 50}};
      absl::StatusOr<int64_t> x = arena.Evaluate(root, v);
      absl::StatusOr<int64_t> y = other.Evaluate(*reparsed, v);
      ASSERT_EQ(x.ok(), y.ok()) << text;
      if (x.ok()) {
        EXPECT_EQ(*x, *y) << text;
      }
    }
  }
}

TEST(SymbolicEvaluateTest, Errors) {
  EXPECT_EQ(Eval("s0 + 1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(Eval("s0 + 1").status().message()),
              HasSubstr("symbol s0 has no value"));
  EXPECT_EQ(Eval("s0/2", {{"s0", 3}}).status().code(),
            absl::StatusCode::kInvalidArgument);        // 3/2 is not an integer
  EXPECT_EQ(Eval("(s0/2)*2", {{"s0", 3}}).value(), 3);  // exact rationals
  EXPECT_EQ(Eval("s0//(s1 - 1)", {{"s0", 3}, {"s1", 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);  // division by zero
  EXPECT_EQ(Eval("Mod(s0, s1)", {{"s0", 3}, {"s1", 0}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Eval("s0*s0", {{"s0", int64_t{1} << 32}}).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Eval("9223372036854775807 + 1").status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Eval("2**s0", {{"s0", 63}}).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(Eval("2**s0", {{"s0", 62}}).value(), int64_t{1} << 62);
  EXPECT_EQ(Eval("4294967296**3").status().code(),
            absl::StatusCode::kOutOfRange);  // not folded into a wrong value
  EXPECT_EQ(Eval("(-1)**s0", {{"s0", int64_t{1} << 62}}).value(), 1);
  EXPECT_EQ(Eval("(-2)**63").value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Eval("s0**(1/2)", {{"s0", 4}}).status().code(),
            absl::StatusCode::kInvalidArgument);  // not an integer power
}

// Evaluation never divides by zero: a divisor that is 0 at the given
// values is INVALID_ARGUMENT (sympy gives zoo or nan: no integer).
TEST(SymbolicEvaluateTest, DivisorZeroAtTheValuesIsAnError) {
  const SymbolValues v = {{"s0", 12}, {"s1", 0}, {"s2", 4}};
  for (const char* text :
       {"s0/s1", "s0//s1", "s0 % s1", "FloorDiv(s0, s1)", "Mod(s0, s1)",
        "ceiling(s0/s1)", "floor(s0/s1)", "align(s0//s1)", "s1**-1",
        "s1**(s1 - 1)", "s0//(s2 - 4)", "Mod(s0, s2 - 4*s2/s2)",
        "Max(1, s0 // Min(s1, 7))"}) {
    const absl::StatusOr<int64_t> value = Eval(text, v);
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument)
        << text;
    EXPECT_THAT(std::string(value.status().message()),
                HasSubstr("division by zero evaluating "))
        << text;
  }
  EXPECT_EQ(Eval("s0//s2 + Mod(s0, s2) + ceiling(s0/s2)", v).value(), 6);
  EXPECT_EQ(Eval("s1**s1", v).value(), 1);  // sympy: 0**0 is 1
  // A product with the factor 0 is 0 when built, as in sympy, so the
  // division inside it is gone before any value is given.
  EXPECT_EQ(Eval("0*(s0//s1) + 1", v).value(), 1);
  // Built rather than parsed, a division by the constant 0 is kept as it
  // is, and has no value.
  ExprArena arena;
  const ExprId s0 = arena.Symbol("s0");
  const ExprId zero = arena.Integer(0);
  for (const ExprId built :
       {arena.Div(s0, zero), arena.FloorDiv(s0, zero), arena.Mod(s0, zero),
        arena.Ceiling(arena.Div(arena.Integer(3), zero)),
        arena.Pow(zero, arena.Integer(-1))}) {
    EXPECT_EQ(arena.Evaluate(built, {{"s0", 5}}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << arena.Print(built);
  }
}

// Folding INT64_MIN / -1 would overflow (and INT64_MIN % -1 traps on
// x86): the builder leaves it unfolded, and evaluation says it is out of
// range.
TEST(SymbolicEvaluateTest, Int64MinOverMinusOneIsOutOfRangeNotACrash) {
  const std::string min = "(-9223372036854775807 - 1)";
  EXPECT_EQ(Reprint(min + "/-1"), "(-9223372036854775808)/(-1)");
  for (const std::string& text :
       {min + "/-1", min + "/(-1)", min + "//-1", "FloorDiv(" + min + ", -1)",
        "ceiling(" + min + "/-1)", "floor(" + min + "/-1)"}) {
    EXPECT_EQ(Eval(text).status().code(), absl::StatusCode::kOutOfRange)
        << text;
  }
  EXPECT_EQ(Eval(min + "/1").value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(Eval(min + " % -1").value(), 0);
  EXPECT_EQ(Eval("Mod(" + min + ", -1)").value(), 0);
}

// Mod is a - b*floor(a/b) with the sign of b, also where b*floor(a/b)
// alone would not fit int64.
TEST(SymbolicEvaluateTest, ModIsExactAtInt64Limits) {
  const int64_t min = std::numeric_limits<int64_t>::min();
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(Eval("Mod(s0, 2)", {{"s0", min}}).value(), 0);
  EXPECT_EQ(Eval("s0 % 3", {{"s0", min + 1}}).value(), 2);  // as Python
  EXPECT_EQ(Eval("s0 % -3", {{"s0", max}}).value(), -2);
  EXPECT_EQ(Eval("Mod(s0, s1)", {{"s0", min}, {"s1", max}}).value(), max - 1);
  EXPECT_EQ(Eval("Mod(s0, s1)", {{"s0", max}, {"s1", min}}).value(), -1);
  EXPECT_EQ(Eval("2*Mod(s0/2, 3)", {{"s0", 7}}).value(), 1);  // 7/2 mod 3
  EXPECT_EQ(Eval("Mod(-7, 3) + Mod(7, -3)").value(), 0);      // 2 + -2
}

// A DAG whose printed form doubles at every level still evaluates in time
// linear in its size; the printed length bound saturates.
TEST(SymbolicEvaluateTest, SharedSubexpressionsEvaluateOnce) {
  ExprArena arena;
  const ExprId s0 = arena.Symbol("s0");
  ExprId x = s0;
  for (int level = 0; level < 80; ++level) {
    x = arena.Max({arena.Add(x, arena.Integer(1)), arena.Add(x, s0)});
  }
  EXPECT_EQ(arena.PrintedLengthBound(x, 1 << 20), size_t{1} << 20);
  EXPECT_EQ(arena.Evaluate(x, {{"s0", 3}}).value(), 3 * 81);
  EXPECT_EQ(arena.Evaluate(x, {{"s0", 0}}).value(), 80);
  EXPECT_LT(arena.size(), 1000u);
}

// Builders take deep expressions without recursion: printing and
// evaluating 100,000 nested floor divisions.
TEST(SymbolicEvaluateTest, DeepExpressionsNeedNoRecursion) {
  ExprArena arena;
  ExprId x = arena.Symbol("s0");
  for (int i = 0; i < 100000; ++i) {
    x = arena.FloorDiv(arena.Add(x, arena.Integer(2)), arena.Integer(2));
  }
  EXPECT_EQ(arena.Evaluate(x, {{"s0", 1000}}).value(), 2);
  const std::string text = arena.Print(x);
  EXPECT_GT(text.size(), 100000u);
  EXPECT_LE(text.size(), arena.PrintedLengthBound(x, SIZE_MAX));
}

TEST(SymbolicEvaluateTest, PrintedLengthBoundIsAnUpperBound) {
  ExprArena arena;
  for (const char* text :
       {"s0", "Max(s0, 2*s1) + align(s2)", "-(s0 - 1)//4 + Mod(s0, 3)",
        "4*s50**2*(12*s33 - 1) + 4*s50*(s50 - 1) + 4*s50"}) {
    const ExprId id = arena.Parse(text).value();
    EXPECT_LE(arena.Print(id).size(), arena.PrintedLengthBound(id, SIZE_MAX))
        << text;
  }
}

}  // namespace
}  // namespace memplan
