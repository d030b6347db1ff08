#pragma once

#include <QStringList>

class QMimeData;

namespace torchscope {

// What a drop or an Open dialog brings: model files (.pt, .pth), image files and folders.
struct DroppedFiles {
    QStringList models;
    QStringList images; // folders expanded to the images in them, sorted
    QStringList sessions;
    QStringList refused; // neither
};

bool isImageFileName(const QString& path);
DroppedFiles classifyFiles(const QStringList& paths);
// Whether a drag carries anything TorchScope opens (so the cursor tells the truth).
bool acceptsDrop(const QMimeData* mime);
// Why classifyFiles refused a path, naming what the file is ("this is a GIF image, which ...").
QString whyRefused(const QString& path);
QStringList localFiles(const QMimeData* mime);

} // namespace torchscope
