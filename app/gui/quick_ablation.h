#pragma once
// Quick ablations from the views: right-click the Plücker view's offset bars for "Ablate offset D
// in layer l", or an Attention head thumbnail for "Ablate head h in layer l"; the change of
// log p of the next token at every position (engine ablationDeltaLogprob, on the patching
// runner's worker thread) is then drawn over the token strip.

#include "gui/patching_job.h"

#include <QString>

#include <functional>

class QMenu;

namespace gwb::views {
class Selection;
class TokenStrip;
class View;
} // namespace gwb::views

namespace gwb::app {

/// The window's models and data at the time of a request.
struct AblationContext {
    QString grassmannPath, baselinePath;
    QString device = QStringLiteral("auto");
    std::optional<ImportChoice> grassmannChoice, baselineChoice;
    gwb::views::WorkbenchData data;
};

/// The menu actions for layer `layer`: one zero- and one mean-ablation per offset of that
/// Grassmann layer (`offsets` true) or for head `head` of that Transformer layer. Each action's
/// data is "site,mode,layer,offset-or-head". Actions are added to `menu`.
void addAblationActions(QMenu* menu, const gwb::views::WorkbenchData& data, int layer, bool offsets, int head);

/// Parses an action's data into a request with the context's model and token ids; false with
/// `error` set when it cannot be made.
bool ablationRequest(const QString& actionData, const AblationContext& context, AblationRequest& request,
                     QString* error);

/// Wires the context menus of `plucker` (its pair-norm chart) and `attention` (its head grid) to
/// `runner`, and the results to `strip`; `status` shows a line in the window's status bar.
void wireQuickAblations(PatchingRunner* runner, gwb::views::View* plucker, gwb::views::View* attention,
                        gwb::views::TokenStrip* strip, gwb::views::Selection* selection,
                        std::function<AblationContext()> context, std::function<void(const QString&)> status);

} // namespace gwb::app
