#include "tree/module_tree_model.h"

#include <QColor>
#include <QFont>

#include "common/strings.h"
#include "document/capture_keys.h"
#include "document/document.h"

#include <QLocale>

#include <algorithm>

namespace torchscope {

ModuleTreeModel::ModuleTreeModel(Document* document, QObject* parent)
    : QAbstractItemModel(parent)
    , document_(document)
{
    connect(document_, &Document::modelChanged, this, &ModuleTreeModel::rebuild);
    connect(document_, &Document::modulesChanged, this, &ModuleTreeModel::refreshAll);
    connect(document_, &Document::requestChanged, this, &ModuleTreeModel::refreshAll);
    connect(document_, &Document::probesChanged, this, &ModuleTreeModel::refreshAll);
    connect(document_, &Document::resultsChanged, this, &ModuleTreeModel::refreshAll);
    rebuild();
}

void ModuleTreeModel::rebuild()
{
    beginResetModel();
    const auto& modules = document_->model().modules;
    rowInParent_.assign(modules.size(), 0);
    for (const auto& m : modules)
        for (size_t row = 0; row < m.children.size(); ++row)
            rowInParent_[static_cast<size_t>(m.children[row])] = static_cast<int>(row);
    endResetModel();
}

void ModuleTreeModel::refreshAll()
{
    // Shapes, marks and check states can change anywhere in the tree: one range per parent.
    for (const auto& module : document_->model().modules) {
        if (module.children.empty())
            continue;
        const QModelIndex first = indexOfModule(module.children.front(), 0);
        const QModelIndex last = indexOfModule(module.children.back(), ColumnCount - 1);
        Q_EMIT dataChanged(first, last);
    }
}

const ModuleInfo* ModuleTreeModel::moduleAt(const QModelIndex& index) const
{
    if (!index.isValid())
        return nullptr;
    const auto& modules = document_->model().modules;
    const auto i = static_cast<size_t>(index.internalId());
    return i < modules.size() ? &modules[i] : nullptr;
}

QModelIndex ModuleTreeModel::indexOfModule(int moduleIndex, int column) const
{
    if (moduleIndex <= 0) // the root module is the invisible root item
        return {};
    return createIndex(rowInParent_[static_cast<size_t>(moduleIndex)], column, quintptr(moduleIndex));
}

QModelIndex ModuleTreeModel::index(int row, int column, const QModelIndex& parent) const
{
    const auto& modules = document_->model().modules;
    if (modules.empty() || row < 0 || column < 0 || column >= ColumnCount)
        return {};
    const ModuleInfo* parentModule = parent.isValid() ? moduleAt(parent) : &modules[0];
    if (!parentModule || row >= static_cast<int>(parentModule->children.size()))
        return {};
    return createIndex(row, column, quintptr(parentModule->children[static_cast<size_t>(row)]));
}

QModelIndex ModuleTreeModel::parent(const QModelIndex& child) const
{
    const ModuleInfo* module = moduleAt(child);
    return module ? indexOfModule(module->parent, 0) : QModelIndex();
}

int ModuleTreeModel::rowCount(const QModelIndex& parent) const
{
    const auto& modules = document_->model().modules;
    if (modules.empty())
        return 0;
    if (parent.isValid() && parent.column() != 0)
        return 0;
    const ModuleInfo* module = parent.isValid() ? moduleAt(parent) : &modules[0];
    return module ? static_cast<int>(module->children.size()) : 0;
}

int ModuleTreeModel::columnCount(const QModelIndex&) const
{
    return ColumnCount;
}

QString ModuleTreeModel::marks(const ModuleInfo& module) const
{
    const QString path = QString::fromStdString(module.path);
    QStringList marks;
    if (document_->truncation() == path)
        marks << tr("✂ truncate");
    if (isCutAway(module))
        marks << tr("cut away");
    bool attentionGrabbed = false;
    for (const auto& spec : document_->grabs()) {
        const CaptureKey grab = captureKey(spec);
        if (grab.path != module.path || grab.kind == CaptureKind::Output)
            continue;
        if (grab.kind == CaptureKind::Attention)
            attentionGrabbed = true;
        else
            marks << (grab.kind == CaptureKind::Gradient ? QStringLiteral("∇") : QString("in%1").arg(grab.inputIndex));
    }
    // Where the model computes attention (the grab PATH:attention works there).
    if (module.holdsAttention)
        marks << (attentionGrabbed ? tr("◉ attention grabbed") : tr("◎ attention"));
    for (const auto& edit : document_->edits())
        if (edit.path == module.path)
            marks << "✎ " + QString::fromStdString(edit.toString()).section(':', 1);
    const QMap<QString, double> accuracies = document_->probeAccuracies();
    if (const auto accuracy = accuracies.find(path); accuracy != accuracies.end())
        marks << QString("%1probe %2%")
                     .arg(path == document_->bestProbeLayer() ? "★ best " : "")
                     .arg(100.0 * *accuracy, 0, 'f', 1);
    return marks.join("  ");
}

bool ModuleTreeModel::isCutAway(const ModuleInfo& module) const
{
    const auto snapshot = document_->snapshot();
    if (!snapshot || document_->truncation().isEmpty())
        return false;
    return std::find(snapshot->cutAway.begin(), snapshot->cutAway.end(), module.path) != snapshot->cutAway.end();
}

QVariant ModuleTreeModel::data(const QModelIndex& index, int role) const
{
    const ModuleInfo* module = moduleAt(index);
    if (!module)
        return {};
    const QString path = QString::fromStdString(module->path);
    QString shapes;
    for (const auto& s : module->outputShapes)
        shapes += (shapes.isEmpty() ? "" : " ") + QString::fromStdString(shapeToString(s));

    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Name:
            return QString::fromStdString(module->name);
        case Type: // attention marked first, where the narrow tree shows it, not only in the marks
            return (module->holdsAttention ? "◎ " : "") + QString::fromStdString(module->shortType);
        case Parameters:
            return QLocale().toString(static_cast<qlonglong>(module->totalParameters));
        case OutputShape:
            return shapes;
        case Calls:
            if (!module->called && !module->path.empty())
                return tr("never");
            return module->callSites.size() > 1 ? QString("%1×").arg(module->callSites.size()) : QString();
        case Marks:
            return marks(*module);
        }
        return {};
    case Qt::CheckStateRole:
        if (index.column() == Name)
            return document_->isGrabbed(path) ? Qt::Checked : Qt::Unchecked;
        return {};
    case Qt::ToolTipRole: {
        QString tip = QString("<b>%1</b><br>%2<br>%3 parameters (%4 own)")
                          .arg(path.toHtmlEscaped(), QString::fromStdString(module->qualifiedType).toHtmlEscaped())
                          .arg(module->totalParameters)
                          .arg(module->ownParameters);
        if (isCutAway(*module))
            tip += "<br><i>"
                + tr("Cut away: it runs after the truncation point %1, so it does not run now")
                      .arg(document_->truncation().toHtmlEscaped())
                + "</i>";
        if (module->holdsAttention)
            tip += "<br>◎ "
                + tr("Computes attention: grab %1:attention for its probabilities, or open the Attention tab")
                      .arg(path.toHtmlEscaped());
        if (!module->called)
            tip += "<br><i>" + tr("Never runs: %1").arg(QString::fromStdString(module->notCalledReason).toHtmlEscaped())
                + "</i>";
        for (const auto& site : module->callSites)
            tip += QString("<br>called from %1%2%3")
                       .arg(QString::fromStdString(site.method))
                       .arg(site.line ? QString(" line %1").arg(site.line) : QString())
                       .arg(site.context.empty() ? QString() : " " + QString::fromStdString(site.context));
        return tip;
    }
    case Qt::ForegroundRole:
        if (!module->called)
            return QColor(Qt::gray);
        if (isCutAway(*module))
            return QColor(150, 110, 110);
        return {};
    case Qt::FontRole: {
        QFont font;
        font.setBold(!path.isEmpty() && path == document_->bestProbeLayer());
        font.setItalic(isCutAway(*module));
        return font.bold() || font.italic() ? QVariant(font) : QVariant();
    }
    case Qt::TextAlignmentRole:
        return index.column() == Parameters ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case PathRole:
        return path;
    case SearchTextRole:
        return path + " " + QString::fromStdString(module->shortType) + " " + shapes
            + (module->holdsAttention ? " attention" : "");
    }
    return {};
}

