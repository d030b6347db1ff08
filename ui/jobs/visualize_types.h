#pragma once

// What a channel page asks of its feature-visualisation job (core/visualize) and gets back; cancel
// keeps the image so far. No Torch.

#include "preprocess/preprocessing.h"
#include "visualize/channel_visualization.h"
#include "visualize/visualization.h"

#include <QImage>
#include <QStringList>

#include <string>
#include <vector>

namespace torchscope {

// A channel's page as the window shows it: core's ChannelVisualization with its images drawn.
struct VisualizeJobResult {
    std::string key; // the request's cacheKey()
    bool mapsOnly = false; // only topMaps is set
    QImage image; // the optimised image, RGB
    double value = 0.0; // its objective, untransformed
    QStringList warnings;
    bool cancelled = false;
    int steps = 0;
    std::vector<QImage> topMaps; // per top image: the channel's map over it (null when it failed)
    float mapLow = 0.f; // the values at the bottom and top of the maps' one scale
    float mapHigh = 0.f;
};

// The pictures drawn: the optimised image, each top image with the channel's map over it.
VisualizeJobResult drawnVisualization(const ChannelVisualization& result);

} // namespace torchscope

Q_DECLARE_METATYPE(torchscope::VisualizeJobResult)
