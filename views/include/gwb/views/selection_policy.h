#pragma once
// Where the selection goes after a run: a token that every view can show. A token is "fully
// defined" when every offset D of every Grassmann layer reaches a real past token (t - D >= 0) and
// a next token exists (so lens ranks and saliency targets are defined too).

#include "gwb/views/view_data.h"

#include <QString>

namespace gwb::views {

/// Largest offset over the Grassmann trace's layers (0 without a Grassmann trace).
int maxOffset(const WorkbenchData& data);
/// True when token t has every offset of every Grassmann layer valid (t >= maxOffset) and t < T.
bool tokenFullyDefined(const WorkbenchData& data, int t);
/// The token a fresh run selects: the first fully defined token that has a next token; for a
/// prompt too short for that, the last token (the one with the most valid offsets). -1 without data.
int defaultToken(const WorkbenchData& data);
/// The token to select after a run when `current` was selected before: kept when it is fully
/// defined in the new data, else defaultToken().
int tokenAfterRun(const WorkbenchData& data, int current);
/// Why a value is undefined at token t (tooltip text for "—"), e.g. "token 3 has no past token at
/// offset 4 (t − D < 0)". `what` names the quantity.
QString undefinedReason(const QString& what, int t, int offset = -1);

} // namespace gwb::views
