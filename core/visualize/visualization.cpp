#include "visualize/visualization.h"

#include "common/error.h"

#include <cmath>
#include <sstream>

namespace torchscope {

bool Objective::operator==(const Objective& other) const
{
    return kind == other.kind && channel == other.channel && y == other.y && x == other.x
        && direction == other.direction && probePath == other.probePath && negative == other.negative;
}

std::string Objective::describe() const
{
    std::string text;
    switch (kind) {
    case ObjectiveKind::Channel:
        text = "channel " + std::to_string(channel);
        break;
    case ObjectiveKind::Neuron:
        text = "neuron " + std::to_string(channel)
            + (y < 0 ? std::string(" at the centre") : " at (" + std::to_string(y) + ", " + std::to_string(x) + ")");
        break;
    case ObjectiveKind::Direction:
        text = "direction (" + std::to_string(direction.size()) + " channels)";
        break;
    case ObjectiveKind::Probe:
        text = "probe " + probePath + " class " + std::to_string(channel);
        break;
    }
    return negative ? "−" + text : text;
}

void VisualizeConfig::check() const
{
    if (layer.empty())
        throw Error("visualising needs a layer (a module path)");
    if (objectives.empty())
        throw Error("visualising needs at least one objective (a channel, neuron, direction or probe)");
    if (steps < 1 || steps > 100000)
        throw Error("steps must be 1 to 100000, not " + std::to_string(steps));
    if (size != 0 && (size < 8 || size > 2048))
        throw Error("the image size must be 8 to 2048 pixels, not " + std::to_string(size));
    if (!(learningRate > 0.0 && learningRate <= 10.0))
        throw Error("the learning rate must be in (0, 10], not " + std::to_string(learningRate));
    if (!std::isfinite(diversity) || diversity < 0.0)
        throw Error("the diversity weight must be 0 or more, not " + std::to_string(diversity));
    const RobustnessTransforms& t = transforms;
    if (t.jitter < 0 || t.jitter > 256)
        throw Error("jitter must be 0 to 256 pixels, not " + std::to_string(t.jitter));
    if (!(t.scaleMin > 0.0 && t.scaleMin <= t.scaleMax && t.scaleMax <= 10.0))
        throw Error("the scale range must satisfy 0 < min <= max <= 10, not " + std::to_string(t.scaleMin) + " to "
            + std::to_string(t.scaleMax));
    if (!(t.rotateDegrees >= 0.0 && t.rotateDegrees <= 180.0))
        throw Error("rotation must be 0 to 180 degrees, not " + std::to_string(t.rotateDegrees));
    for (const auto& o : objectives) {
        if (o.kind != ObjectiveKind::Direction && o.channel < 0)
            throw Error("a channel or class is 0 or more, not " + std::to_string(o.channel));
        if (o.kind == ObjectiveKind::Direction && o.direction.empty())
            throw Error("a direction objective needs its vector");
        if (o.kind == ObjectiveKind::Probe && o.probePath.empty())
            throw Error("a probe objective needs the probe's file");
        for (double v : o.direction)
            if (!std::isfinite(v))
                throw Error("the direction has a value that is not finite");
    }
}

std::string VisualizeConfig::cacheKey() const
{
    std::ostringstream key;
    key.precision(17);
    key << layer << '|' << steps << '|' << size << '|' << parameterizationName(parameterization) << '|' << decorrelate
        << '|' << learningRate << '|' << diversity << '|' << seed << '|' << transforms.enabled << ','
        << transforms.jitter << ',' << transforms.scaleMin << ',' << transforms.scaleMax << ','
        << transforms.rotateDegrees;
    for (const auto& o : objectives) {
        key << '|' << static_cast<int>(o.kind) << ',' << o.channel << ',' << o.y << ',' << o.x << ',' << o.negative
            << ',' << o.probePath;
        for (double v : o.direction)
            key << ',' << v;
    }
    return key.str();
}

Parameterization parseParameterization(const std::string& text)
{
    if (text == "fft")
        return Parameterization::Fft;
    if (text == "pixel")
        return Parameterization::Pixel;
    throw Error("an image parameterisation is 'fft' or 'pixel', not '" + text + "'");
}

std::string parameterizationName(Parameterization parameterization)
{
    return parameterization == Parameterization::Fft ? "fft" : "pixel";
}

} // namespace torchscope
