#include "window/export_actions.h"

#include "dialogs/save_dialog.h"
#include "export/tensor_formats.h"
#include "jobs/run_controller.h"
#include "panels/statistics_panel.h"
#include "views/activation_view.h"

#include <QFileDialog>
#include <QImage>
#include <QMenu>
#include <QSaveFile>

namespace torchscope {
namespace {

QString saveImage(const QImage& image, const QString& path)
{
    if (image.isNull())
        return QObject::tr("there is nothing to save yet: tick a layer and load an image");
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG") || !file.commit())
        return file.errorString();
    return {};
}

} // namespace

ExportActions::ExportActions(
    RunController* controller, ActivationView* activations, StatisticsPanel* statistics, QWidget* dialogParent)
    : QObject(dialogParent)
    , controller_(controller)
    , activations_(activations)
    , statistics_(statistics)
    , dialogParent_(dialogParent)
{ }

QString ExportActions::askPath(const QString& title, const QString& filter) const
{
    return askSavePath(dialogParent_, title, QString(), filter);
}

void ExportActions::populate(QMenu* menu)
{
    for (const auto& format : tensorFormats()) {
        const QString name = QString::fromStdString(format.name);
        const QString extension = QString::fromStdString(format.extension);
        QAction* action = menu->addAction(tr("Recorded Tensors as %1 (%2)…").arg(name, extension));
        action->setToolTip(QString::fromStdString(format.description));
        connect(action, &QAction::triggered, this, [this, name, extension] {
            const QString path = askPath(tr("Export Recorded Tensors"), QString("%1 (*%2)").arg(name, extension));
            if (!path.isEmpty())
                exportTensors(path);
        });
    }
    menu->addSeparator();
    auto addPicture
        = [&](const QString& text, const QString& filter, QString (ExportActions::*write)(const QString&) const) {
              connect(menu->addAction(text), &QAction::triggered, this, [this, text, filter, write] {
                  const QString path = askPath(text, filter);
                  if (path.isEmpty())
                      return;
                  const QString error = (this->*write)(path);
                  if (error.isEmpty())
                      Q_EMIT done(tr("Wrote %1").arg(path));
                  else
                      Q_EMIT failed(tr("Error Exporting"), tr("Could not write '%1':\n%2").arg(path, error));
              });
          };
    addPicture(tr("Activation Grid as PNG…"), tr("PNG image (*.png)"), &ExportActions::exportActivationGrid);
    addPicture(tr("Channel Overlay as PNG…"), tr("PNG image (*.png)"), &ExportActions::exportOverlay);
    addPicture(tr("Statistics Plot as PNG or PDF…"), tr("PNG image (*.png);;PDF document (*.pdf)"),
        &ExportActions::exportPlot);
}

void ExportActions::exportTensors(const QString& path)
{
    controller_->exportTensors(path);
}

QString ExportActions::exportActivationGrid(const QString& path) const
{
    return saveImage(activations_->gridImage(), path);
}

QString ExportActions::exportOverlay(const QString& path) const
{
    return saveImage(activations_->overlayImage(), path);
}

QString ExportActions::exportPlot(const QString& path) const
{
    return statistics_->saveCurrentPlot(path);
}

} // namespace torchscope
