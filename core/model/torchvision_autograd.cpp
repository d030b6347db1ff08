#include "model/torchvision_autograd.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <mutex>
#include <set>
#include <string>

namespace torchscope {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::Variable;
using torch::autograd::variable_list;

c10::OperatorHandle torchvisionOp(const char* name)
{
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

// As torchvision's _roi_align_setup_context / _roi_align_backward: the gradient of the input
// from the rois and the input's shape; none for the rois and the parameters.
class RoiAlign : public torch::autograd::Function<RoiAlign> {
public:
    static variable_list forward(AutogradContext* ctx, const Variable& input, const Variable& rois, double scale,
        int64_t height, int64_t width, int64_t samplingRatio, bool aligned)
    {
        ctx->saved_data["scale"] = scale;
        ctx->saved_data["height"] = height;
        ctx->saved_data["width"] = width;
        ctx->saved_data["sampling_ratio"] = samplingRatio;
        ctx->saved_data["aligned"] = aligned;
        ctx->saved_data["input_shape"] = input.sizes();
        ctx->save_for_backward({rois});
        const at::AutoDispatchBelowADInplaceOrView below;
        static const auto op = torchvisionOp("torchvision::roi_align")
                                   .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, c10::SymInt,
                                       c10::SymInt, int64_t, bool)>();
        return {op.call(input, rois, scale, c10::SymInt(height), c10::SymInt(width), samplingRatio, aligned)};
    }

    static variable_list backward(AutogradContext* ctx, const variable_list& gradOutput)
    {
        const auto rois = ctx->get_saved_variables()[0];
        const auto shape = ctx->saved_data["input_shape"].toIntVector();
        static const auto op
            = torchvisionOp("torchvision::_roi_align_backward")
                  .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double, c10::SymInt, c10::SymInt, c10::SymInt,
                      c10::SymInt, c10::SymInt, c10::SymInt, int64_t, bool)>();
        const auto gradInput = op.call(gradOutput[0], rois, ctx->saved_data["scale"].toDouble(),
            c10::SymInt(ctx->saved_data["height"].toInt()), c10::SymInt(ctx->saved_data["width"].toInt()),
            c10::SymInt(shape[0]), c10::SymInt(shape[1]), c10::SymInt(shape[2]), c10::SymInt(shape[3]),
            ctx->saved_data["sampling_ratio"].toInt(), ctx->saved_data["aligned"].toBool());
        return {gradInput, Variable(), Variable(), Variable(), Variable(), Variable(), Variable()};
    }
};

at::Tensor roiAlignWithGradient(const at::Tensor& input, const at::Tensor& rois, double scale, c10::SymInt height,
    c10::SymInt width, int64_t samplingRatio, bool aligned)
{
    return RoiAlign::apply(input, rois, scale, height.expect_int(), width.expect_int(), samplingRatio, aligned)[0];
}

// As torchvision's _roi_pool_setup_context / _roi_pool_backward: the argmax of the forward picks
// where each pooled gradient goes.
class RoiPool : public torch::autograd::Function<RoiPool> {
public:
    static variable_list forward(
        AutogradContext* ctx, const Variable& input, const Variable& rois, double scale, int64_t height, int64_t width)
    {
        ctx->saved_data["scale"] = scale;
        ctx->saved_data["height"] = height;
        ctx->saved_data["width"] = width;
        ctx->saved_data["input_shape"] = input.sizes();
        const at::AutoDispatchBelowADInplaceOrView below;
        static const auto op = torchvisionOp("torchvision::roi_pool")
                                   .typed<std::tuple<at::Tensor, at::Tensor>(
                                       const at::Tensor&, const at::Tensor&, double, c10::SymInt, c10::SymInt)>();
        auto [pooled, argmax] = op.call(input, rois, scale, c10::SymInt(height), c10::SymInt(width));
        ctx->save_for_backward({rois, argmax});
        ctx->mark_non_differentiable({argmax});
        return {pooled, argmax};
    }

    static variable_list backward(AutogradContext* ctx, const variable_list& gradOutput)
    {
        const auto saved = ctx->get_saved_variables();
        const auto shape = ctx->saved_data["input_shape"].toIntVector();
        static const auto op = torchvisionOp("torchvision::_roi_pool_backward")
                                   .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, double,
                                       c10::SymInt, c10::SymInt, c10::SymInt, c10::SymInt, c10::SymInt, c10::SymInt)>();
        const auto gradInput = op.call(gradOutput[0], saved[0], saved[1], ctx->saved_data["scale"].toDouble(),
            c10::SymInt(ctx->saved_data["height"].toInt()), c10::SymInt(ctx->saved_data["width"].toInt()),
            c10::SymInt(shape[0]), c10::SymInt(shape[1]), c10::SymInt(shape[2]), c10::SymInt(shape[3]));
        return {gradInput, Variable(), Variable(), Variable(), Variable()};
    }
};

std::tuple<at::Tensor, at::Tensor> roiPoolWithGradient(
    const at::Tensor& input, const at::Tensor& rois, double scale, c10::SymInt height, c10::SymInt width)
{
    const auto result = RoiPool::apply(input, rois, scale, height.expect_int(), width.expect_int());
    return {result[0], result[1]};
}

// Loaded, and without a backward of its own (an older torchvision's _C.so registered one in C++).
bool needsBackward(const char* name)
{
    const auto op = c10::Dispatcher::singleton().findSchema({name, ""});
    return op && !op->hasKernelForDispatchKey(c10::DispatchKey::Autograd)
        && !op->hasKernelForDispatchKey(c10::DispatchKey::AutogradCPU);
}

} // namespace

void registerTorchvisionAutograd()
{
    static std::mutex mutex;
    static std::set<std::string> registered;
    // Registrations live as long as their Library: for the whole process.
    static torch::Library* library = nullptr;
    const std::lock_guard<std::mutex> lock(mutex);
    const auto add = [&](const char* op, const char* backward, auto kernel) {
        if (registered.count(op) || !needsBackward(op) || !c10::Dispatcher::singleton().findSchema({backward, ""}))
            return;
        if (!library)
            library = new torch::Library(
                torch::Library::IMPL, "torchvision", c10::DispatchKey::Autograd, __FILE__, __LINE__);
        library->impl(std::string(op).substr(std::string("torchvision::").size()).c_str(), kernel);
        registered.insert(op);
    };
    add("torchvision::roi_align", "torchvision::_roi_align_backward", TORCH_FN(roiAlignWithGradient));
    add("torchvision::roi_pool", "torchvision::_roi_pool_backward", TORCH_FN(roiPoolWithGradient));
}

} // namespace torchscope
