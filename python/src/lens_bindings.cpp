// gwb._gwb.lens_*: tuned and Jacobian lenses (gwb/engine/lens.h) for gwb.lens.

#include "bindings_common.h"

#include "gwb/engine/lens.h"

#include <pybind11/stl.h>

#include <optional>

namespace gwb::python {

using namespace gwb::engine;

namespace {

py::dict requestDict(const LensFitRequest& r) {
    py::dict d;
    d["kind"] = lensKindName(r.kind);
    d["window"] = r.window;
    d["max_prompts"] = r.maxPrompts;
    d["shard"] = std::to_string(r.shardIndex) + "/" + std::to_string(r.shardCount);
    d["skip_first"] = r.skipFirst;
    d["dim_batch"] = r.dimBatch;
    d["steps"] = r.steps;
    d["tokens_per_step"] = r.tokensPerStep;
    d["lr"] = r.lr;
    d["momentum"] = r.momentum;
    d["weight_decay"] = r.weightDecay;
    d["clip"] = r.clip;
    d["seed"] = r.seed;
    return d;
}

void setOption(LensFitRequest& r, const std::string& key, const py::handle& v) {
    if (key == "kind")
        r.kind = lensKindFromName(v.cast<std::string>());
    else if (key == "window")
        r.window = v.cast<int64_t>();
    else if (key == "max_prompts")
        r.maxPrompts = v.cast<int64_t>();
    else if (key == "shard") {
        const auto s = v.cast<std::string>();
        const size_t slash = s.find('/');
        if (slash == std::string::npos) throw std::invalid_argument("shard needs 'i/n', e.g. '0/4'");
        r.shardIndex = std::stoi(s.substr(0, slash));
        r.shardCount = std::stoi(s.substr(slash + 1));
    } else if (key == "skip_first")
        r.skipFirst = v.cast<int64_t>();
    else if (key == "dim_batch")
        r.dimBatch = v.cast<int64_t>();
    else if (key == "steps")
        r.steps = v.cast<int64_t>();
    else if (key == "tokens_per_step")
        r.tokensPerStep = v.cast<int64_t>();
    else if (key == "lr")
        r.lr = v.cast<double>();
    else if (key == "momentum")
        r.momentum = v.cast<double>();
    else if (key == "weight_decay")
        r.weightDecay = v.cast<double>();
    else if (key == "clip")
        r.clip = v.cast<double>();
    else if (key == "seed")
        r.seed = v.cast<uint64_t>();
    else
        throw std::invalid_argument("unknown lens option '" + key + "'");
}

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
    m.def("lens_defaults", [] { return requestDict(LensFitRequest{}); });
    m.def(
        "lens_fit",
        [](PyModel& s, const std::vector<std::string>& files, const std::vector<std::vector<int32_t>>& ids,
           const std::string& out, const py::dict& options, const std::string& resume, const py::object& progress) {
            LensFitRequest r;
            r.files = files;
            r.promptIds = ids;
            for (const auto& [k, v] : options)
                if (!v.is_none()) setOption(r, k.cast<std::string>(), v);
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
            d["options"] = requestDict(lens.request);
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
           const std::vector<std::vector<int32_t>>& ids, int64_t window, int64_t maxPrompts, const std::string& out) {
            std::vector<Lens> lenses;
            for (const auto& f : folders)
                lenses.push_back(readLens(f));
            LensEvalRequest r;
            r.files = files;
            r.promptIds = ids;
            r.window = window;
            r.maxPrompts = maxPrompts;
            if (files.empty() && ids.empty()) throw std::invalid_argument("no text: give corpus files or texts");
            Pending pending;
            LensEvalResult res = withoutGil(pending, [&] {
                LensEvalResult e = evaluateLenses(s.model, lenses, folders, r);
                if (!out.empty()) writeLensEval(e, out);
                return e;
            });
            return evalDict(std::move(res));
        },
        py::arg("model"), py::arg("folders"), py::arg("files"), py::arg("ids"), py::arg("window"),
        py::arg("max_prompts"), py::arg("out"));
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
