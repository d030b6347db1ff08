#include "tree/module_filter_proxy.h"

#include "tree/module_tree_model.h"

namespace torchscope {

ModuleFilterProxy::ModuleFilterProxy(QObject* parent)
    : QSortFilterProxyModel(parent)
{
    setRecursiveFilteringEnabled(true);
}

void ModuleFilterProxy::setSearchText(const QString& text)
{
    text_ = text.trimmed();
    invalidateFilter();
}

bool ModuleFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    if (text_.isEmpty())
        return true;
    const QModelIndex index = sourceModel()->index(sourceRow, 0, sourceParent);
    return index.data(ModuleTreeModel::SearchTextRole).toString().contains(text_, Qt::CaseInsensitive);
}

} // namespace torchscope
