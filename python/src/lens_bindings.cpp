// gwb._gwb.lens_*: tuned and Jacobian lenses (gwb/engine/lens.h) for gwb.lens.

#include "bindings_common.h"
#include "option_table.h"

#include "gwb/engine/lens.h"

#include <pybind11/stl.h>

#include <optional>

namespace gwb::python {

using namespace gwb::engine;

namespace {

py::dict evalDict(LensEvalResult r) {
    py::dict d;
    d["lenses"] = r.lenses;
    d["folders"] = r.lensFolders;
    d["fitted_on"] = r.lensModels;
    d["same_model"] = std::vector<bool>(r.sameModel.begin(), r.sameModel.end());
    d["model"] = r.modelName;
    d["n_layers"] = r.nLayers;
    d["prompts"] = r.prompts;
    d["positions"] = r.positions;
    d["kl"] = toNumpy(std::move(r.kl));
    d["ce"] = toNumpy(std::move(r.ce));
    d["top1"] = toNumpy(std::move(r.top1));
    d["rank"] = toNumpy(std::move(r.rank));
    d["final_ce"] = toNumpy(std::move(r.finalCe));
    return d;
}

} // namespace

void registerLens(py::module_& m) {
    m.def("lens_defaults", [] { return optionValues(lensFitOptions(), LensFitRequest{}); });
    m.def("lens_fit_options", [] { return optionList(lensFitOptions()); });
    m.def("lens_eval_options", [] { return optionList(lensEvalOptions()); });
    m.def(
        "lens_fit",
        [](PyModel& s, const std::vector<std::string>& files, const std::vector<std::vector<int32_t>>& ids,
           const std::string& out, const py::dict& options, const std::string& resume, const py::object& progress) {
            LensFitRequest r;
            r.files = files;
            r.promptIds = ids;
            applyOptions(lensFitOptions(), options, r, "the lens fit");
            r.validate();
            if (!out.empty()) checkLensFolder(out);
            std::optional<Lens> earlier;
            if (!resume.empty()) earlier = readLens(resume);
            Pending pending;
            const Lens lens = withoutGil(pending, [&] {
                Lens l = fitLens(
                    s.model, r,
                    [&](const LensProgress& p) {
                        return reportProgress(pending, progress,
                                              p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total)
                                                          : 1.0);
                    },
                    nullptr, earlier ? &*earlier : nullptr);
                if (!out.empty()) writeLens(l, out); // a partial lens too: resume= carries on from it
                return l;
            });
            pending.rethrowIfAny();
            py::dict d;
            d["kind"] = lensKindName(lens.kind);
            d["complete"] = lens.complete;
            d["n_prompts"] = lens.nPrompts;
            d["steps_done"] = lens.stepsDone;
            d["seconds"] = lens.seconds;
            d["layers"] = lens.layers;
            d["model"] = lens.modelName;
            d["options"] = optionValues(lensFitOptions(), lens.request);
            py::list mats, biases;
            for (FloatArray a : lens.matrix)
                mats.append(toNumpy(std::move(a)));
            for (FloatArray a : lens.bias)
                biases.append(toNumpy(std::move(a)));
            d["matrices"] = mats;
            d["biases"] = biases;
            return d;
        },
        py::arg("model"), py::arg("files"), py::arg("ids"), py::arg("out"), py::arg("options"), py::arg("resume"),
        py::arg("progress"));
    m.def(
        "lens_merge",
        [](const std::vector<std::string>& folders, const std::string& out) {
            std::vector<Lens> shards;
            for (const auto& f : folders)
                shards.push_back(readLens(f));
            checkLensFolder(out);
            const Lens merged = mergeLenses(shards);
            writeLens(merged, out);
            return merged.nPrompts;
        },
        py::arg("folders"), py::arg("out"));
    m.def(
        "lens_eval",
        [](PyModel& s, const std::vector<std::string>& folders, const std::vector<std::string>& files,
           const std::vector<std::vector<int32_t>>& ids, const py::dict& options, const std::string& out) {
            std::vector<Lens> lenses;
            for (const auto& f : folders)
                lenses.push_back(readLens(f));
            LensEvalRequest r;
            r.files = files;
            r.promptIds = ids;
            applyOptions(lensEvalOptions(), options, r, "the lens evaluation");
            if (files.empty() && ids.empty()) throw std::invalid_argument("no text: give corpus files or texts");
            Pending pending;
            LensEvalResult res = withoutGil(pending, [&] {
                LensEvalResult e = evaluateLenses(s.model, lenses, folders, r);
                if (!out.empty()) writeLensEval(e, out);
                return e;
            });
            return evalDict(std::move(res));
        },
        py::arg("model"), py::arg("folders"), py::arg("files"), py::arg("ids"), py::arg("options"), py::arg("out"));
    m.def(
        "lens_logits",
        [](PyModel& s, const std::vector<int32_t>& ids, int state, const std::string& folder) {
            std::optional<Lens> lens;
            if (!folder.empty()) lens = readLens(folder);
            return toNumpy(lensLogits(s.model, ids, state, lens ? &*lens : nullptr));
        },
        py::arg("model"), py::arg("ids"), py::arg("state"), py::arg("folder"));
}

} // namespace gwb::python
