// The module tree model, checked by QAbstractItemModelTester and against the core's tree.
#include "document/document.h"
#include "gui_test_support.h"
#include "model/model.h"
#include "tree/module_filter_proxy.h"
#include "tree/module_tree_model.h"

#include <QAbstractItemModelTester>
#include <QtTest>

using namespace torchscope;

class ModuleTreeModelTest : public QObject {
    Q_OBJECT

private:
    static ModelSummary summaryOf(const QString& path)
    {
        auto model = Model::load(path.toStdString());
        ModelSummary summary;
        summary.path = model->path();
        summary.modules = model->modules();
        return summary;
    }

private Q_SLOTS:
    void treeMatchesTheModel()
    {
        Document document;
        ModuleTreeModel model(&document);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        document.setModel(summaryOf(test::fixture("resnet18_scripted.pt")));

        QCOMPARE(model.rowCount(), 10); // conv1 bn1 relu maxpool layer1..4 avgpool fc
        const QModelIndex conv = model.indexOfPath("layer1.0.conv1");
        QVERIFY(conv.isValid());
        QCOMPARE(conv.data().toString(), QString("conv1"));
        QCOMPARE(conv.siblingAtColumn(ModuleTreeModel::Type).data().toString(), QString("Conv2d"));
        QCOMPARE(model.pathAt(conv.parent()), QString("layer1.0"));
        QCOMPARE(model.pathAt(conv.parent().parent()), QString("layer1"));
        QVERIFY(!conv.parent().parent().parent().isValid());
        QCOMPARE(model.indexOfPath("layer1.0.relu").siblingAtColumn(ModuleTreeModel::Calls).data().toString(),
            QString("2×"));
    }

    void checkBoxesGrabAndMarksShowTheRequest()
    {
        Document document;
        ModuleTreeModel model(&document);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        document.setModel(summaryOf(test::fixture("resnet18_scripted.pt")));

        const QModelIndex layer2 = model.indexOfPath("layer2");
        QVERIFY(model.setData(layer2, Qt::Checked, Qt::CheckStateRole));
        QCOMPARE(document.grabs(), QStringList{"layer2"});
        QCOMPARE(layer2.data(Qt::CheckStateRole).toInt(), int(Qt::Checked));
        document.setTruncation("layer3");
        document.setGrabbed("layer3:grad", true);
        const QString marks = model.indexOfPath("layer3", ModuleTreeModel::Marks).data().toString();
        QVERIFY2(marks.contains("truncate") && marks.contains("∇"), qPrintable(marks));
        document.addEdit(EditSpec::parse("layer1:zero:0,1"));
        QVERIFY(model.indexOfPath("layer1", ModuleTreeModel::Marks).data().toString().contains("zero:0,1"));
        QVERIFY(model.setData(layer2, Qt::Unchecked, Qt::CheckStateRole));
        QVERIFY(!document.isGrabbed("layer2"));
    }

    void searchMatchesPathTypeAndShape()
    {
        Document document;
        ModuleTreeModel model(&document);
        ModuleFilterProxy proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        auto summary = summaryOf(test::fixture("resnet18_scripted.pt"));
        document.setModel(summary);

        proxy.setSearchText("layer4.1.bn2");
        QCOMPARE(proxy.rowCount(), 1); // layer4, kept as the ancestor of the match
        proxy.setSearchText("AdaptiveAvgPool");
        QCOMPARE(proxy.rowCount(), 1);
        QCOMPARE(proxy.index(0, 0).data().toString(), QString("avgpool"));

        // Shapes become searchable once a run has filled them in.
        for (auto& m : summary.modules)
            if (m.path == "fc")
                m.outputShapes = {{1, 1000}};
        document.updateModules(summary.modules);
        proxy.setSearchText("[1, 1000]");
        QCOMPARE(proxy.rowCount(), 1);
        QCOMPARE(proxy.index(0, 0).data().toString(), QString("fc"));
        proxy.setSearchText("");
        QCOMPARE(proxy.rowCount(), 10);
    }
};

QTEST_MAIN(ModuleTreeModelTest)
#include "module_tree_model_test.moc"
