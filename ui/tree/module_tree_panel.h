#pragma once

#include <QWidget>

class QLabel;
class QLineEdit;
class QTreeView;

namespace torchscope {

class Document;
class ModuleFilterProxy;
class ModuleTreeModel;

// The module tree with its search field and context menu (grab output / input / gradient,
// truncate here, edit output, copy path).
class ModuleTreePanel : public QWidget {
    Q_OBJECT
public:
    explicit ModuleTreePanel(Document* document, QWidget* parent = nullptr);

    ModuleTreeModel* model() const { return model_; }
    ModuleFilterProxy* proxy() const { return proxy_; }
    QTreeView* view() const { return view_; }
    QLabel* note() const { return note_; }
    QLineEdit* searchField() const { return search_; }

    // Ticks PATH (if needed), selects it in the tree and shows it in the views.
    void selectPath(const QString& path);

private:
    void showContextMenu(const QPoint& position);
    void showNote();
    void editChannels(const QString& path, bool scale);

    Document* document_;
    ModuleTreeModel* model_;
    ModuleFilterProxy* proxy_;
    QLineEdit* search_;
    QLabel* note_; // a frozen model, modules that never run
    QTreeView* view_;
};

} // namespace torchscope
