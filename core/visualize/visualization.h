#pragma once

// What to visualise and how (activation maximisation, Olah, Mordvintsev and Schubert, "Feature
// Visualization", Distill 2017): plain types without Torch, so the window's headers hold them.

#include <cstdint>
#include <string>
#include <vector>

namespace torchscope {

// How the optimised image is stored. Fft: a spectrum whose frequencies are scaled down by 1/f
// (so the optimiser moves every frequency equally), Pixel: the pixels themselves. Either way the
// colours are decorrelated (ImageNet's colour covariance) before a sigmoid brings them to [0, 1].
enum class Parameterization { Fft, Pixel };

enum class ObjectiveKind {
    Channel, // a channel's mean over positions (a feature of [N, F] outputs)
    Neuron, // a channel at one position
    Direction, // the dot product with a vector in channel space, averaged over positions
    Probe // a probe's score for one of its classes, on the layer's output
};

struct Objective {
    ObjectiveKind kind = ObjectiveKind::Channel;
    int64_t channel = 0; // Channel, Neuron; Probe: the class
    int64_t y = -1, x = -1; // Neuron: the position; -1: the centre
    std::vector<double> direction; // Direction: one value per channel
    std::string probePath; // Probe: a probe file (probe/linear_probe.h)
    bool negative = false; // minimise instead

    // "channel 12", "neuron 12 at (3, 4)", "direction (256 channels)", "probe stripes.pt class 1",
    // with "−" before it when negative.
    std::string describe() const;

    bool operator==(const Objective& other) const;
};

// Random changes each step, so the image must excite the unit whatever its exact position, size
// and angle (the article's transformation robustness). Drawn from the run's seed.
struct RobustnessTransforms {
    int jitter = 8; // pixels, each way
    double scaleMin = 0.9;
    double scaleMax = 1.1;
    double rotateDegrees = 10.0; // each way
    bool enabled = true;
};

struct VisualizeConfig {
    std::string layer; // a module path
    std::vector<Objective> objectives; // one image each
    int steps = 512;
    int size = 0; // the image's side; 0: the model's input size from its setup
    Parameterization parameterization = Parameterization::Fft;
    bool decorrelate = true; // colour decorrelation (3-channel images)
    double learningRate = 0.05; // Adam
    double diversity = 0.0; // weight of the diversity term between images of one objective
    int64_t seed = 0;
    RobustnessTransforms transforms;

    // Throws torchscope::Error naming the bad value (steps, size, rates, ranges, objectives).
    void check() const;
    // A key for caches: every setting that changes the image.
    std::string cacheKey() const;
};

Parameterization parseParameterization(const std::string& text); // "fft", "pixel"; throws
std::string parameterizationName(Parameterization parameterization);

} // namespace torchscope
