// The forward's arguments and results of an exported program as its input and output specs nest them,
// and the check of its inputs' shapes (see exported/program_builder.h).

#include "common/error.h"
#include "common/strings.h"
#include "exported/program_builder.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/jit.h>

namespace torchscope {

namespace ex = torch::_export;
using torch::jit::Graph;
using torch::jit::Value;

namespace {

// Raised inside the forward when an input does not fit the shapes the program was exported for:
// past export's guards the graph would compute with the traced sizes baked in, or fail deep inside.
constexpr const char* kInputCheckSource = R"TS(
def check_input(x: Tensor, name: str, expected: List[int], low: List[int], high: List[int], shown: str):
    assert x.dim() == len(expected), "input '" + name + "' has " + str(x.dim()) + " dimensions, but the program was exported for " + shown
    for i in range(len(expected)):
        n = x.size(i)
        assert expected[i] < 0 or n == expected[i], "input '" + name + "' has size " + str(n) + " in dimension " + str(i) + ", but the program was exported for " + shown + " with that dimension fixed at " + str(expected[i]) + ": export it again with a torch.export.Dim for it"
        assert expected[i] >= 0 or (n >= low[i] and (high[i] < 0 or n <= high[i])), "input '" + name + "' has size " + str(n) + " in dimension " + str(i) + ", outside the range the program was exported for (" + shown + ")"
)TS";

Graph& inputCheck()
{
    static const auto graph = [] {
        const auto unit = torch::jit::compile(kInputCheckSource);
        auto copy = torch::jit::toGraphFunction(unit->get_function("check_input")).graph()->copy();
        torch::jit::Inline(*copy);
        return copy;
    }();
    return *graph;
}

// The symbol a symbolic size stands for ("Symbol('s77', positive=True, integer=True)" -> "s77").
std::string symbolName(const std::string& expression)
{
    const std::string prefix = "Symbol('";
    if (startsWith(expression, prefix)) {
        const auto end = expression.find('\'', prefix.size());
        if (end != std::string::npos)
            return expression.substr(prefix.size(), end - prefix.size());
    }
    return expression;
}

} // namespace

const ex::ModuleCallSignature* ProgramBuilder::rootSignature() const
{
    for (const auto& entry : program_.get_module_call_graph())
        if (entry.get_fqn().empty() && entry.get_signature())
            return &*entry.get_signature();
    return nullptr;
}

ProgramBuilder::Leaves ProgramBuilder::userInputs() const
{
    Leaves inputs;
    for (const auto& spec : program_.get_signature().get_input_specs()) {
        if (spec.tag() != ex::InputSpec::Tag::USER_INPUT)
            continue;
        const auto& arg = spec.get_user_input().get_arg();
        using Tag = ex::Argument::Tag;
        switch (arg.tag()) {
        case Tag::AS_TENSOR:
            inputs.emplace_back(arg.get_as_tensor().get_name(), c10::TensorType::get());
            break;
        case Tag::AS_SYM_INT:
            inputs.emplace_back(arg.get_as_sym_int().tag() == ex::SymIntArgument::Tag::AS_NAME
                    ? arg.get_as_sym_int().get_as_name()
                    : std::string{},
                c10::IntType::get());
            break;
        case Tag::AS_INT:
            inputs.emplace_back("", c10::IntType::get());
            break;
        case Tag::AS_FLOAT:
            inputs.emplace_back("", c10::FloatType::get());
            break;
        case Tag::AS_BOOL:
            inputs.emplace_back("", c10::BoolType::get());
            break;
        case Tag::AS_STRING:
            inputs.emplace_back("", c10::StringType::get());
            break;
        default:
            inputs.emplace_back("", c10::NoneType::get());
            break;
        }
    }
    return inputs;
}

c10::TypePtr ProgramBuilder::specType(const TreeSpec& spec, const Leaves& leaves, size_t& next) const
{
    if (spec.isLeaf()) {
        if (next >= leaves.size())
            throw Error("the program's input spec has more leaves than it has inputs");
        return leaves[next++].second;
    }
    std::vector<c10::TypePtr> types;
    for (const auto& child : spec.children)
        types.push_back(specType(child, leaves, next));
    if (spec.type == "builtins.list" && !types.empty())
        return c10::ListType::create(types[0]);
    if ((spec.type == "builtins.dict" || spec.type == "collections.OrderedDict") && !types.empty())
        return c10::DictType::create(c10::StringType::get(), types[0]);
    return c10::TupleType::create(types);
}

void ProgramBuilder::unpackInput(Scope& scope, Value* value, const TreeSpec& spec, const Leaves& leaves, size_t& next)
{
    Graph& graph = *scope.graph;
    if (spec.isLeaf()) {
        const auto& name = leaves[next++].first;
        if (!name.empty())
            scope.values[name] = value;
        return;
    }
    std::vector<Value*> parts;
    if (spec.type == "builtins.dict" || spec.type == "collections.OrderedDict") {
        for (size_t i = 0; i < spec.children.size(); ++i) {
            const auto key = spec.context.is_array() && i < spec.context.size() ? spec.context[i].get<std::string>()
                                                                                : std::string{};
            parts.push_back(graph.insert(c10::aten::__getitem__, {value, graph.insertConstant(key)}));
        }
    } else if (spec.type == "builtins.list") {
        auto* unpack = graph.insertNode(graph.createListUnpack(value, spec.children.size()));
        parts = unpack->outputs().vec();
    } else {
        auto* unpack = graph.insertNode(graph.createTupleUnpack(value));
        parts = unpack->outputs().vec();
    }
    for (size_t i = 0; i < spec.children.size(); ++i)
        unpackInput(scope, parts[i], spec.children[i], leaves, next);
}

