#include "graph/engine.h"

#include "common/cancel_scope.h"
#include "common/error.h"
#include "common/strings.h"
#include "graph/instrumenter.h"
#include "graph/model_output.h"
#include "graph/selector.h"
#include "graph/warning_capture.h"
#include "model/model.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/script.h>

#include <set>

namespace torchscope {
namespace {

std::string callKey(const CaptureSlot& slot, size_t call)
{
    return CaptureKey{slot.path, slot.kind, slot.inputIndex, static_cast<int>(call)}.format();
}

c10::IValue toDevice(const c10::IValue& value, const c10::Device& device)
{
    if (value.isTensor())
        return value.toTensor().to(device);
    if (value.isTensorList()) {
        c10::List<at::Tensor> moved;
        for (const at::Tensor& t : value.toTensorList())
            moved.push_back(t.to(device));
        return moved;
    }
    return value;
}

// Inputs that gradients flow from: floating tensors get requires_grad on a copy of their own.
c10::IValue withGradient(const c10::IValue& value)
{
    if (value.isTensor() && value.toTensor().is_floating_point())
        return value.toTensor().detach().clone().requires_grad_(true);
    if (value.isTensorList()) {
        c10::List<at::Tensor> list;
        for (const at::Tensor& t : value.toTensorList())
            list.push_back(t.is_floating_point() ? t.detach().clone().requires_grad_(true) : t);
        return list;
    }
    return value;
}

} // namespace

const c10::IValue* RunResult::find(const std::string& key) const
{
    for (const auto& [k, v] : values)
        if (k == key)
            return &v;
    return nullptr;
}

at::Tensor RunResult::tensor(const std::string& key) const
{
    const auto* value = find(key);
    if (!value || !value->isTensor())
        throw Error("the run has no tensor '" + key + "'");
    return value->toTensor();
}

std::string torchErrorMessage(const std::string& text)
{
    // TorchScript prints its own traceback first; the last non-empty line holds the message,
    // prefixed by the exception class names ("RuntimeError: AssertionError: ...").
    std::string line;
    for (const auto& candidate : split(text, '\n'))
        if (!candidate.empty())
            line = candidate;
    for (bool stripped = true; stripped;) {
        stripped = false;
        for (const char* prefix : {"RuntimeError: ", "AssertionError: ", "ValueError: ", "TypeError: ", "Exception: "})
            if (startsWith(line, prefix)) {
                line = line.substr(std::string(prefix).size());
                stripped = true;
            }
    }
    return line;
}

Engine::Engine(std::shared_ptr<Model> model)
    : model_(std::move(model))
{ }

Engine::~Engine() = default;

ResolvedRequest Engine::resolve(const Request& request) const
{
    ResolvedRequest resolved;
    std::set<std::string> seen;
    for (const auto& grab : request.grabs) {
        for (const auto& path : resolveSelector(*model_, grab.selector, &resolved.notes)) {
            CaptureSlot slot{path + grab.suffix(), path, grab.kind, grab.inputIndex};
            if (seen.insert(slot.key).second)
                resolved.captures.push_back(slot);
        }
    }
    for (const auto& edit : request.edits) {
        requireCalledModule(*model_, edit.path, "edit '" + edit.toString() + "'");
        resolved.edits.push_back(edit);
    }
    resolved.attentionInPath = request.attentionInPath;
    resolved.grabsOnPath = request.grabsOnPath;
    if (request.relevance) {
        resolved.relevance = request.relevance;
        for (const auto& o : request.relevance->overrides)
            resolved.ruleOverrides.push_back({resolveSelector(*model_, o.selector, &resolved.notes), o.rule});
    }
    if (request.truncateAt) {
        requireCalledModule(*model_, *request.truncateAt, "truncation point");
        resolved.truncateAt = request.truncateAt;
    }
    if (resolved.truncateAt && (resolved.needsGradients() || request.inputGradient))
        throw Error("gradients are taken of a score in the model's output, but the run is truncated at '"
            + *resolved.truncateAt
            + "', so that output is never computed: remove the truncation point or the "
              "gradient grabs");
    return resolved;
}

std::shared_ptr<InstrumentedFunction> Engine::instrumented(const ResolvedRequest& request)
{
    const std::string key = request.cacheKey();
    auto it = cache_.find(key);
    if (it == cache_.end())
        it = cache_.emplace(key, instrument(model_->module(), request)).first;
    return it->second;
}

void Engine::prepare(const Request& request)
{
    instrumented(resolve(request));
}

RunResult Engine::run(
    const Request& request, const std::vector<c10::IValue>& inputs, const std::vector<at::Tensor>& editTensors)
{
    return execute(request, inputs, editTensors, false);
}

RunResult Engine::runWithGraph(const Request& request, const std::vector<c10::IValue>& inputs)
{
    return execute(request, inputs, {}, true);
}

RunResult Engine::execute(const Request& request, const std::vector<c10::IValue>& inputs,
    const std::vector<at::Tensor>& editTensors, bool keepGraph)
{
    CancelScope::check(); // a cancelled job stops before its next forward pass
    const ResolvedRequest resolved = resolve(request);
    const bool gradients = resolved.needsGradients() || request.inputGradient;
    if (keepGraph && gradients)
        throw Error("a run that keeps its graph takes no gradient grabs: the caller takes the gradients it needs");
    if (gradients && !request.targetClass)
        throw Error("gradients are of a class score: give the target class index (--target N)");

    size_t tensorEdits = 0;
    for (const auto& e : resolved.edits)
        tensorEdits += static_cast<size_t>(e.tensorCount());
    if (editTensors.size() != tensorEdits)
        throw Error("the edits need " + std::to_string(tensorEdits) + " tensor(s) (add/replace: 1, sae: 4), but "
            + std::to_string(editTensors.size()) + " were given");

    const auto instrumentedFunction = instrumented(resolved);
    const auto& schema = model_->module().get_method("forward").function().getSchema();
    const size_t expected = schema.arguments().size() - 1;
    if (inputs.size() > expected)
        throw Error("the model's " + model_->forwardSignature() + " takes " + std::to_string(expected)
            + " input(s), but " + std::to_string(inputs.size()) + " were given");

    const c10::Device device(model_->device());
    torch::jit::Stack stack{model_->module()._ivalue()};
    for (size_t i = 0; i < expected; ++i) {
        const auto& argument = schema.arguments()[i + 1];
        if (i < inputs.size()) {
            const auto value = toDevice(inputs[i], device);
            stack.push_back(gradients ? withGradient(value) : value);
        } else if (argument.default_value()) {
            stack.push_back(*argument.default_value());
        } else {
            throw Error("the model's " + model_->forwardSignature() + " needs argument '" + argument.name()
                + "', which was not given");
        }
    }
    // The input gradient is of the first input, or of the first image of a detector's List[Tensor].
    at::Tensor gradientInput;
    if (request.inputGradient && stack.size() >= 2) {
        if (stack[1].isTensor())
            gradientInput = stack[1].toTensor();
        else if (stack[1].isTensorList() && !stack[1].toTensorList().empty())
            gradientInput = stack[1].toTensorList().get(0);
    }
    if (request.inputGradient && (!gradientInput.defined() || !gradientInput.is_floating_point()))
        throw Error("an input gradient needs a floating-point tensor (or list of them) as the model's first input");
    const bool listInput = request.inputGradient && !stack[1].isTensor();
    for (const auto& t : editTensors)
        stack.push_back(t.to(device));

    RunResult result;
    result.warnings = instrumentedFunction->warnings;
    result.relevance = instrumentedFunction->relevance;
    result.warnings.insert(result.warnings.end(), resolved.notes.begin(), resolved.notes.end());
    std::vector<at::Tensor> gradientTaps;
    std::vector<std::string> gradientKeys;
    try {
        const torch::AutoGradMode gradMode(gradients || keepGraph);
        {
            const WarningCapture modelWarnings;
            instrumentedFunction->function->run(stack);
            for (const auto& message : modelWarnings.messages())
                result.warnings.push_back("the model warned: " + message);
        }
        const auto elements = stack.back().toTupleRef().elements();
        result.values.emplace_back("output", elements[0]);
        for (size_t s = 0; s < instrumentedFunction->slots.size(); ++s) {
            const auto& slot = instrumentedFunction->slots[s];
            const auto list = elements[s + 1].toList();
            if (list.empty() && !request.truncateAt)
                result.warnings.push_back("'" + slot.key + "' was not reached for this input");
            for (size_t call = 0; call < list.size(); ++call) {
                const c10::IValue value = list.get(call);
                if (slot.kind == CaptureKind::Gradient) {
                    gradientTaps.push_back(value.toTensor());
                    gradientKeys.push_back(callKey(slot, call));
                } else {
                    result.values.emplace_back(callKey(slot, call),
                        value.isTensor() && !keepGraph ? c10::IValue(value.toTensor().detach()) : value);
                }
            }
        }
        if (gradients) {
            const ScoreOutput scores = findScores(elements[0], request.scores);
            const TargetScore target
                = targetScore(scores, {*request.targetClass, request.targetRegion}, request.labels);
            result.target = target.description;
            result.targetIndex = target.index;
            if (request.inputGradient) {
                gradientTaps.push_back(gradientInput);
                gradientKeys.push_back("input:grad");
            }
            // A gradient grab whose module ran in a branch not taken has nothing to differentiate by
            // (its warning says so above); autograd refuses an empty list.
            const auto grads = gradientTaps.empty()
                ? std::vector<at::Tensor>{}
                : torch::autograd::grad({target.score}, gradientTaps, {}, false, false, true);
            for (size_t i = 0; i < grads.size(); ++i) {
                if (!grads[i].defined())
                    result.warnings.push_back("'" + gradientKeys[i]
                        + "' is zero: the target's score depends on it through nothing differentiable (a value "
                          "the score does not use, or one computed under torch.no_grad())");
                at::Tensor grad = grads[i].defined() ? grads[i] : at::zeros_like(gradientTaps[i]);
                if (listInput && gradientKeys[i] == "input:grad")
                    grad = grad.unsqueeze(0); // [1, C, H, W] like a batch's
                result.values.emplace_back(gradientKeys[i], grad);
            }
            result.values[0].second = detachedValue(elements[0]);
        }
    } catch (const Error&) {
        throw;
    } catch (const c10::Error& e) {
        throw Error("the model failed while running: " + torchErrorMessage(e.what_without_backtrace()));
    } catch (const std::exception& e) {
        // prim::RaiseException (assertions, raise) arrives as a plain std::runtime_error.
        throw Error("the model failed while running: " + torchErrorMessage(e.what()));
    }
    return result;
}

std::vector<c10::IValue> forwardInputsFromBatch(const Model& model, const at::Tensor& batch)
{
    const auto& arguments = model.forwardArguments();
    if (!arguments.empty() && arguments[0].type == "List[Tensor]") {
        c10::List<at::Tensor> images;
        if (batch.dim() == 4) {
            for (const auto& image : batch.unbind(0))
                images.push_back(image);
        } else {
            images.push_back(batch);
        }
        return {images};
    }
    return {batch};
}

namespace {

// Every module's output of one forward (to `truncateAt` when given), on the model as it is.
RunResult grabEveryModule(
    Model& model, const std::vector<c10::IValue>& inputs, const std::optional<std::string>& truncateAt = {})
{
    Engine engine(std::shared_ptr<Model>(&model, [](Model*) {}));
    Request request;
    request.grabs.push_back(GrabSpec::parse("*"));
    request.truncateAt = truncateAt;
    return engine.run(request, inputs);
}

} // namespace

std::vector<std::string> modulesCutAway(
    Model& model, const std::vector<c10::IValue>& inputs, const std::string& truncateAt)
{
    std::set<std::string> reached;
    for (const auto& [key, value] : grabEveryModule(model, inputs, truncateAt).values)
        reached.insert(CaptureKey::parse(key).path);
    std::vector<std::string> cut;
    for (const auto& module : model.modules()) {
        const bool ancestor = module.path.empty() || startsWith(truncateAt, module.path + ".");
        if (!ancestor && module.called && !module.outputShapes.empty() && !reached.count(module.path))
            cut.push_back(module.path);
    }
    return cut;
}

void dryRun(Model& model, const std::vector<c10::IValue>& inputs)
{
    const RunResult result = grabEveryModule(model, inputs);
    std::map<std::string, std::vector<std::vector<int64_t>>> shapes;
    for (const auto& [key, value] : result.values) {
        if (key == "output")
            continue;
        shapes[CaptureKey::parse(key).path].push_back(
            value.isTensor() ? value.toTensor().sizes().vec() : std::vector<int64_t>{});
    }
    for (auto& [path, list] : shapes)
        model.setOutputShapes(path, std::move(list));
}

} // namespace torchscope
