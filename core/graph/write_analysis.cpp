#include "graph/write_analysis.h"

#include <torch/csrc/jit/api/function_impl.h>

namespace torchscope {
namespace {

using torch::jit::Node;
using torch::jit::Value;

bool sharesAliasSet(const c10::AliasInfo& argument, const c10::AliasInfo& result)
{
    if (result.isWildcardBefore() || result.isWildcardAfter() || argument.isWildcardAfter())
        return true;
    for (const auto& set : argument.beforeSets())
        if (result.beforeSets().count(set))
            return true;
    return false;
}

bool isContainer(const Value* value)
{
    const auto kind = value->type()->kind();
    return kind == c10::TypeKind::ListType || kind == c10::TypeKind::DictType || kind == c10::TypeKind::TupleType;
}

} // namespace

WriteAnalysis::Reach WriteAnalysis::calleeInput(const torch::jit::Function& callee, size_t input)
{
    const auto key = std::make_pair(&callee, input);
    if (const auto it = callees_.find(key); it != callees_.end())
        return it->second;
    auto* graphFunction = torch::jit::tryToGraphFunction(const_cast<torch::jit::Function&>(callee));
    if (!graphFunction || calleesInProgress_.count(key))
        return {true, true};
    calleesInProgress_.insert(key);
    const auto graph = graphFunction->graph();
    const Reach result = input < graph->inputs().size() ? reach(graph->inputs()[input]) : Reach{true, true};
    calleesInProgress_.erase(key);
    callees_[key] = result;
    return result;
}

WriteAnalysis::Reach WriteAnalysis::reachOutputs(const Node* node)
{
    Reach result;
    for (const Value* output : node->outputs())
        result.merge(reach(output));
    return result;
}

WriteAnalysis::Reach WriteAnalysis::reach(const Value* value)
{
    if (visiting_.count(value))
        return {}; // a cycle through a loop: the first visit answers for it
    if (visiting_.size() > 500)
        return {true, true}; // pathological nesting: give up, safely
    visiting_.insert(value);
    struct Leave {
        std::set<const Value*>& visiting;
        const Value* value;
        ~Leave() { visiting.erase(value); }
    } leave{visiting_, value};

    Reach result;
    for (const auto& use : value->uses()) {
        if (result.written)
            break;
        const Node* user = use.user;
        const auto kind = user->kind();

        if (kind == c10::prim::Return) {
            const Node* owner = user->owningBlock()->owningNode();
            if (!owner)
                result.escapes = true;
            else if (owner->kind() == c10::prim::If)
                result.merge(reach(owner->output(use.offset)));
            else if (owner->kind() == c10::prim::Loop && use.offset >= 1) {
                // Loop-carried: the next iteration's block input and the loop's result.
                result.merge(reach(owner->blocks()[0]->inputs()[use.offset]));
                result.merge(reach(owner->output(use.offset - 1)));
            } else {
                result.written = true;
            }
        } else if (kind == c10::prim::Loop) {
            if (use.offset >= 2) { // after trip count and condition: initial loop-carried values
                result.merge(reach(user->blocks()[0]->inputs()[use.offset - 1]));
                result.merge(reach(user->output(use.offset - 2)));
            }
        } else if (kind == c10::prim::CallMethod || kind == c10::prim::CallFunction) {
            const torch::jit::Function* callee = nullptr;
            size_t input = use.offset;
            if (kind == c10::prim::CallMethod) {
                if (const auto classType = user->input(0)->type()->cast<c10::ClassType>())
                    callee = &classType->getMethod(user->s(c10::attr::name));
            } else if (const auto functionType = user->input(0)->type()->cast<c10::FunctionType>()) {
                if (use.offset > 0) {
                    callee = functionType->function();
                    input = use.offset - 1; // the function value itself comes first
                }
            }
            if (!callee) {
                result.written = true;
                break;
            }
            const Reach inside = calleeInput(*callee, input);
            result.written = result.written || inside.written;
            if (inside.escapes) // the callee may return it (an Identity, a Sequential of in-place ops)
                result.merge(reachOutputs(user));
        } else if (kind == c10::prim::TupleConstruct || kind == c10::prim::ListConstruct
            || kind == c10::prim::DictConstruct || kind == c10::prim::TupleUnpack || kind == c10::prim::ListUnpack
            || kind == c10::prim::unchecked_cast) {
            result.merge(reachOutputs(user));
        } else {
            const c10::FunctionSchema* schema = user->maybeSchema();
            if (!schema || use.offset >= schema->arguments().size()) {
                result.written = true;
                break;
            }
            const auto* argumentAlias = schema->arguments()[use.offset].alias_info();
            if (!argumentAlias)
                continue; // read only, and the results are fresh tensors
            // A write to a container (append to a list) changes the container, not what is in it.
            if (argumentAlias->isWrite() && !isContainer(value)) {
                result.written = true;
                break;
            }
            for (size_t i = 0; i < schema->returns().size() && i < user->outputs().size(); ++i) {
                const auto* resultAlias = schema->returns()[i].alias_info();
                if (resultAlias && sharesAliasSet(*argumentAlias, *resultAlias))
                    result.merge(reach(user->output(i)));
            }
        }
    }
    return result;
}

} // namespace torchscope
