#pragma once

#include <QSortFilterProxyModel>

namespace torchscope {

// Search over the module tree: a row matches when its path, type or output shape contains the
// text (case-insensitive); ancestors of matches stay visible (Netron's find sidebar).
class ModuleFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit ModuleFilterProxy(QObject* parent = nullptr);
    void setSearchText(const QString& text);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    QString text_;
};

} // namespace torchscope
