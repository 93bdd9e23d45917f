#pragma once
// Help > Views guide: what each view shows, the definitions the data exports carry (from the
// engine's definitions()), and the keyboard and mouse shortcuts.

#include <QDialog>
#include <QString>

namespace gwb::app {

/// The guide as HTML: one section per view with the definitions of its quantities, then the
/// shortcuts table.
QString viewsGuideHtml();

/// A non-modal window showing viewsGuideHtml() (links open in the browser).
class ViewsGuide : public QDialog {
    Q_OBJECT
public:
    explicit ViewsGuide(QWidget* parent = nullptr);
};

} // namespace gwb::app