void ProgramBuilder::addInputs(Scope& scope)
{
    const auto leaves = userInputs();
    const auto* signature = rootSignature();
    std::vector<std::string> names;
    if (signature && signature->get_forward_arg_names())
        names = *signature->get_forward_arg_names();
    TreeSpec args, kwargs;
    if (signature && !signature->get_in_spec().empty()) {
        const auto spec = parseTreeSpec(signature->get_in_spec());
        if (spec.children.size() == 2) {
            args = spec.children[0];
            kwargs = spec.children[1];
        }
    } else {
        args.type = "builtins.tuple";
        args.children.resize(leaves.size());
    }
    std::vector<std::pair<std::string, const TreeSpec*>> arguments;
    for (size_t i = 0; i < args.children.size(); ++i)
        arguments.emplace_back(i < names.size() ? names[i] : "input_" + std::to_string(i), &args.children[i]);
    for (size_t i = 0; i < kwargs.children.size(); ++i)
        arguments.emplace_back(kwargs.context.is_array() && i < kwargs.context.size()
                ? kwargs.context[i].get<std::string>()
                : "kwarg_" + std::to_string(i),
            &kwargs.children[i]);
    size_t typed = 0, unpacked = 0;
    for (const auto& [name, spec] : arguments) {
        Value* input = scope.graph->addInput()->setType(specType(*spec, leaves, typed));
        if (usableName(identifier(name)))
            input->setDebugName(identifier(name));
        unpackInput(scope, input, *spec, leaves, unpacked);
    }
    if (typed != leaves.size())
        throw Error("the program's input spec has " + std::to_string(typed) + " leaves but the program takes "
            + std::to_string(leaves.size()) + " inputs");
    checkInputShapes(scope, leaves);
}

void ProgramBuilder::checkInputShapes(Scope& scope, const Leaves& leaves)
{
    const auto& values = program_.get_graph().get_tensor_values();
    const auto& ranges = archive_.program.get_range_constraints();
    for (const auto& [name, type] : leaves) {
        const auto meta = values.find(name);
        if (name.empty() || meta == values.end())
            continue;
        std::vector<int64_t> expected, low, high;
        std::vector<std::string> shown;
        for (const auto& size : meta->second.get_sizes()) {
            if (size.tag() == ex::SymInt::Tag::AS_INT) {
                expected.push_back(size.get_as_int());
                low.push_back(0);
                high.push_back(-1);
                shown.push_back(std::to_string(size.get_as_int()));
                continue;
            }
            const auto symbol = symbolName(size.get_as_expr().get_expr_str());
            expected.push_back(-1);
            const auto range = ranges.find(symbol);
            low.push_back(range != ranges.end() && range->second.get_min_val() ? *range->second.get_min_val() : 0);
            high.push_back(range != ranges.end() && range->second.get_max_val() ? *range->second.get_max_val() : -1);
            shown.push_back(symbol);
        }
        const std::string shape = std::string(c10::getDtypeNames(toScalarType(meta->second.get_dtype())).first) + "["
            + join(shown, ", ") + "]";
        info_.inputs.push_back(name + ": " + shape);
        Graph& graph = *scope.graph;
        torch::jit::insertGraph(graph, inputCheck(),
            {scope.values.at(name), graph.insertConstant(name), graph.insertConstant(expected),
                graph.insertConstant(low), graph.insertConstant(high), graph.insertConstant(shape)});
    }
    for (const auto& [symbol, range] : ranges)
        info_.dynamicDimensions.push_back(symbol + " in [" + std::to_string(range.get_min_val().value_or(0)) + ", "
            + (range.get_max_val() ? std::to_string(*range.get_max_val()) : std::string("inf")) + "]");
}

Value* ProgramBuilder::packOutput(Scope& scope, const TreeSpec& spec, const std::vector<Value*>& leaves, size_t& next)
{
    Graph& graph = *scope.graph;
    if (spec.isLeaf()) {
        if (next >= leaves.size())
            throw Error("the program's output spec has more leaves than it has outputs");
        return leaves[next++];
    }
    std::vector<Value*> parts;
    for (const auto& child : spec.children)
        parts.push_back(packOutput(scope, child, leaves, next));
    std::vector<c10::TypePtr> types;
    for (auto* part : parts)
        types.push_back(part->type());
    c10::TypePtr unified = types.empty() ? nullptr : types[0];
    for (const auto& type : types)
        if (unified)
            unified = c10::unifyTypes(unified, type).value_or(nullptr);
    if (spec.type == "builtins.list" && unified)
        return graph.insertNode(graph.createList(unified, parts))->output();
    // builtins.dict, collections.OrderedDict (torchvision's segmentation models), defaultdict.
    const bool isDict = spec.type == "builtins.dict" || spec.type == "collections.OrderedDict"
        || spec.type == "collections.defaultdict";
    if (isDict && spec.context.is_array() && spec.context.size() == parts.size()) {
        std::vector<Value*> keys;
        for (const auto& key : spec.context)
            keys.push_back(graph.insertConstant(key.is_string() ? key.get<std::string>() : key.dump()));
        return graph
            .insertNode(graph.createDict(c10::StringType::get(), unified ? unified : c10::AnyType::get(), keys, parts))
            ->output();
    }
    return graph.insertNode(graph.createTuple(parts))->output();
}

} // namespace torchscope
