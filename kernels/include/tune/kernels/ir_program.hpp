#pragma once
// An LLVM IR program that edit lists (tune/engine/program_edit.hpp) are
// applied to: GEVO-ML's program side. Built only when LLVM 14 is found
// (TUNE_WITH_LLVM); the interface holds no LLVM type.
//
//   IR text ──parse──> ir_program (ids !tune.id given once to every instruction
//                                  of the edited functions) ──outline──> engine
//   edit_list ──apply──> fresh copy; each edit, then repair, then verify;
//                        an edit that cannot be repaired is skipped and recorded
//
// Repair: after each edit, every operand whose value was deleted or no longer
// dominates its use (or lives in another function) is replaced by a value of
// the same type that dominates the use (an argument or an instruction), drawn
// with the edit's seed; when none exists, by a constant of the type (0 or 1
// for integers and floating point, zero for vectors); a pointer with no
// dominating pointer of its type cannot be repaired. "Operand k" of an edit
// counts only the operands an edit may change: values, not basic blocks or
// the callee of a call.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tune/engine/program_edit.hpp"

namespace tune {

struct skipped_edit {
  std::size_t index = 0;  ///< position in the edit list
  std::string reason;
};

struct applied_program {
  std::string ir;  ///< the edited module as IR text (ids kept)
  /// FNV-1a of `ir`: equal hashes mean the same program.
  std::uint64_t hash = 0;
  std::size_t applied = 0;  ///< edits that took effect
  std::vector<skipped_edit> skipped;
};

class ir_program {
 public:
  /// Parses textual IR and gives every instruction of `functions` (every
  /// defined function when empty) an id, 1, 2, ... in module order. Throws
  /// std::invalid_argument naming `origin` and the parser's line when the
  /// text is not valid IR, or naming a function that is not defined.
  static std::shared_ptr<const ir_program> parse(const std::string& ir_text, const std::vector<std::string>& functions,
                                                 const std::string& origin);
  ~ir_program();

  /// What the engine needs to draw random edits.
  const program_outline& outline() const { return outline_; }
  /// The original with its ids, as IR text.
  const std::string& text() const { return text_; }
  std::uint64_t hash() const;

  /// Applies the edits in order to a fresh copy of the original (thread-safe:
  /// each call has its own LLVM context). Never throws for a bad edit: it is
  /// skipped with the reason (an id that does not exist any more, an operand
  /// out of range, a move before itself, no repair, a module that does not
  /// verify).
  applied_program apply(const edit_list& edits) const;

 private:
  ir_program() = default;
  std::string text_;
  program_outline outline_;
};

/// What ir_program::apply does, on the text of a program that already has its
/// ids (ir_program::text()): tune-ir-worker calls it in a process of its own.
/// Throws std::invalid_argument when the text is not valid IR.
applied_program apply_edits(const std::string& identified_ir, const edit_list& edits);

/// FNV-1a 64 of a text.
std::uint64_t fnv1a(const std::string& text);

/// IR text printed again for a person and a diff: without the ids, every
/// unnamed instruction named by its id (`%i42` for id 42, as an edit names
/// it; a copy, which has no id, `%c0`, `%c1`… in order) and every unnamed
/// block by its position in its function (`b0`, `b1`…). A diff of two
/// variants then shows their edits, not the renumbering of every later value
/// that one inserted or moved instruction causes in LLVM's numbered names.
/// Throws std::invalid_argument when the text is not valid IR.
std::string readable_ir(const std::string& ir);

/// A line diff of two texts: lines only in `before` prefixed "- ", only in
/// `after` "+ ", with up to `context` unchanged lines around each change and
/// "@@ line N" before each hunk; empty when equal.
std::string line_diff(const std::string& before, const std::string& after, std::size_t context = 2);

}  // namespace tune
