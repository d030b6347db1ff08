#pragma once

#include <QAbstractItemModel>

#include <vector>

namespace torchscope {

class Document;
struct ModuleInfo;

// The loaded model's module tree as a Qt item model over the Document's plain ModuleInfo values
// (Tiled's LayerModel shape: internal id = module index). Column 0 is checkable: grab the output.
class ModuleTreeModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum Column { Name, Type, Parameters, OutputShape, Calls, Marks, ColumnCount };
    enum Role { PathRole = Qt::UserRole + 1, SearchTextRole };

    explicit ModuleTreeModel(Document* document, QObject* parent = nullptr);

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    QModelIndex indexOfPath(const QString& path, int column = Name) const;
    QString pathAt(const QModelIndex& index) const;
    QString marksAt(const QModelIndex& index) const; // the Grabs / edits column's text

private:
    const ModuleInfo* moduleAt(const QModelIndex& index) const;
    QModelIndex indexOfModule(int moduleIndex, int column) const;
    QString marks(const ModuleInfo& module) const;
    bool isCutAway(const ModuleInfo& module) const; // after the truncation point, in the last run
    void rebuild();
    void refreshAll();

    Document* document_;
    std::vector<int> rowInParent_; // per module index
};

} // namespace torchscope
