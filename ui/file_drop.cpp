#include "file_drop.h"

#include <QDirIterator>
#include <QFileInfo>
#include <QMimeData>
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
        } else if (info.suffix() == "pt" || info.suffix() == "pth") {
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
