#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tune/kernels/ir_program.hpp"

using namespace tune;

namespace {
// Ids follow module order: @f gets 1..12, @g 13..15.
const char* small_ir = R"(
define i32 @f(i32 %a, i32 %b, float* %p) {
entry:
  %x = add i32 %a, %b
  %y = mul i32 %x, 3
  %c = icmp slt i32 %y, 10
  br i1 %c, label %then, label %done
then:
  %z = sub i32 %y, %a
  %v = load float, float* %p
  %w = fadd float %v, 1.0
  store float %w, float* %p
  br label %done
done:
  %r = phi i32 [ %y, %entry ], [ %z, %then ]
  %s = add i32 %r, %x
  ret i32 %s
}

define void @g(i32 %a) {
  %m = alloca i32
  store i32 %a, i32* %m
  ret void
}
)";

std::shared_ptr<const ir_program> program() {
  static auto parsed = ir_program::parse(small_ir, {}, "small.ll");
  return parsed;
}

program_edit edit(edit_kind kind, std::uint32_t target, std::uint32_t anchor = 0, std::uint32_t operand = 0,
                  std::uint32_t operand2 = 0, std::uint64_t seed = 1) {
  return {kind, target, anchor, operand, operand2, seed};
}

// The applied program parses and verifies again (parse() verifies).
void verifies(const applied_program& result) {
  INFO(result.ir);
  CHECK_NOTHROW(ir_program::parse(result.ir, {}, "edited.ll"));
}

// The line of the instruction named `name` in IR text.
std::string line_of(const std::string& ir, const std::string& name) {
  std::smatch m;
  std::regex pattern("\\n  " + name + " = [^\\n]*");
  return std::regex_search(ir, m, pattern) ? m.str().substr(3) : "";
}
}  // namespace

TEST_CASE("parse gives every instruction an id and outlines it", "[ir][program]") {
  auto& outline = program()->outline().instructions;
  REQUIRE(outline.size() == 15);
  for (std::uint32_t i = 0; i < outline.size(); ++i) CHECK(outline[i].id == i + 1);
  std::vector<std::uint32_t> operands, fixed;
  for (auto& inst : outline) {
    operands.push_back(inst.operands);
    if (!inst.movable) fixed.push_back(inst.id);
  }
  // br i1 has one value operand (its labels are not editable); a phi two.
  CHECK(operands == std::vector<std::uint32_t>{2, 2, 2, 1, 2, 1, 2, 2, 0, 2, 2, 1, 1, 2, 0});
  CHECK(fixed == std::vector<std::uint32_t>{4, 9, 10, 12, 15});
  CHECK(program()->text().find("!tune.id") != std::string::npos);
  auto only_g = ir_program::parse(small_ir, {"g"}, "small.ll");
  CHECK(only_g->outline().instructions.size() == 3);
}

TEST_CASE("parse refuses IR that is not valid and functions that are not there", "[ir][program]") {
  CHECK_THROWS_WITH(ir_program::parse("define i32 @f() {\n  ret i64 0\n}\n", {}, "bad.ll"),
                    Catch::Contains("bad.ll:2"));
  CHECK_THROWS_WITH(ir_program::parse(small_ir, {"h"}, "small.ll"), Catch::Contains("no function 'h'"));
}

TEST_CASE("delete repairs every use with a dominating value of its type", "[ir][program]") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto result = program()->apply({edit(edit_kind::remove, 1, 0, 0, 0, seed)});
    REQUIRE(result.skipped.empty());
    CHECK(result.applied == 1);
    verifies(result);
    CHECK(line_of(result.ir, "%x").empty());
    // %y's use: only the arguments dominate it; %s's use: the arguments, %y or %r.
    CHECK(std::regex_search(line_of(result.ir, "%y"), std::regex("mul i32 %[ab], 3")));
    CHECK(std::regex_search(line_of(result.ir, "%s"), std::regex("add i32 %r, %(a|b|y|r)\\b")));
  }
}

