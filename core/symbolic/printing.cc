// ExprArena's printer (core/symbolic/symbolic.h): sympy's syntax, on an
// explicit stack.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/symbolic/symbolic.h"

namespace memplan {
namespace {

// Precedences for printing, as sympy's printer: a subexpression is wrapped
// in parentheses where its precedence is below what its place requires.
constexpr int kPrecAdd = 1;
constexpr int kPrecMul = 2;
constexpr int kPrecPow = 3;
constexpr int kPrecAtom = 4;

// A piece of printing work on the printer's stack.
struct PrintTask {
  enum Type : uint8_t { kNode, kNodeAbs, kText, kInt } type;
  ExprId id = 0;               // kNode, kNodeAbs
  int min_prec = 0;            // kNode: parenthesize below this precedence
  const char* text = nullptr;  // kText
  int64_t number = 0;          // kInt
};

// Appends |value| (also for INT64_MIN).
void AppendAbs(std::string* out, int64_t value) {
  const uint64_t magnitude = value < 0 ? ~static_cast<uint64_t>(value) + 1
                                       : static_cast<uint64_t>(value);
  absl::StrAppend(out, magnitude);
}

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

std::string ExprArena::Snippet(ExprId id) const {
  std::string text;
  if (!PrintWithin(id, 200, &text)) return "a long expression";
  return text;
}

}  // namespace memplan
