#include "common/patch_setup.h"

#include "gwb/engine/patch_input.h"

namespace gwb::app {

int64_t pieceId(const gwb::engine::Model& model, const QString& piece, const char* what) {
    return gwb::engine::pieceId(model, piece.toStdString(), what);
}

std::vector<std::string> pieceTexts(const gwb::engine::Model& model, const std::vector<int64_t>& ids) {
    return gwb::engine::pieceTexts(model, ids);
}

std::vector<gwb::engine::PatchSite> sitesOf(const gwb::engine::Model& model) {
    return gwb::engine::sitesOf(model);
}

bool siteAvailable(const gwb::engine::Model& model, gwb::engine::PatchSite site) {
    return gwb::engine::siteAvailable(model, site);
}

gwb::engine::PatchRequest preparePatchRequest(const gwb::engine::Model& model, const PatchInput& in) {
    gwb::engine::PatchText t;
    t.clean = in.clean.toStdString();
    t.corrupt = in.corrupt.toStdString();
    t.answer = in.answer.toStdString();
    t.wrong = in.wrong.toStdString();
    t.site = in.site.toStdString();
    t.mode = in.mode.toStdString();
    t.position = in.position;
    return gwb::engine::preparePatchRequest(model, t);
}

std::string patchDefinitions() {
    return gwb::engine::patchDefinitions();
}

} // namespace gwb::app
