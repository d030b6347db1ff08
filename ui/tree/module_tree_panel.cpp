#include "tree/module_tree_panel.h"

#include "document/capture_keys.h"
#include "document/document.h"
#include "tree/module_filter_proxy.h"
#include "tree/module_tree_model.h"

#include <QApplication>
#include <QClipboard>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QTreeView>
#include <QVBoxLayout>

namespace torchscope {

ModuleTreePanel::ModuleTreePanel(Document* document, QWidget* parent)
    : QWidget(parent)
    , document_(document)
    , model_(new ModuleTreeModel(document, this))
    , proxy_(new ModuleFilterProxy(this))
    , search_(new QLineEdit)
    , note_(new QLabel)
    , view_(new QTreeView)
{
    proxy_->setSourceModel(model_);
    search_->setPlaceholderText(tr("Search path, type or shape"));
    search_->setClearButtonEnabled(true);
    view_->setModel(proxy_);
    view_->setUniformRowHeights(true);
    view_->setContextMenuPolicy(Qt::CustomContextMenu);
    view_->header()->setSectionResizeMode(QHeaderView::Interactive);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(search_);
    layout->addWidget(note_);
    layout->addWidget(view_);
    note_->setWordWrap(true);
    note_->setMargin(4);
    note_->hide();

    connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
        proxy_->setSearchText(text);
        if (!text.isEmpty())
            view_->expandAll();
    });
    connect(view_, &QTreeView::customContextMenuRequested, this, &ModuleTreePanel::showContextMenu);
    connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
        const QString path = current.data(ModuleTreeModel::PathRole).toString();
        for (const auto& spec : document_->grabs())
            if (spec == path || spec.startsWith(path + ":")) {
                document_->setSelectedKey(spec);
                return;
            }
    });
    // Sized once per model: resizing to contents on every change would measure every row.
    connect(document_, &Document::modelChanged, this, [this] {
        view_->expandToDepth(0);
        view_->resizeColumnToContents(ModuleTreeModel::Name);
        showNote();
    });
}

void ModuleTreePanel::showNote()
{
    const ModelSummary& model = document_->model();
    int never = 0;
    for (const auto& m : model.modules)
        never += m.called ? 0 : 1;
    QString text;
    if (!model.frozenNote.empty())
        text = QString::fromStdString(model.frozenNote);
    else if (never > 0)
        text = tr("%n module(s) in grey never run: the forward never calls them (unused, a ModuleList that is "
                  "iterated, or weights used directly) or, in a traced model, passes its input through them "
                  "(nn.Identity). Hover one to see why.",
            nullptr, never);
    // A .pt2 says what it is and which input sizes it takes (its dynamic dimensions) first.
    if (!model.exportedNote.empty())
        text = QString::fromStdString(model.exportedNote) + (text.isEmpty() ? QString() : "\n\n" + text);
    note_->setText(text);
    note_->setVisible(!text.isEmpty());
}

void ModuleTreePanel::selectPath(const QString& path)
{
    // A module that never runs is shown with the reason, not grabbed or selected: it has no value.
    if (document_->setGrabbed(path, true)) {
        document_->setSelectedKey(path);
    } else {
        note_->setText(tr("'%1' is not grabbed: it never runs in this model: %2")
                           .arg(path, QString::fromStdString(document_->module(path)->notCalledReason)));
        note_->setVisible(true);
    }
    const QModelIndex index = proxy_->mapFromSource(model_->indexOfPath(path));
    view_->setCurrentIndex(index);
    view_->scrollTo(index);
}

void ModuleTreePanel::showContextMenu(const QPoint& position)
{
    const QString path = view_->indexAt(position).data(ModuleTreeModel::PathRole).toString();
    if (path.isEmpty())
        return;
    QMenu menu(this);
    const ModuleInfo* module = document_->module(path);
    if (module && !module->called) {
        QAction* why = menu.addAction(tr("Never runs: %1").arg(QString::fromStdString(module->notCalledReason)));
        why->setEnabled(false);
        menu.addSeparator();
        connect(menu.addAction(tr("Copy Path")), &QAction::triggered, this,
            [path] { QApplication::clipboard()->setText(path); });
        menu.exec(view_->viewport()->mapToGlobal(position));
        return;
    }
    bool gradients = false;
    for (const auto& spec : document_->grabs())
        gradients = gradients || isGradientKey(spec);
    const bool truncated = !document_->truncation().isEmpty();
    auto addToggle = [&](const QString& text, const QString& spec) {
        QAction* action = menu.addAction(text);
        action->setCheckable(true);
        action->setChecked(document_->isGrabbed(spec));
        connect(action, &QAction::toggled, this, [this, spec](bool on) {
            document_->setGrabbed(spec, on);
            if (on)
                document_->setSelectedKey(spec);
        });
    };
    addToggle(tr("Grab Output"), path);
    addToggle(tr("Grab Input"), path + ":in0");
    addToggle(tr("Grab Gradient"), path + ":grad");
    if (truncated && !document_->isGrabbed(path + ":grad")) {
        // A gradient is of the model's output score, which a truncated run never computes.
        QAction* gradient = menu.actions().last();
        gradient->setEnabled(false);
        gradient->setText(tr("Grab Gradient (clear the truncation first)"));
    }
    menu.addSeparator();
    QAction* truncate = menu.addAction(
        gradients ? tr("Set Truncation Point Here (remove gradient grabs first)") : tr("Set Truncation Point Here"));
    truncate->setEnabled(!gradients);
    connect(truncate, &QAction::triggered, this, [this, path] { document_->setTruncation(path); });
    QAction* clear = menu.addAction(tr("Clear Truncation"));
    clear->setEnabled(!document_->truncation().isEmpty());
    connect(clear, &QAction::triggered, this, [this] { document_->setTruncation({}); });
    menu.addSeparator();
    QMenu* edit = menu.addMenu(tr("Edit Output"));
    connect(
        edit->addAction(tr("Zero Channels…")), &QAction::triggered, this, [this, path] { editChannels(path, false); });
    connect(
        edit->addAction(tr("Scale Channels…")), &QAction::triggered, this, [this, path] { editChannels(path, true); });
    connect(
        edit->addAction(tr("Clear Edits")), &QAction::triggered, this, [this, path] { document_->clearEdits(path); });
    menu.addSeparator();
    connect(menu.addAction(tr("Copy Path")), &QAction::triggered, this,
        [path] { QApplication::clipboard()->setText(path); });
    menu.exec(view_->viewport()->mapToGlobal(position));
}

void ModuleTreePanel::editChannels(const QString& path, bool scale)
{
    bool ok = false;
    const QString channels = QInputDialog::getText(this, scale ? tr("Scale Channels") : tr("Zero Channels"),
        tr("Channels of %1 (e.g. 0,5,7-9):").arg(path), QLineEdit::Normal, "0", &ok);
    if (!ok)
        return;
    QString spec = path + (scale ? ":scale:" : ":zero:") + channels.simplified().remove(' ');
    if (scale) {
        const double factor
            = QInputDialog::getDouble(this, tr("Scale Channels"), tr("Factor:"), 2.0, -1e6, 1e6, 3, &ok);
        if (!ok)
            return;
        spec += ":" + QString::number(factor);
    }
    try {
        document_->addEdit(EditSpec::parse(spec.toStdString()));
    } catch (const std::exception& e) {
        QMessageBox::warning(this, tr("Edit Output"), QString::fromStdString(e.what()));
    }
}

} // namespace torchscope
