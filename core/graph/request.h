#pragma once

#include "relevance/relevance_rules.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

// Attention: the probabilities [N, heads, queries, keys] of the attention the module computes
// (graph/attention_taps.h), worked out beside the model's own (possibly fused) kernel.
enum class CaptureKind { Output, Input, Gradient, Attention };

// One --grab: a selector (path, glob "layer3.*", or "type:Conv2d") and what to take from it.
struct GrabSpec {
    std::string selector;
    CaptureKind kind = CaptureKind::Output;
    int inputIndex = 0; // for CaptureKind::Input

    // "layer1", "layer1:in0", "layer1:grad", "blocks.0.attn:attention", "type:Conv2d:in1".
    // Throws torchscope::Error.
    static GrabSpec parse(const std::string& text);
    std::string suffix() const; // "", ":in0", ":grad", ":attention"
};

// The key a grabbed value goes by in results and files: PATH, PATH:in0, PATH:grad, and "#N" after
// it for the module's later calls (PATH#1, PATH:in0#1). "output" and "probe:NAME" parse as paths of
// their own; "input:grad" as the gradient of "input".
struct CaptureKey {
    std::string path;
    CaptureKind kind = CaptureKind::Output;
    int inputIndex = 0; // for CaptureKind::Input
    int call = 0; // 0: the first call

    // Never throws: a key that is not PATH[:inN|:grad|:attention][#N] is a path of its own.
    static CaptureKey parse(const std::string& key);
    std::string format() const;
    std::string grab() const; // the grab spec that asks for it: the key without "#N"
};

enum class EditKind {
    ZeroChannels, // channels along dim 1 set to 0
    ScaleChannels, // channels along dim 1 multiplied by factor
    Add, // a tensor added (broadcast)
    Replace, // the output replaced by a tensor (activation patching)
    SaeLatents // a sparse autoencoder's latents edited, its error term kept (sae/sae_splice.h)
};

// nethook's edit_output: changes a module's output before the rest of the network sees it.
// Applies to every call of the module. Add and Replace take the tensor given with the run.
// SaeLatents splices a sparse autoencoder in at the module: its vectors x (sae/sae_training.h's
// positions) become x + (f' − f) W_dec, f the SAE's codes of x and f' those codes with `channels`
// (latents) ablated, scaled by `factor` or steered (factor added): the reconstruction with the edit
// plus the SAE's error term, so an edit that changes no code changes nothing. It takes the SAE's
// four tensors (W_enc, b_enc, W_dec, b_dec) with the run; sae/sae_splice.h's prepareSaeEdit reads
// the SAE and fills the fields below `sae`.
struct EditSpec {
    std::string path;
    EditKind kind = EditKind::ZeroChannels;
    std::vector<int64_t> channels;
    double factor = 1.0;
    // SaeLatents
    std::string sae; // the SAE's folder
    std::string latentOp; // "ablate", "scale", "steer"
    int64_t saeK = 0; // TopK's k; 0: BatchTopK's threshold
    double saeThreshold = 0.0;
    std::string positions = "all"; // the SAE's positions: all, class, patches (sample:N splices all)
    int64_t prefixTokens = 1; // tokens before a ViT's patch grid

    // "layer2:zero:0,5,7", "layer3:scale:1,2:2.5", "layer1:add", "layer3:replace",
    // "layer3:sae:DIR:ablate:5,9", "layer3:sae:DIR:scale:5:2", "layer3:sae:DIR:steer:5:4".
    static EditSpec parse(const std::string& text);
    // An edit of `kind` at `path` (Replace: the tensor given with the run; zero / scale: `channels`).
    static EditSpec make(
        const std::string& path, EditKind kind, std::vector<int64_t> channels = {}, double factor = 1.0)
    {
        EditSpec spec;
        spec.path = path;
        spec.kind = kind;
        spec.channels = std::move(channels);
        spec.factor = factor;
        return spec;
    }
    // The tensors it takes with the run: 1 for Add and Replace, 4 for SaeLatents.
    int tensorCount() const
    {
        return kind == EditKind::SaeLatents ? 4 : kind == EditKind::Add || kind == EditKind::Replace ? 1 : 0;
    }
    bool takesTensor() const { return tensorCount() > 0; }
    std::string toString() const;
    std::string cacheKey() const; // toString and what prepareSaeEdit filled in
};

struct Request {
    std::vector<GrabSpec> grabs;
    std::optional<std::string> truncateAt;
    std::vector<EditSpec> edits;
    // Gradients are of a score in the model's output (graph/model_output.h): for class scores
    // output[:, targetClass].sum() over the batch, for segmentation the class's score summed over
    // its pixels (or targetRegion), for detection the score of detection number targetClass. A
    // negative value takes the predicted class (the highest score summed over the batch) or the top
    // detection.
    std::optional<int64_t> targetClass;
    std::optional<std::array<int64_t, 4>> targetRegion; // x0, y0, x1, y1 in output pixels
    // Which element of a tuple, namedtuple or dict output holds the scores ("" finds it).
    std::string scores;
    std::vector<std::string> labels; // class names for RunResult::target ("class 3 (cat)")
    // Also the gradient of that score with respect to the first input ("input:grad"): saliency.
    bool inputGradient = false;
    // Attention grabs then route the module's result through the probabilities they return
    // (scaled_dot_product_attention's output becomes probabilities @ v, as the math kernel
    // computes it), so that gradients reach them: LeGrad. The output may differ in the last bits.
    bool attentionInPath = false;
    // The forward rewritten for Layer-wise Relevance Propagation (relevance/relevance_graph.h): the
    // gradients are then relevances, the input gradient the input's relevance for a seed of 1.
    std::optional<RelevanceSettings> relevance;
    // Output grabs are then the very values the rest of the network is computed from (it goes on
    // from a copy where it would write in place), so that a run that keeps its graph can
    // differentiate the output by them (CRP's relevance at a layer).
    bool grabsOnPath = false;

    // Adds a grab of the module's output, unless one is there already.
    void grabOutput(const std::string& path);
};

} // namespace torchscope
