#include "plot_file.h"

#include "qcustomplot_include.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>
#include <QTemporaryFile>

#include <cstdio>

namespace torchscope {

QString savePlotFile(QCustomPlot* plot, const QString& path, int width, int height)
{
    plot->replot(); // a queued replot may still be pending
    if (path.endsWith(".png", Qt::CaseInsensitive)) {
        QSaveFile file(path);
        if (!file.open(QIODevice::WriteOnly) || !plot->toPixmap(width, height).save(&file, "PNG") || !file.commit())
            return file.errorString();
        return {};
    }
    if (path.endsWith(".pdf", Qt::CaseInsensitive)) {
        // QCustomPlot writes PDFs by name only: write beside the target, then rename into place.
        QTemporaryFile temp(QFileInfo(path).absoluteDir().filePath(".plot-XXXXXX.pdf"));
        if (!temp.open())
            return temp.errorString();
        temp.close();
        if (!plot->savePdf(temp.fileName()))
            return QObject::tr("QCustomPlot could not write the PDF");
        if (std::rename(QFile::encodeName(temp.fileName()).constData(), QFile::encodeName(path).constData()) != 0)
            return QObject::tr("cannot move the PDF into place");
        temp.setAutoRemove(false);
        return {};
    }
    return QObject::tr("unknown plot format (use .png or .pdf)");
}

} // namespace torchscope
