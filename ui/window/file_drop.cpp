#include "window/file_drop.h"

#include "model/file_diagnosis.h"

#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QMimeData>
#include <QObject>
#include <QUrl>

namespace torchscope {

bool isImageFileName(const QString& path)
{
    static const QStringList suffixes{"png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp", "pgm", "ppm", "pnm"};
    return suffixes.contains(QFileInfo(path).suffix().toLower());
}

DroppedFiles classifyFiles(const QStringList& paths)
{
    DroppedFiles files;
    for (const auto& path : paths) {
        const QFileInfo info(path);
        if (info.isDir()) {
            QStringList found;
            QDirIterator it(path, QDir::Files, QDirIterator::Subdirectories);
            while (it.hasNext()) {
                const QString file = it.next();
                if (isImageFileName(file))
                    found << file;
            }
            found.sort();
            if (found.isEmpty())
                files.refused << path;
            files.images << found;
        } else if (info.suffix() == "pt" || info.suffix() == "pth" || info.suffix() == "pt2") {
            files.models << path;
        } else if (info.suffix() == "json" && info.completeBaseName().endsWith(".torchscope")) {
            files.sessions << path;
        } else if (isImageFileName(path)) {
            files.images << path;
        } else {
            files.refused << path;
        }
    }
    return files;
}

QString whyRefused(const QString& path)
{
    const QFileInfo info(path);
    if (!info.exists())
        return QObject::tr("no such file or folder");
    if (info.isDir())
        return QObject::tr("the folder holds no images (.png, .jpg, .bmp, .tif, .webp, .pgm, .ppm)");
    QFile file(path);
    const std::string start = file.open(QIODevice::ReadOnly) ? file.read(64).toStdString() : std::string();
    if (const std::string image = describeImageStart(start); !image.empty())
        return QObject::tr("this is %1, which TorchScope cannot read; convert it to PNG")
            .arg(QString::fromStdString(image));
    return QObject::tr(
        "this is %1, not a model (.pt, .pt2), an image, a folder of images or a session (.torchscope.json)")
        .arg(QString::fromStdString(describeFileStart(start)));
}

QStringList localFiles(const QMimeData* mime)
{
    QStringList paths;
    if (mime && mime->hasUrls())
        for (const auto& url : mime->urls())
            if (url.isLocalFile())
                paths << url.toLocalFile();
    return paths;
}

bool acceptsDrop(const QMimeData* mime)
{
    const DroppedFiles files = classifyFiles(localFiles(mime));
    return !files.models.isEmpty() || !files.images.isEmpty() || !files.sessions.isEmpty();
}

} // namespace torchscope
