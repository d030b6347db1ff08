#pragma once

// Core's CaptureKey for the QString keys the views pass around.

#include "graph/request.h"

#include <QString>

namespace torchscope {

inline CaptureKey captureKey(const QString& key)
{
    return CaptureKey::parse(key.toStdString());
}

inline bool isGradientKey(const QString& key)
{
    return captureKey(key).kind == CaptureKind::Gradient;
}

// The module whose output `key` is ("layer1#1" -> "layer1"); "" for inputs, gradients, "output".
inline QString outputModule(const QString& key)
{
    const CaptureKey capture = captureKey(key);
    if (capture.kind != CaptureKind::Output || key == "output" || capture.path.find(':') != std::string::npos)
        return {};
    return QString::fromStdString(capture.path);
}

// The grab spec that asks for `key`: the key without its call number ("layer1:in0#2" -> "layer1:in0").
inline QString grabOf(const QString& key)
{
    return QString::fromStdString(captureKey(key).grab());
}

} // namespace torchscope
