#pragma once

#include "probe/probe_training.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace torchscope {

// A trained linear probe together with what it was trained on: the layer whose output it reads,
// how that output is pooled and the names of its classes.
struct LinearProbe {
    std::string layer;
    ProbePooling pooling = ProbePooling::Average;
    std::vector<std::string> classNames;
    ProbeTrainingResult training;
};

// An extension model attached to a layer (hybrid_learning's ModelExtender): a TorchScript module
// that takes the layer's output and returns scores. A LinearProbe becomes one; a user's own
// TorchScript module is one as it is (layer and class names unknown until registered).
struct ProbeExtension {
    std::string layer; // "" when the file does not say
    std::vector<std::string> classNames;
    std::shared_ptr<torch::jit::Module> module;
    std::string pooling; // a LinearProbe's ("avg", "flatten"); "" for a module of unknown pooling
};

// The probe as a TorchScript module: forward(activations [N, C, ...] or features [N, F]) ->
// scores [N, 1] (two classes: the logit of the second) or [N, K]. Pooling and standardisation
// are inside, so Python runs it on the layer's raw output.
ProbeExtension toExtension(const LinearProbe& probe);

// One sample's class probabilities from a probe's scores: [1] is the logit of the second of two
// classes (logistic regression), [K] a softmax's logits.
// A linear probe's weights from either file above (its state dict or the TorchScript module
// saveProbeModule writes). Throws torchscope::Error saying what the file is when it holds no
// linear probe.
LinearProbe loadLinearProbe(const std::string& path);

std::vector<double> probeProbabilities(const at::Tensor& scores);

// TorchScript .pt for torch.jit.load, with a torchscope_probe.json extra file (layer, classes,
// pooling) that loadProbeExtension reads back. Atomic. Throws torchscope::Error.
void saveProbeModule(const std::string& path, const LinearProbe& probe);
// A dictionary for torch.load: weight, bias, feature_mean, feature_std (tensors), layer, pooling,
// classes. Atomic.
void saveProbeStateDict(const std::string& path, const LinearProbe& probe);

// Reads either file above, or any TorchScript module (an extension of unknown layer). Throws
// torchscope::Error saying what the file is when it is neither.
ProbeExtension loadProbeExtension(const std::string& path);

} // namespace torchscope
