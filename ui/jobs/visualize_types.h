#pragma once

// What a channel page asks of its feature-visualisation job (core/visualize) and gets back; cancel
// keeps the image so far. No Torch.

#include "preprocess/preprocessing.h"
#include "visualize/visualization.h"

#include <QImage>
#include <QStringList>

#include <string>
#include <vector>

namespace torchscope {

struct VisualizeRequest {
    std::string model;
    std::string device = "cpu";
    Preprocessing preprocessing;
    VisualizeConfig config; // one objective
    std::vector<std::string> topImages; // also the channel's map over each of these images
    bool mapsOnly = false; // only the maps over the top images (the image is known)
    // The key an optimised image is cached under: the model, its device, input setup and every
    // setting (not the top images: their maps are quick and depend on the recording).
    std::string cacheKey() const;
};

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

} // namespace torchscope

Q_DECLARE_METATYPE(torchscope::VisualizeJobResult)
