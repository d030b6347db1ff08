#pragma once

#include <QTableWidgetItem>

namespace torchscope {

// A table cell that sorts by its number, not its text (the tabs' sortable tables).
class NumberItem : public QTableWidgetItem {
public:
    NumberItem(double value, const QString& text)
        : QTableWidgetItem(text)
    {
        setData(Qt::UserRole, value);
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem& other) const override
    {
        return data(Qt::UserRole).toDouble() < other.data(Qt::UserRole).toDouble();
    }
};

} // namespace torchscope