TEST_CASE("replace draws same-typed dominating values with the edit's seed", "[ir][program]") {
  std::set<std::string> chosen;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    auto result = program()->apply({edit(edit_kind::replace_operand, 11, 0, 1, 0, seed)});  // %s's operand %x
    REQUIRE(result.skipped.empty());
    verifies(result);
    std::smatch m;
    auto line = line_of(result.ir, "%s");
    REQUIRE(std::regex_search(line, m, std::regex("add i32 %r, (%\\w+)")));
    chosen.insert(m[1]);
  }
  // Never %x itself, never %z (it does not dominate done), never %c (an i1).
  CHECK(chosen == std::set<std::string>{"%a", "%b", "%y", "%r"});
}

TEST_CASE("move and copy repair operands that no longer dominate", "[ir][program]") {
  // %y before %x: %y's operand %x comes after it now.
  auto moved = program()->apply({edit(edit_kind::move, 2, 1)});
  REQUIRE(moved.skipped.empty());
  verifies(moved);
  CHECK(std::regex_search(line_of(moved.ir, "%y"), std::regex("mul i32 %[ab], 3")));
  CHECK(moved.ir.find("%y = mul") < moved.ir.find("%x = add"));
  // A copy of %z (defined in then) before %s: its operand %y still dominates;
  // its value is wired into a later use (%s's or ret's).
  auto copied = program()->apply({edit(edit_kind::copy, 5, 11)});
  REQUIRE(copied.skipped.empty());
  verifies(copied);
  std::smatch m;
  REQUIRE(std::regex_search(copied.ir, m, std::regex("\\n  (%\\d+) = sub i32 %y, %a\\n")));
  INFO(copied.ir);
  CHECK(std::regex_search(copied.ir, std::regex("(= add i32 (%r, )?|ret i32 )" + m[1].str() + "\\b")));
  // Copying %x into @g: its operands come from @f and are repaired with @g's %a.
  auto across = program()->apply({edit(edit_kind::copy, 1, 14)});
  REQUIRE(across.skipped.empty());
  verifies(across);
  CHECK(std::regex_search(across.ir, std::regex("= add i32 %a, %a")));
}

TEST_CASE("swap exchanges operands of the same type", "[ir][program]") {
  auto result = program()->apply({edit(edit_kind::swap_operands, 5, 0, 0, 1)});
  REQUIRE(result.skipped.empty());
  verifies(result);
  CHECK(line_of(result.ir, "%z").find("= sub i32 %a, %y,") != std::string::npos);
}

TEST_CASE("re-applying an edit list gives the same IR", "[ir][program]") {
  edit_list edits = {edit(edit_kind::copy, 7, 3, 0, 0, 11), edit(edit_kind::remove, 2, 0, 0, 0, 12),
                     edit(edit_kind::replace_operand, 11, 0, 0, 0, 13), edit(edit_kind::move, 6, 2, 0, 0, 14),
                     edit(edit_kind::swap_operands, 11, 0, 0, 1, 15)};
  auto first = program()->apply(edits);
  auto second = program()->apply(edits);
  CHECK(first.ir == second.ir);
  CHECK(first.hash == second.hash);
  CHECK(first.hash != program()->hash());
  verifies(first);
  // The random stream is the edit's: another seed for the delete may repair otherwise.
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = 1; seed <= 10; ++seed)
    hashes.insert(program()->apply({edit(edit_kind::remove, 1, 0, 0, 0, seed)}).hash);
  CHECK(hashes.size() > 1);
}

TEST_CASE("bad edits are skipped with a reason and leave the program as it was", "[ir][program]") {
  edit_list bad = {
      edit(edit_kind::remove, 99),                 // no such id
      edit(edit_kind::remove, 4),                  // a terminator
      edit(edit_kind::move, 1, 1),                 // before itself
      edit(edit_kind::replace_operand, 9, 0, 0),   // br label has no value operand
      edit(edit_kind::swap_operands, 8, 0, 0, 1),  // store: float and float*
      edit(edit_kind::remove, 13),                 // alloca: no other i32* to repair its use
      edit(edit_kind::swap_operands, 1, 0, 1, 1),  // an operand with itself
      edit(edit_kind::replace_operand, 3, 0, 7),   // operand out of range
  };
  auto result = program()->apply(bad);
  CHECK(result.applied == 0);
  REQUIRE(result.skipped.size() == bad.size());
  std::vector<std::string> expected = {"does not exist",      "cannot be copied", "moved before itself",
                                       "0 editable operands", "different types",  "no value of type i32*",
                                       "with itself",         "not an operand 7"};
  for (std::size_t i = 0; i < bad.size(); ++i) {
    INFO(result.skipped[i].reason);
    CHECK(result.skipped[i].index == i);
    CHECK(result.skipped[i].reason.find(expected[i]) != std::string::npos);
  }
  CHECK(result.hash == program()->hash());
  // An id deleted by an earlier edit is gone for the later ones.
  auto twice = program()->apply({edit(edit_kind::remove, 5), edit(edit_kind::swap_operands, 5, 0, 0, 1)});
  CHECK(twice.applied == 1);
  REQUIRE(twice.skipped.size() == 1);
  CHECK(twice.skipped[0].index == 1);
  verifies(twice);
}

