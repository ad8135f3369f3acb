#pragma once
// Program-edit evolution (GEVO-ML): an individual is an ordered list of edits
// to one original program, re-applied in order to a fresh copy of it. This
// header holds the genome and its operators and knows nothing of the program's
// language: instructions are named by stable ids that the program's side
// (kernels/, LLVM IR) assigned once to the original, and an outline of the
// original (ids, operand counts, which instructions may be copied, moved or
// deleted) is all the engine sees.
//
//   original ──outline──> random_edit / messy_crossover / mutation ──> edit_list
//   edit_list ──encode──> configuration (what ask/tell and dedup carry)
//   edit_list ──to_json──> {"edits": [...]} (what the results database stores)
//
// The repair choices of an edit (which dominating value replaces a broken
// operand) are drawn from the edit's own seed, so applying the same list to
// the same original always gives the same program.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/engine/parameter.hpp"
#include "tune/engine/space.hpp"
#include "tune/engine/strategy.hpp"

namespace tune {

enum class edit_kind : std::uint8_t {
  copy,             ///< a clone of `target` inserted before `anchor`, its value wired into a later use
  remove,           ///< `target` deleted, each of its uses repaired ("delete" in JSON)
  move,             ///< `target` moved before `anchor`
  swap_operands,    ///< operands `operand` and `operand2` of `target` exchanged
  replace_operand,  ///< operand `operand` of `target` replaced by another dominating value of its type
};

/// "copy", "delete", "move", "swap", "replace".
std::string_view to_string(edit_kind kind);
std::optional<edit_kind> edit_kind_from_string(std::string_view text);

/// A set of edit kinds: bit 1 << kind for each kind in it.
using edit_kind_set = std::uint32_t;
constexpr edit_kind_set edit_kind_bit(edit_kind kind) { return edit_kind_set{1} << static_cast<unsigned>(kind); }
/// All five kinds (the earlier GEVO's: copy, delete, move, swap, replace).
constexpr edit_kind_set all_edit_kinds = 0x1f;
/// GEVO-ML's two (its §3): copy and delete.
constexpr edit_kind_set gevo_ml_edit_kinds = edit_kind_bit(edit_kind::copy) | edit_kind_bit(edit_kind::remove);
/// "copy,delete" -> the set; throws std::invalid_argument naming the bad item
/// and the accepted kinds for an empty list, an unknown or repeated kind.
edit_kind_set parse_edit_kinds(std::string_view text);
/// The set as parse_edit_kinds reads it ("copy,delete"), in kind order.
std::string edit_kinds_text(edit_kind_set kinds);

struct program_edit {
  edit_kind kind = edit_kind::remove;
  std::uint32_t target = 0;    ///< id of the instruction edited
  std::uint32_t anchor = 0;    ///< copy, move: id of the instruction it goes before
  std::uint32_t operand = 0;   ///< swap, replace: operand index
  std::uint32_t operand2 = 0;  ///< swap: the other operand index
  std::uint64_t seed = 0;      ///< draws every repair choice of this edit

  friend bool operator==(const program_edit& a, const program_edit& b) {
    return a.kind == b.kind && a.target == b.target && a.anchor == b.anchor && a.operand == b.operand &&
           a.operand2 == b.operand2 && a.seed == b.seed;
  }
};

using edit_list = std::vector<program_edit>;

/// `{"edits": [{"kind": "copy", "target": 12, "anchor": 30, "seed": 7}, ...]}`
/// with only the fields the kind uses (anchor for copy and move, operand for
/// swap and replace, operand2 for swap). The seed is written as a decimal
/// string (it does not fit a JSON double).
std::string to_json(const edit_list& edits);
/// Reads what to_json wrote; throws std::invalid_argument quoting the edit and
/// naming the field when the text is not such an object.
edit_list edit_list_from_json(const std::string& text);

/// One line per edit, e.g. "copy %12 before %30 (seed 7)".
std::string describe(const program_edit& edit);

/// An edit list as a flat configuration (five words per edit), so that
/// propose/observe, the pipeline and its dedup carry it unchanged.
configuration encode(const edit_list& edits);
/// Throws std::invalid_argument when the length is not a multiple of five or
/// a kind is unknown.
edit_list decode(const configuration& config);
/// The number of edits an encoded list holds.
inline std::size_t edit_count(const configuration& config) { return config.size() / 5; }

/// The space of edit lists: no parameters; a configuration is valid when it
/// decodes, its JSON form is to_json()'s.
search_space_ptr make_edit_list_space(std::string origin);

/// What the engine knows of the original program.
struct instruction_outline {
  std::uint32_t id = 0;
  std::uint32_t operands = 0;
  /// May be copied, moved or deleted (not a terminator or a phi).
  bool movable = true;
};

struct program_outline {
  std::vector<instruction_outline> instructions;
};

/// A random edit of the original: the kind uniform among those of `kinds`
/// that have a possible target, the target, anchor and operands uniform
/// among the instructions they fit, the seed a fresh 64-bit draw. Throws
/// std::invalid_argument when the outline offers no edit of those kinds.
program_edit random_edit(const program_outline& outline, rng_type& rng, edit_kind_set kinds = all_edit_kinds);

/// One-point messy crossover: the parents' edits concatenated, shuffled and
/// cut at a uniform point in [0, total] into two children.
std::pair<edit_list, edit_list> messy_crossover(const edit_list& a, const edit_list& b, rng_type& rng);

/// GEVO-ML as a steady-state ask/tell strategy over edit lists (encoded as
/// configurations, see encode()); objectives are each result's `objectives`
/// ({run time, error}), minimised. See program_edit_strategy.cpp for how its
/// generations map onto propose/observe. Hyperparameters: those of
/// program_edit_defaults(). Throws std::invalid_argument for an unknown
/// hyperparameter, a value out of range or an outline with no instruction an
/// edit of the chosen kinds could change.
///
/// `valid`, when given, tells whether every edit of a list applies to the
/// original and the edited module verifies (the program's side knows; the
/// engine does not). Then each list the strategy would hand out — an initial
/// variant, a bred child, a list made new by an appended edit — is drawn
/// again (the initial edits, or the pairing's crossover and mutation with the
/// same parents) until `valid` accepts it, at most `max_draws` times; after
/// that the last draw is handed out as it is. So the pipeline, and the trial
/// budget, see only lists that apply unless all `max_draws` draws failed.
/// `max_draws` = 1 checks nothing.
using edit_list_check = std::function<bool(const edit_list&)>;
std::unique_ptr<strategy> make_program_edit_strategy(program_outline outline, const strategy_options& options,
                                                     edit_list_check valid = {});

/// The hyperparameters `gevo` accepts ("population", "initial_edits",
/// "crossover", "mutation", "max_draws" (20: draws of one list at most
/// until it is valid), "edit_kinds": an edit_kind_set, default
/// gevo_ml_edit_kinds; parse_hyper reads it as text, e.g.
/// edit_kinds=copy,delete), each with its default value: the one table
/// make_program_edit_strategy reads its defaults from.
const std::map<std::string, double>& program_edit_defaults();

}  // namespace tune
