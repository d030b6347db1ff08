#include "views/layer_combo.h"

#include "model/module_info.h"

#include <QComboBox>
#include <QCompleter>
#include <QSignalBlocker>

#include <algorithm>

namespace torchscope {

void makeLayerCombo(QComboBox* combo)
{
    combo->setEditable(true);
    combo->setInsertPolicy(QComboBox::NoInsert);
    auto* completer = new QCompleter(combo->model(), combo);
    completer->setCompletionMode(QCompleter::PopupCompletion);
    completer->setFilterMode(Qt::MatchContains);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    combo->setCompleter(completer);
}

void fillLayerCombo(QComboBox* combo, const std::vector<ModuleInfo>& modules, bool keepCurrent, size_t mostDims)
{
    const QString current = combo->currentText();
    const QSignalBlocker block(combo);
    combo->clear();
    QString chosen;
    for (const auto& m : modules) {
        if (m.path.empty() || !m.called)
            continue;
        const auto& shape = m.outputShapes.empty() ? std::vector<int64_t>{} : m.outputShapes.front();
        if (!m.outputShapes.empty() && (shape.size() < 2 || shape.size() > mostDims))
            continue;
        combo->addItem(QString::fromStdString(m.path));
        const bool positions = shape.size() == 3 || (shape.size() == 4 && shape[2] * shape[3] > 1);
        if (positions && std::count(m.path.begin(), m.path.end(), '.') <= 1)
            chosen = QString::fromStdString(m.path);
    }
    const int keep = keepCurrent ? combo->findText(current) : -1;
    if (keep >= 0)
        combo->setCurrentIndex(keep);
    else if (!chosen.isEmpty())
        combo->setCurrentText(chosen);
}

} // namespace torchscope
