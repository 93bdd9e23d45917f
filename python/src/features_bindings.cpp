// gwb._gwb's sparse-dictionary functions (gwb/engine/features.h); gwb/features.py is the public
// API on them, with the command line's names: train, eval, top, export.

#include "bindings_common.h"
#include "option_table.h"

#include "gwb/engine/features.h"
#include "gwb/engine/npy.h"
#include "gwb/engine/tokenizer.h"

#include <pybind11/stl.h>

#include <cmath>

namespace gwb::python {
namespace {

using namespace gwb::engine;

FloatArray fromNumpy(const py::array_t<float, py::array::c_style | py::array::forcecast>& a, const char* what) {
    if (a.ndim() != 2) throw std::invalid_argument(std::string(what) + " must be a 2-D array (rows x d_in)");
    FloatArray out;
    out.shape = {static_cast<int64_t>(a.shape(0)), static_cast<int64_t>(a.shape(1))};
    out.data.assign(a.data(), a.data() + a.size());
    return out;
}

py::dict configDict(const DictionaryConfig& c) {
    py::dict d;
    d["architecture"] = c.architecture;
    d["site"] = c.site;
    d["d_in"] = c.dIn;
    d["d_sae"] = c.dSae;
    d["k"] = c.k;
    d["l1"] = c.l1;
    d["model_name"] = c.modelName;
    d["model_hash"] = c.modelHash;
    d["context_size"] = c.contextSize;
    d["scaling"] = c.scaling;
    d["corpus"] = c.corpus;
    d["trained_tokens"] = c.trainedTokens;
    d["seed"] = c.seed;
    d["crosscoder"] = c.crosscoder();
    d["second_site"] = c.secondSite;
    d["second_model_name"] = c.secondModelName;
    d["first_width"] = c.firstWidth;
    d["block_scaling"] = c.blockScaling;
    d["transcoder"] = c.transcoder();
    d["target_site"] = c.targetSite;
    d["d_out"] = c.outWidth();
    d["apply_b_dec_to_input"] = !c.transcoder() && c.applyBDecToInput;
    return d;
}

/// The request of a training run: the table's options from `options` ({key: value}, checked with
/// the command line's sentences) and what only Python passes.
FeatureTrainOptions trainOptions(const std::string& site, const std::vector<std::string>& files,
                                 const py::dict& options, const std::string& device, const std::string& stateDir) {
    FeatureTrainOptions o;
    applyOptions(featureTrainOptions(), options, o, "the dictionary training");
    o.site = site;
    o.files = files;
    o.device = device;
    o.stateDir = stateDir;
    return o;
}

py::dict resultDict(FeatureTrainResult&& r) {
    py::dict d;
    d["dictionary"] = std::move(r.dictionary);
    d["complete"] = r.complete;
    d["steps"] = r.steps;
    d["seconds"] = r.seconds;
    d["tokens_per_second"] = r.tokensPerSecond;
    return d;
}

/// Engine progress -> the Python callback (fraction done); Ctrl-C or a raising callback stops.
FeatureTrainCallback progressOf(Pending& pending, const py::object& callback) {
    return [&pending, callback](const FeatureTrainProgress& p) {
        return reportProgress(pending, callback, p.steps > 0 ? static_cast<double>(p.step) / p.steps : 1.0);
    };
}

py::object finite(double v) {
    return std::isfinite(v) ? py::object(py::float_(v)) : py::object(py::none());
}

/// A dashboard as gwb.features.top returns it (the keys it has always had).
py::dict dashboardDict(const FeatureDashboard& f) {
    py::dict e;
    e["name"] = f.name;
    e["feature"] = f.feature;
    e["rows"] = f.rows;
    e["fired"] = f.fired;
    e["max_activation"] = f.maxActivation;
    py::list tops;
    for (const FeatureDashboard::Context& c : f.top) {
        py::dict t;
        t["activation"] = c.activation;
        t["window"] = c.window;
        t["position"] = c.position;
        t["begin"] = c.begin;
        t["ids"] = c.ids;
        t["pieces"] = c.pieces;
        t["activations"] = c.activations;
        tops.append(t);
    }
    e["top"] = tops;
    e["histogram_edges"] = f.histogramEdges;
    e["histogram_counts"] = f.histogramCounts;
    auto reads = [](const std::vector<FeatureDashboard::Read>& v) {
        py::list l;
        for (const FeatureDashboard::Read& r : v)
            l.append(py::make_tuple(r.piece, r.logit));
        return l;
    };
    e["promoted"] = reads(f.promoted);
    e["suppressed"] = reads(f.suppressed);
    e["reading_layer"] = f.readingLayer;
    e["reading_share"] = finite(f.readingShare);
    e["relative_norm"] = finite(f.relativeNorm);
    e["relative_norm_kind"] = f.relativeNormKind;
    return e;
}

FeatureEdit makeEdit(int64_t feature, const std::string& mode, double amount, int64_t position) {
    FeatureEdit e;
    e.feature = feature;
    e.mode = mode;
    e.value = amount;
    e.position = position;
    return e;
}

py::dict editDict(const FeatureEditResult& r) {
    py::dict out;
    out["name"] = r.name;
    out["position"] = r.position;
    out["metric_clean"] = r.metricClean;
    out["metric_edited"] = r.metricEdited;
    out["change"] = r.metricEdited - r.metricClean;
    out["activation"] = r.activation;
    out["top_clean"] = r.topClean;
    out["top_edited"] = r.topEdited;
    return out;
}

py::dict qualityDict(const DictionaryQuality& q) {
    py::dict out;
    out["rows"] = q.rows;
    out["explained_variance"] = finite(q.explainedVariance);
    out["mse"] = finite(q.mse);
    out["l0"] = finite(q.l0);
    out["dead_fraction"] = finite(q.deadFraction);
    out["loss_clean"] = finite(q.lossClean);
    out["loss_spliced"] = finite(q.lossSpliced);
    out["loss_ablated"] = finite(q.lossAblated);
    out["ablation"] = DictionaryQuality::kAblation;
    out["ablation_definition"] = DictionaryQuality::kAblationDefinition;
    out["ablation_note"] = q.ablationNote;
    out["loss_recovered"] = finite(q.lossRecovered);
    out["loss_tokens"] = q.lossTokens;
    return out;
}

} // namespace

void registerFeatures(py::module_& m) {
    py::class_<Dictionary>(m, "Dictionary")
        .def_property_readonly("config", [](const Dictionary& d) { return configDict(d.config); })
        .def_property_readonly(
            "site", [](const Dictionary& d) { return d.config.site; },
            "The site the dictionary reads (\"resid.3\"; a transcoder's input site)")
        .def_property_readonly("W_enc", [](const Dictionary& d) { return toNumpy(FloatArray(d.wEnc)); })
        .def_property_readonly("b_enc", [](const Dictionary& d) { return toNumpy(FloatArray(d.bEnc)); })
        .def_property_readonly("W_dec", [](const Dictionary& d) { return toNumpy(FloatArray(d.wDec)); })
        .def_property_readonly("b_dec", [](const Dictionary& d) { return toNumpy(FloatArray(d.bDec)); })
        .def("encode",
             [](const Dictionary& d, const py::array_t<float, py::array::c_style | py::array::forcecast>& x) {
                 return toNumpy(d.encode(fromNumpy(x, "the activations")));
             })
        .def("decode",
             [](const Dictionary& d, const py::array_t<float, py::array::c_style | py::array::forcecast>& z) {
                 return toNumpy(d.decode(fromNumpy(z, "the feature activations")));
             })
        .def("feature_name", &Dictionary::featureName)
        .def(
            "edit",
            [](const Dictionary& d, const py::array_t<float, py::array::c_style | py::array::forcecast>& value,
               int64_t feature, const std::string& mode, double amount, int64_t position) {
                const FeatureEdit e = makeEdit(feature, mode, amount, position);
                return toNumpy(applyFeatureEdit(d, fromNumpy(value, "the site's value"), e));
            },
            py::arg("value"), py::arg("feature"), py::arg("mode") = "ablate", py::arg("amount") = 0.0,
            py::arg("position") = -1)
        .def(
            "edit_transcoder",
            [](const Dictionary& d, const py::array_t<float, py::array::c_style | py::array::forcecast>& input,
               const py::array_t<float, py::array::c_style | py::array::forcecast>& output, int64_t feature,
               const std::string& mode, double amount, int64_t position) {
                const FeatureEdit e = makeEdit(feature, mode, amount, position);
                return toNumpy(applyTranscoderEdit(d, fromNumpy(input, "the input site's value"),
                                                   fromNumpy(output, "the target site's value"), e));
            },
            py::arg("input"), py::arg("output"), py::arg("feature"), py::arg("mode") = "ablate",
            py::arg("amount") = 0.0, py::arg("position") = -1)
        .def("save",
             [](const Dictionary& d, const py::object& dir) {
                 saveDictionary(d, py::str(py::module_::import("os").attr("fspath")(dir)).cast<std::string>());
             })
        .def("__repr__", [](const Dictionary& d) {
            return "<gwb.features.Dictionary " + d.config.site + ": " + std::to_string(d.config.dSae) + " features, " +
                   (d.config.architecture == "topk" ? "topk k=" + std::to_string(d.config.k) : std::string("relu")) +
                   ", d_in " + std::to_string(d.config.dIn) + ">";
        });

    m.def("features_load", &loadDictionary, py::arg("dir"));
    m.def("features_parse_name", &parseFeatureName, py::arg("name"));
    m.def(
        "features_edit",
        [](PyModel& s, const Dictionary& d, int64_t feature, const std::string& mode, double amount, int64_t position,
           const std::vector<int64_t>& ids, int64_t answer, int64_t wrong, int64_t metricPosition) {
            const FeatureEdit e = makeEdit(feature, mode, amount, position);
            const std::vector<int32_t> ids32(ids.begin(), ids.end());
            Pending pending;
            const FeatureEditResult r = withoutGil(pending, [&] {
                return runFeatureEdit(s.model, d, e, ids32, static_cast<int32_t>(answer), static_cast<int32_t>(wrong),
                                      metricPosition);
            });
            return editDict(r);
        },
        py::arg("model"), py::arg("dictionary"), py::arg("feature"), py::arg("mode"), py::arg("amount"),
        py::arg("position"), py::arg("ids"), py::arg("answer"), py::arg("wrong"), py::arg("metric_position"));
    m.def("features_train_options", [] { return optionList(featureTrainOptions()); });
    m.def(
        "features_train",
        [](PyModel& s, const std::string& site, const std::vector<std::string>& files, const py::dict& options,
           const std::string& device, const std::string& stateDir, const py::object& progress,
           const std::string& targetSite) {
            FeatureTrainOptions o = trainOptions(site, files, options, device, stateDir);
            o.targetSite = targetSite;
            Pending pending;
            FeatureTrainResult r =
                withoutGil(pending, [&] { return trainDictionary(s.model, o, progressOf(pending, progress)); });
            pending.rethrowIfAny();
            return resultDict(std::move(r));
        },
        py::arg("model"), py::arg("site"), py::arg("files"), py::arg("options"), py::arg("device"),
        py::arg("state_dir"), py::arg("progress"), py::arg("target_site") = "");
    m.def(
        "features_resume",
        [](PyModel& s, const std::string& stateDir, const py::object& progress) {
            Pending pending;
            FeatureTrainResult r = withoutGil(
                pending, [&] { return resumeDictionaryTraining(s.model, stateDir, progressOf(pending, progress)); });
            pending.rethrowIfAny();
            return resultDict(std::move(r));
        },
        py::arg("model"), py::arg("state_dir"), py::arg("progress"));
    m.def(
        "features_train_on_rows",
        [](const py::array_t<float, py::array::c_style | py::array::forcecast>& rows, const std::string& site,
           const py::dict& options, int64_t deadAfterTokens, double auxCoefficient, const std::string& device,
           int64_t firstWidth) {
            FeatureTrainOptions o = trainOptions(site, {}, options, device, "");
            o.deadAfterTokens = deadAfterTokens;
            o.auxCoefficient = auxCoefficient;
            o.firstWidth = firstWidth;
            const FloatArray x = fromNumpy(rows, "rows");
            Dictionary initial;
            Pending pending;
            FeatureTrainResult r = withoutGil(pending, [&] { return trainDictionaryOnRows(x, o, &initial); });
            py::dict d = resultDict(std::move(r));
            d["initial"] = std::move(initial);
            return d;
        },
        py::arg("rows"), py::arg("site"), py::arg("options"), py::arg("dead_after_tokens"), py::arg("aux_coefficient"),
        py::arg("device"), py::arg("first_width") = 0);
    m.def("features_relative_norms", &relativeDecoderNorms, py::arg("crosscoder"));
    m.def(
        "features_crosscoder_train",
        [](PyModel& first, PyModel& second, const std::string& site, const std::string& secondSite,
           const std::vector<std::string>& files, const py::dict& options, const std::string& device,
           const std::string& stateDir, const py::object& progress) {
            FeatureTrainOptions o = trainOptions(site, files, options, device, stateDir);
            o.secondSite = secondSite;
            Pending pending;
            FeatureTrainResult r = withoutGil(
                pending, [&] { return trainCrosscoder(first.model, second.model, o, progressOf(pending, progress)); });
            pending.rethrowIfAny();
            return resultDict(std::move(r));
        },
        py::arg("first"), py::arg("second"), py::arg("site"), py::arg("second_site"), py::arg("files"),
        py::arg("options"), py::arg("device"), py::arg("state_dir"), py::arg("progress"));
    m.def(
        "features_crosscoder_eval",
        [](PyModel& first, PyModel& second, const Dictionary& d, const std::vector<std::string>& files, int64_t context,
           int64_t maxWindows) {
            Pending pending;
            const std::vector<DictionaryQuality> qs = withoutGil(
                pending, [&] { return evaluateCrosscoder(first.model, second.model, d, files, context, maxWindows); });
            py::list out;
            for (const DictionaryQuality& q : qs)
                out.append(qualityDict(q));
            return out;
        },
        py::arg("first"), py::arg("second"), py::arg("dictionary"), py::arg("files"), py::arg("context"),
        py::arg("max_windows"));
    m.def(
        "features_eval",
        [](PyModel& s, const Dictionary& d, const std::vector<std::string>& files, int64_t context,
           int64_t maxWindows) {
            Pending pending;
            const DictionaryQuality q =
                withoutGil(pending, [&] { return evaluateDictionary(s.model, d, files, context, maxWindows); });
            return qualityDict(q);
        },
        py::arg("model"), py::arg("dictionary"), py::arg("files"), py::arg("context"), py::arg("max_windows"));
    m.def(
        "features_train_transcoders",
        [](PyModel& s, const std::string& dir, const std::vector<std::string>& files, const py::dict& options,
           const std::string& device, const py::object& progress) {
            const FeatureTrainOptions o = trainOptions("", files, options, device, "");
            const int64_t layers = s.model.config().nLayers;
            Pending pending;
            const bool complete = withoutGil(pending, [&] {
                return trainTranscoderSet(s.model, o, dir, [&](int layer, const FeatureTrainProgress& p) {
                    const double within = p.steps > 0 ? static_cast<double>(p.step) / p.steps : 1.0;
                    return reportProgress(pending, progress, (layer + within) / static_cast<double>(layers));
                });
            });
            pending.rethrowIfAny();
            return complete;
        },
        py::arg("model"), py::arg("dir"), py::arg("files"), py::arg("options"), py::arg("device"), py::arg("progress"));
    m.def(
        "features_load_transcoders",
        [](const std::string& dir, PyModel* model) {
            TranscoderSet set = loadTranscoderSet(dir, model ? &model->model : nullptr);
            return set.layers;
        },
        py::arg("dir"), py::arg("model") = static_cast<PyModel*>(nullptr));
    m.def(
        "features_summaries",
        [](PyModel& s, const Dictionary& d, const std::vector<std::string>& files, const std::vector<int64_t>& features,
           int64_t top, int64_t before, int64_t after, int64_t context, int64_t maxWindows, PyModel* second) {
            Pending pending;
            const std::vector<FeatureDashboard> dashboards = withoutGil(pending, [&] {
                return featureDashboards(s.model, d,
                                         summarizeFeatures(s.model, d, files, features, top, before, after, context,
                                                           maxWindows, nullptr, second ? &second->model : nullptr));
            });
            py::list out;
            for (const FeatureDashboard& f : dashboards)
                out.append(dashboardDict(f));
            return out;
        },
        py::arg("model"), py::arg("dictionary"), py::arg("files"), py::arg("features"), py::arg("top"),
        py::arg("before"), py::arg("after"), py::arg("context"), py::arg("max_windows"),
        py::arg("second") = static_cast<PyModel*>(nullptr));
    m.def(
        "features_export",
        [](PyModel& s, const Dictionary& d, const std::vector<std::string>& files, const std::vector<int64_t>& features,
           int64_t top, int64_t context, int64_t maxWindows, PyModel* second, const std::string& dictionaryPath,
           const std::string& out) {
            Pending pending;
            withoutGil(pending, [&] {
                const std::string doc = featureDashboardsJson(
                    featureDashboards(s.model, d,
                                      summarizeFeatures(s.model, d, files, features, top, 8, 4, context, maxWindows,
                                                        nullptr, second ? &second->model : nullptr)),
                    d, s.model.displayName(), dictionaryPath, second ? second->model.displayName() : std::string());
                writeBytesAtomic(out, doc.data(), doc.size());
            });
        },
        py::arg("model"), py::arg("dictionary"), py::arg("files"), py::arg("features"), py::arg("top"),
        py::arg("context"), py::arg("max_windows"), py::arg("second"), py::arg("dictionary_path"), py::arg("out"));
    m.def(
        "features_crosscoder_edit",
        [](PyModel& first, PyModel& second, const Dictionary& d, int64_t feature, const std::string& mode,
           double amount, int64_t position, const std::vector<int64_t>& ids, int64_t answer, int64_t wrong,
           int64_t metricPosition) {
            const FeatureEdit e = makeEdit(feature, mode, amount, position);
            const std::vector<int32_t> ids32(ids.begin(), ids.end());
            Pending pending;
            const std::vector<FeatureEditResult> rs = withoutGil(pending, [&] {
                return runCrosscoderEdit(first.model, second.model, d, e, ids32, static_cast<int32_t>(answer),
                                         static_cast<int32_t>(wrong), metricPosition);
            });
            py::list out;
            for (const FeatureEditResult& r : rs)
                out.append(editDict(r));
            return out;
        },
        py::arg("first"), py::arg("second"), py::arg("dictionary"), py::arg("feature"), py::arg("mode"),
        py::arg("amount"), py::arg("position"), py::arg("ids"), py::arg("answer"), py::arg("wrong"),
        py::arg("metric_position"));
    m.def(
        "features_site_activations",
        [](PyModel& s, const std::string& site, const std::vector<std::string>& files, int64_t context,
           int64_t maxRows) {
            Pending pending;
            SiteActivations a =
                withoutGil(pending, [&] { return readSiteActivations(s.model, site, files, context, maxRows); });
            py::dict out;
            out["rows"] = toNumpy(std::move(a.rows));
            out["tokens"] = a.tokens;
            out["window"] = a.window;
            out["position"] = a.position;
            return out;
        },
        py::arg("model"), py::arg("site"), py::arg("files"), py::arg("context"), py::arg("max_rows"));
}

} // namespace gwb::python
