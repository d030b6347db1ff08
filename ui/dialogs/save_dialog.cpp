#include "dialogs/save_dialog.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStringList>

namespace torchscope {
namespace {

// The extensions of a filter: "PNG image (*.png *.PNG)" -> {".png", ".PNG"}.
QStringList extensionsOf(const QString& filter)
{
    QStringList extensions;
    static const QRegularExpression pattern(R"(\*(\.[\w.]+))");
    for (auto match = pattern.globalMatch(filter); match.hasNext();)
        extensions << match.next().captured(1);
    return extensions;
}

bool endsWithAny(const QString& path, const QStringList& extensions)
{
    for (const auto& extension : extensions)
        if (path.endsWith(extension, Qt::CaseInsensitive))
            return true;
    return false;
}

} // namespace

QString withFilterExtension(const QString& path, const QString& selectedFilter, const QString& filters)
{
    const QStringList wanted = extensionsOf(selectedFilter);
    if (path.isEmpty() || wanted.isEmpty() || endsWithAny(path, wanted))
        return path;
    for (const auto& filter : filters.split(";;", Qt::SkipEmptyParts))
        if (endsWithAny(path, extensionsOf(filter)))
            return path;
    return path + wanted.front();
}

QString askSavePath(QWidget* parent, const QString& caption, const QString& suggested, const QString& filters)
{
    QString selected;
    const QString path = QFileDialog::getSaveFileName(parent, caption, suggested, filters, &selected);
    return withFilterExtension(path, selected.isEmpty() ? filters.section(";;", 0, 0) : selected, filters);
}

} // namespace torchscope