bool ModuleTreeModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    const ModuleInfo* module = moduleAt(index);
    if (!module || role != Qt::CheckStateRole || index.column() != Name)
        return false;
    document_->setGrabbed(QString::fromStdString(module->path), value.toInt() == Qt::Checked);
    return true;
}

Qt::ItemFlags ModuleTreeModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags flags = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    const ModuleInfo* module = moduleAt(index);
    if (index.column() == Name && module && module->called)
        flags |= Qt::ItemIsUserCheckable;
    return flags;
}

QVariant ModuleTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return tr("Module");
    case Type:
        return tr("Type");
    case Parameters:
        return tr("Parameters");
    case OutputShape:
        return tr("Output");
    case Calls:
        return tr("Calls");
    case Marks:
        return tr("Grabs / edits");
    }
    return {};
}

QModelIndex ModuleTreeModel::indexOfPath(const QString& path, int column) const
{
    const auto& modules = document_->model().modules;
    for (size_t i = 1; i < modules.size(); ++i)
        if (QString::fromStdString(modules[i].path) == path)
            return indexOfModule(static_cast<int>(i), column);
    return {};
}

QString ModuleTreeModel::marksAt(const QModelIndex& index) const
{
    const ModuleInfo* module = moduleAt(index);
    return module ? marks(*module) : QString();
}

QString ModuleTreeModel::pathAt(const QModelIndex& index) const
{
    const ModuleInfo* module = moduleAt(index);
    return module ? QString::fromStdString(module->path) : QString();
}

} // namespace torchscope