TEST_CASE("random edit lists from the outline never break the program", "[ir][program]") {
  rng_type rng(3);
  for (int n = 0; n < 100; ++n) {
    edit_list edits;
    for (int k = 0; k < 4; ++k) edits.push_back(random_edit(program()->outline(), rng));
    auto result = program()->apply(edits);
    CHECK(result.applied + result.skipped.size() == edits.size());
    verifies(result);
  }
}

TEST_CASE("line_diff shows changed lines with context", "[ir][program]") {
  CHECK(line_diff("a\nb\nc\n", "a\nb\nc\n").empty());
  CHECK(line_diff("a\nb\nc\nd\ne\nf\n", "a\nb\nc\nD\ne\nf\n", 1) == "@@ line 3\n  c\n- d\n+ D\n  e\n");
  CHECK(line_diff("x\n", "x\ny\n", 0) == "@@ line 2\n+ y\n");
}

TEST_CASE("readable_ir drops the ids and keeps the names the IR has", "[ir][program]") {
  auto plain = readable_ir(program()->text());
  CHECK(plain.find("tune.id") == std::string::npos);
  CHECK(plain.find("!{i32 ") == std::string::npos);
  CHECK(plain.find("%x = add i32 %a, %b\n") != std::string::npos);
  // A move shows as one line in and one out (%c before %x: its %y repaired to %a).
  auto moved = readable_ir(program()->apply({edit(edit_kind::move, 3, 1)}).ir);
  CHECK(line_diff(plain, moved, 0) ==
        "@@ line 6\n+   %c = icmp slt i32 %a, 10\n@@ line 8\n-   %c = icmp slt i32 %y, 10\n");
}

TEST_CASE("readable_ir names unnamed values by their ids so a diff shows only the edit", "[ir][program]") {
  // As clang writes it: numbered values, numbered blocks. Ids 1..5 in order.
  const char* numbered = R"(
define i32 @h(i32 %0, i32 %1) {
  %3 = add i32 %0, %1
  %4 = mul i32 %3, 3
  %5 = sub i32 %4, %0
  %6 = icmp slt i32 %5, 10
  br i1 %6, label %7, label %7

7:
  ret i32 %5
}
)";
  auto h = ir_program::parse(numbered, {}, "h.ll");
  auto plain = readable_ir(h->text());
  CHECK(plain.find("  %i1 = add i32 %0, %1\n") != std::string::npos);
  CHECK(plain.find("  %i3 = sub i32 %i2, %0\n") != std::string::npos);
  CHECK(plain.find("\nb1:") != std::string::npos);
  CHECK(plain.find("  ret i32 %i3\n") != std::string::npos);
  // A copy of the add before the sub: LLVM's numbering would shift every
  // later value and label (four lines out, five in); by ids the diff is the
  // copy and at most the one use its repair rewired.
  auto copied = h->apply({edit(edit_kind::copy, 1, 3)});
  REQUIRE(copied.applied == 1);
  auto diff = line_diff(plain, readable_ir(copied.ir), 0);
  INFO(diff);
  CHECK(diff.find("+   %c0 = add i32 %0, %1\n") != std::string::npos);
  std::size_t removed = 0, added = 0;
  std::istringstream lines(diff);
  for (std::string line; std::getline(lines, line);) {
    removed += line.rfind("- ", 0) == 0;
    added += line.rfind("+ ", 0) == 0;
  }
  CHECK(removed <= 1);
  CHECK(added <= 2);
}
