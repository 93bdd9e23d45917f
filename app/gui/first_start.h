#pragma once
// What the window does so that a new user sees the instrument at once: a sample prompt on the
// first start, and a token strip that keeps the selected token in view.

#include <QString>

class QScrollArea;

namespace gwb::views {
class Selection;
class TokenStrip;
} // namespace gwb::views

namespace gwb::app {

/// The sample prompt run on the first start (the opening of Pride and Prejudice, from resources).
QString samplePrompt();

/// Scrolls `area` so that the selected token's chip in `strip` stays visible, whenever the
/// selection or the strip's layout changes.
void keepSelectionVisible(QScrollArea* area, gwb::views::TokenStrip* strip, gwb::views::Selection* selection);

} // namespace gwb::app
