#include "tune/kernels/ir_program.hpp"

#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace tune {

namespace {
constexpr const char* id_kind = "tune.id";

std::uint32_t id_of(const llvm::Instruction& inst) {
  auto* node = inst.getMetadata(id_kind);
  if (!node || node->getNumOperands() != 1) return 0;
  auto* value = llvm::mdconst::dyn_extract<llvm::ConstantInt>(node->getOperand(0));
  return value ? static_cast<std::uint32_t>(value->getZExtValue()) : 0;
}

void set_id(llvm::Instruction& inst, std::uint32_t id) {
  auto& context = inst.getContext();
  auto* value = llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), id);
  inst.setMetadata(id_kind, llvm::MDNode::get(context, {llvm::ConstantAsMetadata::get(value)}));
}

// The operands an edit may change: values, not labels, metadata, tokens or a
// call's callee and bundles.
std::vector<unsigned> editable_operands(const llvm::Instruction& inst) {
  unsigned count = inst.getNumOperands();
  if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) count = call->arg_size();
  std::vector<unsigned> out;
  for (unsigned i = 0; i < count; ++i) {
    auto* type = inst.getOperand(i)->getType();
    if (type->isLabelTy() || type->isMetadataTy() || type->isTokenTy()) continue;
    out.push_back(i);
  }
  return out;
}

bool movable(const llvm::Instruction& inst) {
  return !inst.isTerminator() && !llvm::isa<llvm::PHINode>(inst) && !inst.isEHPad();
}

std::string type_name(const llvm::Type* type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type->print(os);
  return os.str();
}

std::string print(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return os.str();
}

std::unique_ptr<llvm::Module> parse_text(const std::string& text, llvm::LLVMContext& context,
                                         const std::string& origin) {
  llvm::SMDiagnostic error;
  auto module = llvm::parseAssemblyString(text, error, context);
  if (!module)
    throw std::invalid_argument(origin + ":" + std::to_string(error.getLineNo()) +
                                ": not valid LLVM 14 IR: " + error.getMessage().str());
  return module;
}

// Why an edit could not be applied; the edit is then skipped.
struct edit_failure {
  std::string reason;
};

// One edit applied to one module, with the edit's own random stream.
class edit_applier {
 public:
  edit_applier(llvm::Module& module, const program_edit& edit) : module_(module), edit_(edit), rng_(edit.seed) {
    for (auto& function : module_)
      for (auto& block : function)
        for (auto& inst : block)
          if (auto id = id_of(inst)) by_id_.emplace(id, &inst);
  }

  void apply() {
    auto* target = find(edit_.target);
    switch (edit_.kind) {
      case edit_kind::copy:
        copy(target, find(edit_.anchor));
        break;
      case edit_kind::remove:
        remove(target);
        break;
      case edit_kind::move:
        move(target, find(edit_.anchor));
        break;
      case edit_kind::swap_operands:
        swap(target);
        break;
      case edit_kind::replace_operand:
        replace(target);
        break;
    }
  }

