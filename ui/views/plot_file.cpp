#include "views/plot_file.h"

#include "views/qcustomplot_include.h"

#include "common/atomic_file.h"
#include "common/error.h"

#include <QDir>
#include <QFileInfo>
#include <QSaveFile>

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
        // QCustomPlot writes PDFs by name only: into core's temporary file beside the target, which
        // is renamed into place with the user's normal file mode.
        try {
            replaceFileAtomically(path.toStdString(), [&](const std::string& temp) {
                if (!plot->savePdf(QString::fromStdString(temp)))
                    throw Error("QCustomPlot could not write the PDF");
            });
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
        return {};
    }
    return QObject::tr("unknown plot format (use .png or .pdf)");
}

} // namespace torchscope
