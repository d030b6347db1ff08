#include "attribution/attribution_names.h"

namespace torchscope {

const std::vector<NamedChoice>& attributionMethodChoices()
{
    static const std::vector<NamedChoice> methods{
        {"saliency", "|d score / d input|", "saliency", true, false, 0},
        {"input_x_gradient", "input × gradient", "input × gradient", false, false, 0},
        {"integrated_gradients", "Integrated Gradients (Captum's rules)", "Integrated Gradients", true, false, 0},
        {"smoothgrad", "SmoothGrad: the gradient over noisy copies", "SmoothGrad", false, false, 0},
        {"smoothgrad_sq", "SmoothGrad²", "SmoothGrad²", false, false, 0},
        {"vargrad", "VarGrad: the gradient's variance over noisy copies", "VarGrad", false, false, 0},
        {"occlusion", "Occlusion: the score drop under an 8 px square", "occlusion", false, false, 0},
        {"lrp", "Layer-wise Relevance Propagation (a composite of Zennit's rules)", "LRP", false, false, 0},
        {"grad_cam", "Grad-CAM at the layer", "Grad-CAM", true, true, 0},
        {"grad_cam_pp", "Grad-CAM++", "Grad-CAM++", false, true, 0},
        {"hires_cam", "HiResCAM", "HiResCAM", false, true, 0},
        {"xgrad_cam", "XGrad-CAM", "XGrad-CAM", false, true, 0},
        {"layer_cam", "LayerCAM", "LayerCAM", false, true, 0},
        {"score_cam", "Score-CAM (one masked input per channel)", "Score-CAM", false, true, 0},
        {"eigen_cam", "EigenCAM: no gradient", "EigenCAM", false, true, 0},
    };
    return methods;
}

const std::vector<NamedChoice>& faithfulnessMetricChoices()
{
    static const std::vector<NamedChoice> metrics{
        {"deletion", "deletion AUC (lower: the map finds what matters)", "deletion AUC", true, false, -1},
        {"insertion", "insertion AUC (higher is better)", "insertion AUC", true, false, +1},
        {"road_morf", "ROAD, most relevant removed first (lower is better)", "ROAD MoRF", false, false, -1},
        {"road_lerf", "ROAD, least relevant removed first (higher is better)", "ROAD LeRF", false, false, +1},
        {"average_drop", "Average Drop in % (lower is better)", "avg drop %", true, false, -1},
        {"increase_confidence", "Increase in Confidence in % (higher is better)", "incr. conf. %", false, false, +1},
    };
    return metrics;
}

std::vector<std::string> namesOf(const std::vector<NamedChoice>& choices)
{
    std::vector<std::string> names;
    for (const auto& choice : choices)
        names.push_back(choice.name);
    return names;
}

const NamedChoice* findChoice(const std::vector<NamedChoice>& choices, const std::string& name)
{
    for (const auto& choice : choices)
        if (choice.name == name)
            return &choice;
    return nullptr;
}

} // namespace torchscope