 private:
  llvm::Instruction* find(std::uint32_t id) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) throw edit_failure{"instruction %" + std::to_string(id) + " does not exist (any more)"};
    return it->second;
  }

  void need_movable(const llvm::Instruction* inst) {
    if (!movable(*inst))
      throw edit_failure{"instruction %" + std::to_string(id_of(*inst)) + " (" + inst->getOpcodeName() +
                         ") cannot be copied, moved or deleted"};
  }

  // Where an instruction placed "before anchor" goes: after the phis of a phi's block.
  static llvm::Instruction* insertion_point(llvm::Instruction* anchor) {
    if (llvm::isa<llvm::PHINode>(anchor)) return anchor->getParent()->getFirstNonPHI();
    return anchor;
  }

  std::uint64_t draw(std::size_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }

  // A value of `type` for `use`: an argument or instruction that dominates it,
  // drawn with the edit's seed, never `avoid`; else a constant of the type
  // (for a pointer: a global of the type); nullptr when there is none.
  llvm::Value* replacement(const llvm::DominatorTree& tree, const llvm::Use& use, llvm::Type* type,
                           const llvm::Value* avoid) {
    auto* user = llvm::cast<llvm::Instruction>(use.getUser());
    auto* function = user->getFunction();
    std::vector<llvm::Value*> candidates;
    for (auto& arg : function->args())
      if (arg.getType() == type && &arg != avoid) candidates.push_back(&arg);
    for (auto& block : *function)
      for (auto& inst : block)
        if (inst.getType() == type && &inst != avoid && &inst != user && tree.dominates(&inst, use))
          candidates.push_back(&inst);
    if (!candidates.empty()) return candidates[draw(candidates.size())];
    if (type->isIntegerTy()) return llvm::ConstantInt::get(type, draw(2));
    if (type->isFloatingPointTy()) return llvm::ConstantFP::get(type, static_cast<double>(draw(2)));
    if (type->isVectorTy()) return llvm::Constant::getNullValue(type);
    if (type->isPointerTy()) {
      std::vector<llvm::Value*> globals;
      for (auto& global : module_.globals())
        if (global.getType() == type && &global != avoid) globals.push_back(&global);
      if (!globals.empty()) return globals[draw(globals.size())];
    }
    return nullptr;
  }

  void set_or_fail(const llvm::DominatorTree& tree, llvm::Use& use, const llvm::Value* avoid) {
    auto* value = replacement(tree, use, use.get()->getType(), avoid);
    if (!value)
      throw edit_failure{"no value of type " + type_name(use.get()->getType()) + " to repair operand " +
                         std::to_string(use.getOperandNo()) + " of " + describe_inst(use.getUser())};
    use.set(value);
  }

  static std::string describe_inst(const llvm::User* user) {
    auto* inst = llvm::cast<llvm::Instruction>(user);
    auto id = id_of(*inst);
    return std::string(inst->getOpcodeName()) + (id ? " %" + std::to_string(id) : " (a copy)");
  }

  // Every operand whose value was moved out of the function or no longer
  // dominates its use gets a dominating value of its type.
  void repair() {
    for (auto& function : module_) {
      if (function.isDeclaration()) continue;
      llvm::DominatorTree tree(function);
      for (auto& block : function)
        for (auto& inst : block)
          for (auto& use : inst.operands()) {
            bool broken = false;
            if (auto* def = llvm::dyn_cast<llvm::Instruction>(use.get()))
              broken = def->getFunction() != &function || !tree.dominates(def, use);
            else if (auto* arg = llvm::dyn_cast<llvm::Argument>(use.get()))
              broken = arg->getParent() != &function;
            if (broken) set_or_fail(tree, use, use.get());
          }
    }
  }

  void copy(llvm::Instruction* target, llvm::Instruction* anchor) {
    need_movable(target);
    auto* clone = target->clone();
    clone->setMetadata(id_kind, nullptr);  // copies are not addressable: ids stay unique
    clone->insertBefore(insertion_point(anchor));
    if (!clone->getType()->isVoidTy()) {
      // Wire the copy's value into one later use of its type, or it is dead code.
      llvm::DominatorTree tree(*clone->getFunction());
      std::vector<llvm::Use*> uses;
      for (auto& block : *clone->getFunction())
        for (auto& inst : block) {
          if (&inst == clone) continue;
          for (auto index : editable_operands(inst)) {
            auto& use = inst.getOperandUse(index);
            if (use.get()->getType() == clone->getType() && tree.dominates(clone, use)) uses.push_back(&use);
          }
        }
      if (!uses.empty()) uses[draw(uses.size())]->set(clone);
    }
    repair();
  }

  void remove(llvm::Instruction* target) {
    need_movable(target);
    llvm::DominatorTree tree(*target->getFunction());
    std::vector<llvm::Use*> uses;
    for (auto& use : target->uses()) uses.push_back(&use);
    for (auto* use : uses) set_or_fail(tree, *use, target);
    target->eraseFromParent();
  }

  void move(llvm::Instruction* target, llvm::Instruction* anchor) {
    need_movable(target);
    if (target == anchor) throw edit_failure{"instruction %" + std::to_string(edit_.target) + " moved before itself"};
    target->moveBefore(insertion_point(anchor));
    repair();
  }

  llvm::Use& operand(llvm::Instruction* target, std::uint32_t k) {
    auto editable = editable_operands(*target);
    if (k >= editable.size())
      throw edit_failure{describe_inst(target) + " has " + std::to_string(editable.size()) +
                         " editable operands, not an operand " + std::to_string(k)};
    return target->getOperandUse(editable[k]);
  }

  void swap(llvm::Instruction* target) {
    auto& a = operand(target, edit_.operand);
    auto& b = operand(target, edit_.operand2);
    if (&a == &b) throw edit_failure{"swap of operand " + std::to_string(edit_.operand) + " with itself"};
    if (a.get()->getType() != b.get()->getType())
      throw edit_failure{"operands of " + describe_inst(target) + " have different types (" +
                         type_name(a.get()->getType()) + ", " + type_name(b.get()->getType()) + ")"};
    auto* first = a.get();
    a.set(b.get());
    b.set(first);
    repair();
  }

  void replace(llvm::Instruction* target) {
    auto& use = operand(target, edit_.operand);
    llvm::DominatorTree tree(*target->getFunction());
    set_or_fail(tree, use, use.get());
  }

  llvm::Module& module_;
  const program_edit& edit_;
  rng_type rng_;
  std::map<std::uint32_t, llvm::Instruction*> by_id_;
};
}  // namespace

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

