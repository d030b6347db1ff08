#pragma once

// Concept Relevance Propagation (Achtibat et al., Nature Machine Intelligence 2023), as zennit-crp
// defines it: for an image, a layer and a class, each channel's relevance at the layer (its LRP
// relevance summed over the layer's positions) and its share (divided by the channels' summed
// magnitudes, zennit-crp's abs_norm); for chosen channels the conditional heat map (the relevance
// at the layer masked to that channel, propagated on to the input: CondAttribution); and over a
// folder the images in which each channel is most relevant (RelMax) or most active (ActMax), with
// the position where it peaks (FeatureVisualization's reference sampling, max_target "sum").
//
// One forward of the rewritten graph (relevance/relevance_graph.h) per batch, one backward to the
// layer and on to the input, and one backward from the layer per conditioned channel: the rules'
// ratios are fixed in the forward, so relevance is linear in what starts the backward, and masking
// it at the layer is CRP's condition. Channels are dim 1 ([N, C, ...], [N, C]); a vision
// transformer's tokens [N, T, D] have theirs last, the tokens as positions. Torch-free header.

#include "common/float_tensor.h"
#include "common/parameters.h"
#include "common/progress.h"
#include "graph/analysis_context.h"
#include "model/model_setup.h"
#include "relevance/relevance_rules.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace torchscope {

class Engine;
struct ExportManifest;

// Which channels get a conditional map: each image's `top` most relevant (by share), or a list.
struct ChannelChoice {
    int64_t top = 8;
    std::vector<int64_t> channels; // when not empty, these, for every image
    // "top:8" or "1,5,9"; throws torchscope::Error.
    static ChannelChoice parse(const std::string& text);
    std::string toString() const;
};

const std::vector<std::string>& referenceModes(); // "relevance" (RelMax), "activation" (ActMax)

struct ConceptRelevanceRequest {
    std::vector<std::string> images;
    ModelSetup setup; // preprocessing, the scores element, the labels
    std::string layer; // a module path
    int64_t targetClass = -1; // -1: each image's prediction
    ChannelChoice channels;
    std::string composite = "epsilon_plus_flat"; // LRP's rules, as attribute's lrp takes them
    std::vector<std::string> relevanceRules; // PATH=RULE overrides
    std::string attentionRule = "cp";
    // References: the folder's images ranked per chosen channel ("" : none). Their class is
    // targetClass, else the image's label (a class folder), else its prediction.
    std::string referenceFolder;
    int top = 9; // references per channel
    std::string referenceBy = "relevance"; // referenceModes()
    int64_t memoryMb = 0; // what one batch may take; 0: a quarter of the memory available (defaultMemoryBudget)
    // What one evaluated input costs; 0: from the output shapes the model's tree records
    // (recordedBytesPerSample), from a dry run on the first image where it records none.
    int64_t bytesPerSample = 0;

    // Its parameters, once (common/parameters.h): the CLI's options, the manifest's settings. The
    // images and the setup are the front end's (--input, the model's setup).
    void visit(ParameterVisitor& v);
};

struct CrpChannel {
    int64_t channel = 0;
    double relevance = 0.0; // at the layer, summed over its positions, for the explained logit
    double share = 0.0; // relevance / Σ|relevance| over the layer's channels
    FloatTensor map; // [H, W]: its conditional relevance at the input, summed over the input's channels
    double mapSum = 0.0; // what of it reaches the input (its relevance, where the rules conserve)
};

struct CrpImage {
    std::string image;
    int64_t target = -1;
    std::string targetDescription;
    double score = 0.0; // the explained logit
    FloatTensor picture; // [H, W, 3] in [0, 1]: the input as the model saw it
    std::vector<double> relevance, shares; // every channel's, in channel order
    std::vector<CrpChannel> channels; // the chosen ones; for top:k the most relevant first
    FloatTensor map; // [H, W]: the image's whole LRP map
    double layerSum = 0.0, inputSum = 0.0; // the conservation readout: relevance at the layer, at the input
};

struct CrpReference {
    std::string image;
    int64_t sample = 0; // its place in the folder's image list
    int64_t target = -1; // the class its relevance is for (-1: by activation)
    double value = 0.0; // the channel's share of the image's relevance (or of its activation)
    int64_t position = 0; // where at the layer the channel peaks (row-major over h x w, or the token)
    std::array<int64_t, 4> box{-1, -1, -1, -1}; // x0, y0, x1, y1: that position's cell in input pixels
};

struct CrpChannelReferences {
    int64_t channel = 0;
    std::vector<CrpReference> references; // highest first
};

struct ConceptRelevanceResult {
    std::string layer;
    std::vector<int64_t> layerShape; // one image's value at the layer
    bool tokens = false; // [T, D] tokens: channels are D
    int64_t channelCount = 0;
    std::vector<CrpImage> images; // in request order, without those that failed
    std::vector<std::pair<std::string, std::string>> failures; // image, why
    std::string referenceFolder, referenceBy;
    int64_t referenceImages = 0; // run through the model
    std::vector<CrpChannelReferences> references; // per chosen channel (every image's, in order)
    std::map<int64_t, FloatTensor> referencePictures; // sample -> [H, W, 3] in [0, 1], as the model saw it
    RelevanceCoverage coverage;
    std::vector<std::string> warnings;
    bool cancelled = false; // what finished is kept
};

// One image's part of the result, handed to the window as soon as it is done.
struct CrpImageResult {
    size_t index = 0; // its place in the result's images
    CrpImage image;
};

struct ConceptRelevanceReports {
    ProgressCallback progress; // "images", then "references"; returning false cancels
    std::function<bool()> cancelled;
    std::function<void(size_t index, const CrpImage&)> onImage; // each image as it is done
};

// Throws torchscope::Error for a model without class scores, a layer without channels, a channel
// out of range, a wrong rule or composite.
ConceptRelevanceResult computeConceptRelevance(
    Engine& engine, const ConceptRelevanceRequest& request, const ConceptRelevanceReports& reports = {});

// The analysis "crp": computeConceptRelevance on the context's model.
struct ConceptRelevanceAnalysis {
    using Request = ConceptRelevanceRequest;
    using Result = ConceptRelevanceResult;
    static constexpr const char* name = "crp";
    static Result run(AnalysisContext& context, const Request& request);
};

// FILE.json: every figure and the reference list. FILE.pt / .npz / .safetensors: "relevance" and
// "shares" [N, C], "channels" [N, K], "maps" [N, K, H, W], "lrp" [N, H, W], "targets", "scores",
// and per referenced channel "references:C" (folder positions) and "reference_values:C", with the
// manifest beside. Written to a temporary file and renamed. Returns the keys the format left out.
std::vector<std::string> writeConceptRelevance(
    const std::string& path, const ConceptRelevanceResult& result, const ExportManifest* manifest = nullptr);

} // namespace torchscope