ir_program::~ir_program() = default;

std::uint64_t ir_program::hash() const { return fnv1a(text_); }

std::shared_ptr<const ir_program> ir_program::parse(const std::string& ir_text,
                                                    const std::vector<std::string>& functions,
                                                    const std::string& origin) {
  llvm::LLVMContext context;
  auto module = parse_text(ir_text, context, origin);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) throw std::invalid_argument(origin + ": the IR does not verify: " + os.str());
  std::set<std::string> wanted(functions.begin(), functions.end());
  for (auto& name : wanted) {
    auto* function = module->getFunction(name);
    if (!function || function->isDeclaration())
      throw std::invalid_argument(origin + ": no function '" + name + "' is defined to edit");
  }
  std::shared_ptr<ir_program> program(new ir_program());
  std::uint32_t next = 1;
  for (auto& function : *module) {
    if (function.isDeclaration() || (!wanted.empty() && !wanted.count(function.getName().str()))) continue;
    for (auto& block : function)
      for (auto& inst : block) {
        set_id(inst, next);
        program->outline_.instructions.push_back(
            {next, static_cast<std::uint32_t>(editable_operands(inst).size()), movable(inst)});
        ++next;
      }
  }
  program->text_ = print(*module);
  return program;
}

applied_program ir_program::apply(const edit_list& edits) const { return apply_edits(text_, edits); }

applied_program apply_edits(const std::string& identified_ir, const edit_list& edits) {
  llvm::LLVMContext context;
  auto current = parse_text(identified_ir, context, "the original program");
  applied_program result;
  for (std::size_t i = 0; i < edits.size(); ++i) {
    auto candidate = llvm::CloneModule(*current);
    try {
      edit_applier(*candidate, edits[i]).apply();
    } catch (const edit_failure& failure) {
      result.skipped.push_back({i, describe(edits[i]) + ": " + failure.reason});
      continue;
    }
    std::string problems;
    llvm::raw_string_ostream os(problems);
    if (llvm::verifyModule(*candidate, &os)) {
      auto text = os.str();
      result.skipped.push_back({i, describe(edits[i]) + ": does not verify: " + text.substr(0, text.find('\n'))});
      continue;
    }
    current = std::move(candidate);
    ++result.applied;
  }
  result.ir = print(*current);
  result.hash = fnv1a(result.ir);
  return result;
}

std::string readable_ir(const std::string& ir) {
  llvm::LLVMContext context;
  auto module = parse_text(ir, context, "IR with ids");
  auto numbered = [](char prefix, std::size_t n) {
    std::string name(1, prefix);
    name += std::to_string(n);
    return name;
  };
  for (auto& function : *module) {
    std::size_t blocks = 0, copies = 0;
    for (auto& block : function) {
      if (!block.hasName()) block.setName(numbered('b', blocks));
      ++blocks;
      for (auto& inst : block) {
        if (!inst.hasName() && !inst.getType()->isVoidTy()) {
          auto id = id_of(inst);
          inst.setName(id ? numbered('i', id) : numbered('c', copies++));
        }
        inst.setMetadata(id_kind, nullptr);
      }
    }
  }
  return print(*module);
}

std::string line_diff(const std::string& before, const std::string& after, std::size_t context) {
  auto split = [](const std::string& text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
      auto end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      lines.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return lines;
  };
  auto a = split(before), b = split(after);
  // Longest common subsequence table (the programs are small).
  std::vector<std::vector<std::uint32_t>> lcs(a.size() + 1, std::vector<std::uint32_t>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;)
    for (std::size_t j = b.size(); j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  // Each line of the walk: ' ', '-' or '+', the text and the line in `before`.
  struct step {
    char mark;
    const std::string* text;
    std::size_t line;
  };
  std::vector<step> steps;
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      steps.push_back({' ', &a[i], i + 1});
      ++i, ++j;
    } else if (i < a.size() && (j == b.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
      steps.push_back({'-', &a[i], i + 1});
      ++i;
    } else {
      steps.push_back({'+', &b[j], i + 1});
      ++j;
    }
  }
  std::vector<bool> shown(steps.size(), false);
  for (std::size_t k = 0; k < steps.size(); ++k)
    if (steps[k].mark != ' ')
      for (std::size_t m = k >= context ? k - context : 0; m < steps.size() && m <= k + context; ++m) shown[m] = true;
  std::string out;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (!shown[k]) continue;
    if (k == 0 || !shown[k - 1]) out += "@@ line " + std::to_string(steps[k].line) + "\n";
    out += steps[k].mark;
    out += ' ';
    out += *steps[k].text + "\n";
  }
  return out;
}

}  // namespace tune
