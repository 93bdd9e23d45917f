// gwb._gwb: the engine's std-only API for Python (pybind11). The pure-Python layer (gwb/__init__.py)
// builds the public API on it; names and arrays are those of the command line's NPZ files.
//
// Threads: the GIL is released while the engine works and taken again to call a hook or report
// progress. A Python exception raised in a hook, and Ctrl-C seen by a progress report, stop the
// engine's work and are raised again, as they were, when it has returned.

#include "gwb/engine/effect_claims.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/file_error.h"
#include "gwb/engine/corpus_run.h"
#include "gwb/engine/generate.h"
#include "gwb/engine/hooks.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/patch_file.h"
#include "gwb/engine/path_file.h"
#include "gwb/engine/prompt_run.h"
#include "gwb/engine/patch_input.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patch_pairs_run.h"
#include "gwb/engine/patching.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/engine/trace_npz.h"
#include "gwb/engine/trace_options.h"
#include "gwb/engine/tracer.h"

#include "bindings_common.h"
#include "option_table.h"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace gwb::engine;
using namespace gwb::python;

namespace {

py::dict membersToDict(std::vector<NpzMember>&& members) {
    py::dict out;
    for (NpzMember& m : members)
        out[py::str(m.name)] = std::visit([](auto& a) { return toNumpy(std::move(a)); }, m.values);
    return out;
}

/// Models whose forward pass with hooks is running on this thread: a hook that runs the same
/// model again would wait for itself (the engine runs one pass of a model at a time).
thread_local std::vector<const void*> t_hooked;

void refuseReentry(const Model& m) {
    for (const void* p : t_hooked)
        if (p == &m.impl())
            throw std::runtime_error("a hook cannot use the model it is hooked into while that model runs (keep "
                                     "values in the hook, run the model afterwards; a second gwb.load of the file "
                                     "is an independent model)");
}

struct HookedRun {
    explicit HookedRun(const Model& m) { t_hooked.push_back(&m.impl()); }
    ~HookedRun() { t_hooked.pop_back(); }
    HookedRun(const HookedRun&) = delete;
    HookedRun& operator=(const HookedRun&) = delete;
};

py::dict reportDict(const ImportReport& r) {
    py::dict d;
    d["layout"] = r.layout;
    d["layout_source"] = r.layoutSource;
    d["detection"] = r.detection;
    d["flags"] = r.flags;
    d["format"] = r.format;
    d["metadata"] = r.metadata;
    d["notes"] = r.notes;
    return d;
}

PyModel loadModel(const std::string& path, const std::optional<std::string>& layout,
                  const std::optional<std::string>& vocab, const std::string& device,
                  const std::optional<std::string>& norm, const std::optional<std::string>& offsets,
                  std::optional<int64_t> heads) {
    PyModel out;
    const bool gwb = path.size() >= 4 && path.compare(path.size() - 4, 4, ".gwb") == 0;
    const bool overrides = norm || offsets || heads;
    if (gwb && overrides)
        throw py::value_error(path + ": norm, offsets and heads apply to imported checkpoints, not to a .gwb file");
    std::optional<ImportReport> report;
    {
        py::gil_scoped_release release;
        if (gwb && !layout && !vocab) {
            out.model = Model::load(path, device);
        } else if (!layout && !vocab && !overrides) { // as the window opens a file
            ImportedModel m = loadOrImportModel(path, device);
            out.model = std::move(m.model);
            report = std::move(m.report);
        } else {
            ImportOptions o;
            o.device = device;
            if (layout) {
                if (layout->find('/') != std::string::npos || layout->find(".json") != std::string::npos)
                    o.layoutFile = *layout;
                else
                    o.layout = *layout;
            }
            if (norm) o.norm = normFromName(*norm);
            if (offsets) o.offsetSchedule = *offsets;
            if (heads) o.nHeads = *heads;
            if (vocab)
                o.vocabPath = *vocab;
            else if (const FoundVocabulary v = findVocabulary(path); !v.path.empty())
                o.vocabPath = v.path;
            ImportedModel m = importCheckpoint(path, o);
            out.model = std::move(m.model);
            report = std::move(m.report);
        }
    }
    if (report) out.report = reportDict(*report);
    return out;
}

/// The ids as int32 after checking each is in the vocabulary (ValueError naming the first that is not).
std::vector<int32_t> vocabIds(const Model& m, const std::vector<int64_t>& ids) {
    const int64_t V = m.config().vocabSize;
    std::vector<int32_t> out;
    out.reserve(ids.size());
    for (int64_t id : ids) {
        if (id < 0 || id >= V)
            throw py::value_error("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                  std::to_string(V - 1) + ")");
        out.push_back(static_cast<int32_t>(id));
    }
    return out;
}

TokenizerPtr needTokenizer(const Model& m, const char* what) {
    TokenizerPtr t = m.tokenizer();
    if (!t) throw std::invalid_argument(std::string("the model has no tokenizer to ") + what + ": give token ids");
    return t;
}

/// A hook's return value as a float array of the value's shape, or nothing.
std::optional<FloatArray> hookResult(const py::object& result, const std::string& name, const FloatArray& in) {
    if (result.is_none()) return std::nullopt;
    const py::array a = py::array::ensure(result);
    if (!a)
        throw py::value_error("hook '" + name + "' returned a " + std::string(Py_TYPE(result.ptr())->tp_name) +
                              ", not an array; expected floats of shape " + shapeText(in.shape) + " or None");
    const char kind = a.dtype().kind();
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    if (kind != 'f')
        throw py::value_error("hook '" + name + "' returned an array of dtype " +
                              py::str(a.dtype()).cast<std::string>() + " and shape " + shapeText(shape) +
                              "; expected floats of shape " + shapeText(in.shape));
    if (shape != in.shape)
        throw py::value_error("hook '" + name + "' returned shape " + shapeText(shape) + "; expected shape " +
                              shapeText(in.shape) + " (the value it was given)");
    auto f = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
    FloatArray out;
    out.shape = shape;
    out.data.assign(f.data(), f.data() + f.size());
    return out;
}

/// analysis=: True / False, or the parts to compute by name (the core part always).
unsigned analysisPartsOf(const py::object& analysis, bool& any) {
    any = true;
    if (py::isinstance<py::bool_>(analysis) || analysis.is_none()) {
        any = !analysis.is_none() && analysis.cast<bool>();
        return kAnalysisAll;
    }
    // The parts by their Python names, once for the lookup and both messages.
    static const std::vector<std::pair<std::string, unsigned>> kParts = {
        {"core", kAnalysisCore},
        {"readout", kAnalysisReadout},
        {"layer_angles", kAnalysisLayerAngles},
        {"reading_subspaces", kAnalysisReadingSubspaces},
        {"prompt_subspaces", kAnalysisPromptSubspaces}};
    std::string names;
    for (const auto& [name, bit] : kParts)
        names += (names.empty() ? "" : ", ") + name;
    if (py::isinstance<py::str>(analysis))
        throw py::type_error("analysis= takes True, False or a list of parts (" + names + "), not a string");
    unsigned parts = kAnalysisCore;
    for (const py::handle& h : analysis) {
        const std::string name = py::str(h).cast<std::string>();
        const auto it = std::find_if(kParts.begin(), kParts.end(), [&](const auto& p) { return p.first == name; });
        if (it == kParts.end()) throw py::value_error("analysis part '" + name + "' is not one of: " + names);
        parts |= it->second;
    }
    return parts;
}

py::dict traceModel(PyModel& self, const py::object& input, bool logits, const py::object& analysisArg, int lensK,
                    int64_t maxTokens, const py::object& progress) {
    bool analysis = false;
    const unsigned parts = analysisPartsOf(analysisArg, analysis);
    refuseReentry(self.model);
    TraceOptions o;
    o.keepLogits = logits;
    o.lensTopK = lensK;
    o.maxTokens = maxTokens;
    checkOptions(traceOptions(), o); // the sentence `gwb trace` prints
    Pending pending;
    std::atomic<bool> cancel{false};
    const ProgressFn report = [&](int64_t done, int64_t total) {
        return reportProgress(pending, progress, total > 0 ? double(done) / double(total) : 0.0);
    };
    const bool text = py::isinstance<py::str>(input);
    std::string prompt;
    std::vector<int32_t> ids;
    if (text)
        prompt = input.cast<std::string>();
    else
        ids = vocabIds(self.model, input.cast<std::vector<int64_t>>());
    TraceFile file = withoutGil(pending, [&] {
        if (text) needTokenizer(self.model, "read the prompt");
        if (!text && ids.empty()) throw std::invalid_argument("no token ids given");
        TracePtr t =
            text ? trace(self.model, prompt, o, report, &cancel) : traceIds(self.model, ids, o, report, &cancel);
        if (!text && t->droppedTokens > 0) {
            const int64_t limit = maxTokens > 0 ? std::min(maxTokens, t->config.maxLen) : t->config.maxLen;
            throw std::invalid_argument("the prompt is " + std::to_string(ids.size()) +
                                        " tokens, longer than the model's context (" + std::to_string(limit) +
                                        "); pass max_tokens to trace the first tokens only");
        }
        TraceFile f = traceFile(*t, analysis, parts);
        // A long text is traced up to the limit, as the window does; the warnings say which cut it.
        if (const std::string note = truncationNotice(*t, "", maxTokens, "max_tokens"); !note.empty())
            f.warnings.insert(f.warnings.begin(), note);
        return f;
    });
    py::dict out;
    out["arrays"] = membersToDict(std::move(file.arrays));
    out["meta"] = file.metaJson;
    out["warnings"] = file.warnings;
    return out;
}

py::array runModel(PyModel& self, const std::vector<int64_t>& ids, const py::dict& hooks) {
    refuseReentry(self.model);
    const HookedRun running(self.model);
    Pending pending;
    std::map<std::string, SiteHook> table;
    for (const auto& [key, fn] : hooks) {
        const std::string name = py::str(key).cast<std::string>();
        if (!PyCallable_Check(fn.ptr())) throw py::type_error("hook '" + name + "' is not callable");
        py::object f = py::reinterpret_borrow<py::object>(fn);
        table[name] = [f, name, &pending](const FloatArray& value, const std::string&) -> std::optional<FloatArray> {
            py::gil_scoped_acquire gil;
            try {
                FloatArray copy = value;
                py::array arr = toNumpy(std::move(copy));
                return hookResult(f(arr, name), name, value);
            } catch (py::error_already_set&) {
                pending.error = std::current_exception();
                throw Stopped();
            } catch (py::builtin_exception&) {
                pending.error = std::current_exception();
                throw Stopped();
            }
        };
    }
    std::vector<std::string> warnings;
    FloatArray logits = withoutGil(pending, [&] { return runWithHooks(self.model, ids, table, &warnings); });
    // An ill-defined result (pair planes of rounding noise after a zeroed residual) is said as a
    // Python warning, which a caller can turn into an error.
    for (const std::string& w : warnings)
        if (PyErr_WarnEx(PyExc_RuntimeWarning, w.c_str(), 1) != 0) throw py::error_already_set();
    return toNumpy(std::move(logits));
}

py::dict patchModel(PyModel& self, const PatchText& text, const std::string& method, int layer, int offset, int head,
                    const std::string& modelFile, const py::object& progress, double minDifference) {
    refuseReentry(self.model);
    checkMinDifference(minDifference);
    Pending pending;
    PatchFileContext context;
    PatchSweep sweep = withoutGil(pending, [&] {
        PatchRequest r = preparePatchRequest(self.model, text);
        context.answerId = r.answer;
        context.wrongId = r.wrong;
        r.layer = layer;
        r.offset = offset;
        r.head = head;
        r.minDifference = minDifference;
        if (method == "attribution") return attributionSweep(self.model, r);
        if (method != "exact") throw std::invalid_argument("method '" + method + "' is not one of: exact, attribution");
        return runPatchSweep(self.model, r, [&](double f) { return reportProgress(pending, progress, f); });
    });
    // meta.json as `gwb patch` writes it (one writer: gwb/engine/patch_file.h).
    context.modelFile = modelFile;
    context.cleanPrompt = text.clean;
    context.corruptPrompt = text.corrupt;
    context.answer = text.answer;
    context.wrong = text.wrong;
    for (const auto& [name, value] : {std::pair<const char*, int>{"layer", layer}, {"offset", offset}, {"head", head}})
        if (value >= 0) context.selection.emplace_back(name, value);
    py::dict out;
    out["arrays"] = membersToDict(patchSweepArrays(sweep));
    out["meta_json"] = patchMetaJson(self.model, sweep, context);
    return out;
}

py::dict pathsModel(PyModel& self, const PatchText& text, const std::vector<std::string>& senders,
                    int64_t senderPosition, bool linear, const std::string& modelFile, const py::object& progress,
                    double minDifference) {
    refuseReentry(self.model);
    checkMinDifference(minDifference);
    Pending pending;
    LinearResult lin;
    PathRequest q;
    PathResult res = withoutGil(pending, [&] {
        PatchText t = text;
        t.site = "resid";
        const PatchRequest r = preparePatchRequest(self.model, t);
        q.clean = r.clean;
        q.corrupt = r.corrupt;
        q.answer = r.answer;
        q.wrong = r.wrong;
        q.position = r.position;
        q.senders = senders;
        q.senderPosition = senderPosition;
        q.minDifference = minDifference;
        if (linear) lin = linearAttribution(self.model, q);
        return pathPatching(self.model, q, [&](double f) { return reportProgress(pending, progress, f); });
    });
    // The arrays and meta.json `gwb paths` writes (one writer: gwb/engine/path_file.h).
    PathFileContext context;
    context.modelFile = modelFile;
    context.cleanPrompt = text.clean;
    context.corruptPrompt = text.corrupt;
    context.answer = text.answer;
    context.wrong = text.wrong;
    py::dict out;
    out["arrays"] = membersToDict(pathArrays(res, linear ? &lin : nullptr));
    out["meta_json"] = pathMetaJson(self.model, q, res, context, linear ? &lin : nullptr);
    return out;
}

/// A pairs file's paths (`gwb paths --pairs`: the engine's computePathPairs) from the file's text
/// (`csv` picks the format), as arrays and meta.json, without a file in between.
py::dict pathsPairsModel(PyModel& self, const std::string& modelFile, const std::string& pairsText, bool csv,
                         const std::string& pairsName, const std::vector<std::string>& senders,
                         const std::string& receivers, int bootstrap, uint64_t seed, const py::object& progress,
                         double minDifference) {
    refuseReentry(self.model);
    checkMinDifference(minDifference);
    checkBootstrap(bootstrap);
    if (receivers != "all" && receivers != "logits" && receivers != "resid")
        throw std::invalid_argument("receivers must be logits, resid or all, got '" + receivers + "'");
    PathRequest shape;
    shape.senders = senders;
    shape.logits = receivers != "resid";
    shape.resid = receivers != "logits";
    shape.minDifference = minDifference;
    Pending pending;
    const PathPairsResult r = withoutGil(pending, [&] {
        return computePathPairs(self.model, parsePairs(pairsText, csv), shape, bootstrap, seed,
                                [&](double f) { return reportProgress(pending, progress, f); });
    });
    py::dict out;
    out["arrays"] = membersToDict(pathPairsArrays(r));
    out["meta_json"] = pathPairsMetaJson(self.model, r, modelFile, pairsName);
    return out;
}

/// A pairs file swept as `gwb patch --pairs` does (the engine's computePairs), as the arrays and
/// meta.json that command writes, without a file in between: the pairs come from the file at
/// `pairsPath`, else from `pairsText` (`csv` picks the format; `pairsName` goes into meta.json).
/// Ctrl-C stops after the pairs being run and raises KeyboardInterrupt.
py::dict patchPairsModel(PyModel& self, const std::string& modelFile, const std::string& pairsPath,
                         const std::string& pairsText, bool csv, const std::string& pairsName, const std::string& site,
                         const std::string& mode, int64_t position, int layer, int offset, int head,
                         const std::string& method, int bootstrap, uint64_t seed, int check, const py::object& progress,
                         double minDifference) {
    refuseReentry(self.model);
    checkMinDifference(minDifference);
    if (method != "exact" && method != "attribution")
        throw std::invalid_argument("method '" + method + "' is not one of: exact, attribution");
    checkBootstrap(bootstrap);
    checkOptionValue(causalOptions()[3], check);
    if (check > 0 && method != "attribution") throw std::invalid_argument("check goes with method='attribution'");
    PairsRunOptions o;
    o.modelFile = modelFile;
    o.pairsPath = pairsPath.empty() ? pairsName : pairsPath;
    o.site = site;
    o.mode = mode;
    o.position = position;
    o.layer = layer;
    o.offset = offset;
    o.head = head;
    o.bootstrap = bootstrap;
    o.seed = seed;
    o.attribution = method == "attribution";
    o.check = check;
    o.minDifference = minDifference;
    Pending pending;
    PairsResult r = withoutGil(pending, [&] {
        const PairsFile file = pairsPath.empty() ? parsePairs(pairsText, csv) : readPairsFile(pairsPath);
        return computePairs(self.model, file, o, [&](double f) { return reportProgress(pending, progress, f); });
    });
    pending.rethrowIfAny();
    py::dict out;
    out["arrays"] = membersToDict(pairsResultArrays(r, bootstrap, seed));
    out["meta_json"] = pairsResultMetaJson(r, bootstrap, seed);
    return out;
}

/// Corpus statistics (gwb stats) written to `out`; Ctrl-C stops after the current window, the
/// partial statistics (complete: false) are written, then KeyboardInterrupt is raised.
py::list statsModel(PyModel& self, PyModel* baseline, const std::vector<std::string>& files, const py::dict& options,
                    const std::string& out, const py::object& progress) {
    refuseReentry(self.model);
    if (baseline) refuseReentry(baseline->model);
    CorpusOptions o;
    o.files = files;
    applyOptions(corpusOptions(), options, o, "stats");
    Pending pending;
    std::vector<std::string> warnings;
    CorpusStats stats = withoutGil(pending, [&] {
        CorpusStats st = runCorpus(
            self.model, baseline ? &baseline->model : nullptr, o,
            [&](const CorpusProgress& p) {
                return reportProgress(pending, progress,
                                      p.windowsTotal > 0 ? double(p.windowsDone) / double(p.windowsTotal) : 0.0);
            },
            nullptr, [&](const std::string& w) { warnings.push_back(w); });
        st.write(out);
        return st;
    });
    pending.rethrowIfAny();
    py::list w;
    for (const std::string& s : warnings)
        w.append(s);
    return w;
}

/// The engine's FileError (a file it could not write) raised as the OSError subclass Python gives
/// its errno (PermissionError, FileNotFoundError, ...), the message as its text and errno set: the
/// family the package's own checks of an output path raise (gwb/results.py _os_error).
void raiseFileError(const FileError& e) {
    const py::object probe = py::reinterpret_borrow<py::object>(PyExc_OSError)(e.errorNumber, "");
    const py::object cls = py::type::of(probe);
    py::object error = cls(e.what());
    error.attr("errno") = e.errorNumber;
    PyErr_SetObject(cls.ptr(), error.ptr());
}

} // namespace

PYBIND11_MODULE(_gwb, m) {
    m.doc() = "Grassmann Workbench engine (compiled part of the gwb package; use `import gwb`).";
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const FileError& e) {
            raiseFileError(e);
        }
    });

    py::class_<PatchText>(m, "PatchText")
        .def(py::init<>())
        .def_readwrite("clean", &PatchText::clean)
        .def_readwrite("corrupt", &PatchText::corrupt)
        .def_readwrite("answer", &PatchText::answer)
        .def_readwrite("wrong", &PatchText::wrong)
        .def_readwrite("site", &PatchText::site)
        .def_readwrite("mode", &PatchText::mode)
        .def_readwrite("position", &PatchText::position);

    py::class_<PyModel>(m, "Model")
        .def_static("load", &loadModel, py::arg("path"), py::arg("layout") = py::none(), py::arg("vocab") = py::none(),
                    py::arg("device") = "auto", py::arg("norm") = py::none(), py::arg("offsets") = py::none(),
                    py::arg("heads") = py::none())
        .def_property_readonly("config_json", [](const PyModel& s) { return configToJson(s.model.config()); })
        .def_property_readonly("kind",
                               [](const PyModel& s) {
                                   return s.model.config().kind == ModelKind::Grassmann ? "grassmann" : "transformer";
                               })
        .def_property_readonly("report", [](const PyModel& s) { return s.report; })
        .def_property_readonly("path", [](const PyModel& s) { return s.model.path(); })
        .def_property_readonly("name", [](const PyModel& s) { return s.model.displayName(); })
        .def_property_readonly("device", [](const PyModel& s) { return s.model.device(); })
        .def_property_readonly("summary", [](const PyModel& s) { return s.model.summary(); })
        .def_property_readonly("parameter_count", [](const PyModel& s) { return s.model.parameterCount(); })
        .def_property_readonly("has_tokenizer", [](const PyModel& s) { return static_cast<bool>(s.model.tokenizer()); })
        .def("save",
             [](const PyModel& s, const std::string& path) {
                 py::gil_scoped_release release;
                 s.model.save(path);
             })
        .def("layer_offsets", [](const PyModel& s) { return s.model.config().layerOffsets; })
        .def("encode",
             [](const PyModel& s, const std::string& text) {
                 checkUtf8(text);
                 const auto ids = needTokenizer(s.model, "encode text")->encodeIds(text);
                 return std::vector<int64_t>(ids.begin(), ids.end());
             })
        .def("decode",
             [](const PyModel& s, const std::vector<int64_t>& ids) {
                 return needTokenizer(s.model, "decode ids")->decode(vocabIds(s.model, ids));
             })
        .def("pieces",
             [](const PyModel& s, const std::vector<int64_t>& ids) {
                 vocabIds(s.model, ids);
                 return pieceTexts(s.model, ids);
             })
        .def("piece_id",
             [](const PyModel& s, const std::string& piece) { return pieceId(s.model, piece, "the piece"); })
        .def("site_names", [](const PyModel& s) { return hookSiteNames(s.model); })
        .def("site_shape",
             [](const PyModel& s, const std::string& name, int64_t T) { return hookSiteShape(s.model, name, T); })
        .def("parameters",
             [](const PyModel& s) {
                 py::dict out;
                 for (auto& [name, a] : s.model.parameters())
                     out[py::str(name)] = toNumpy(FloatArray(a));
                 return out;
             })
        .def("trace", &traceModel, py::arg("input"), py::arg("logits") = false, py::arg("analysis") = false,
             py::arg("lens_k") = 5, py::arg("max_tokens") = 0, py::arg("progress") = py::none())
        .def("run", &runModel, py::arg("ids"), py::arg("hooks") = py::dict())
        .def("patch", &patchModel, py::arg("text"), py::arg("method") = "exact", py::arg("layer") = -1,
             py::arg("offset") = -1, py::arg("head") = -1, py::arg("model_file") = "", py::arg("progress") = py::none(),
             py::arg("min_difference") = kDefaultMinDifference)
        .def("paths", &pathsModel, py::arg("text"), py::arg("senders") = std::vector<std::string>{},
             py::arg("sender_position") = -1, py::arg("linear") = false, py::arg("model_file") = "",
             py::arg("progress") = py::none(), py::arg("min_difference") = kDefaultMinDifference)
        .def("paths_pairs", &pathsPairsModel, py::arg("model_file"), py::arg("pairs_text"), py::arg("csv"),
             py::arg("pairs_name"), py::arg("senders") = std::vector<std::string>{}, py::arg("receivers") = "all",
             py::arg("bootstrap") = 1000, py::arg("seed") = 0, py::arg("progress") = py::none(),
             py::arg("min_difference") = kDefaultMinDifference)
        .def("patch_pairs", &patchPairsModel, py::arg("model_file"), py::arg("pairs_path"), py::arg("pairs_text"),
             py::arg("csv"), py::arg("pairs_name"), py::arg("site"), py::arg("mode") = "", py::arg("position") = -1,
             py::arg("layer") = -1, py::arg("offset") = -1, py::arg("head") = -1, py::arg("method") = "exact",
             py::arg("bootstrap") = 1000, py::arg("seed") = 0, py::arg("check") = 0, py::arg("progress") = py::none(),
             py::arg("min_difference") = kDefaultMinDifference)
        .def("stats", &statsModel, py::arg("baseline"), py::arg("files"), py::arg("options"), py::arg("out"),
             py::arg("progress") = py::none())
        .def(
            "generate",
            [](PyModel& s, const std::vector<int64_t>& prompt, const py::dict& options, bool greedy) {
                GenerateOptions o;
                o.greedy = greedy;
                applyOptions(generateOptions(), options, o, "generate");
                refuseReentry(s.model);
                std::vector<int32_t> ids(prompt.begin(), prompt.end());
                Pending pending;
                std::atomic<bool> cancel{false};
                GenerateResult r = withoutGil(pending, [&] {
                    return generate(s.model, ids, o,
                                    [&](int32_t, int64_t) { return reportProgress(pending, py::none(), 0.0); });
                });
                pending.rethrowIfAny();
                return std::vector<int64_t>(r.ids.begin(), r.ids.end());
            },
            py::arg("prompt"), py::arg("options"), py::arg("greedy") = false);

    // For scripts/bench --python: the same work timed in C++ inside this process (no Python objects
    // made), so that it can be interleaved call by call with the Python API's.
    m.def(
        "_time_cpp",
        [](PyModel& s, const std::string& what, const std::vector<int64_t>& ids) {
            py::gil_scoped_release release;
            // The result is freed inside the timed region, as the Python call's is when dropped.
            const auto t0 = std::chrono::steady_clock::now();
            if (what == "trace") {
                const std::vector<int32_t> ids32(ids.begin(), ids.end());
                const TraceFile f = traceFile(*traceIds(s.model, ids32), false);
                (void)f;
            } else if (what == "forward") {
                const FloatArray logits = runWithHooks(s.model, ids);
                (void)logits;
            } else {
                throw std::invalid_argument("_time_cpp: trace or forward");
            }
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        },
        py::arg("model"), py::arg("what"), py::arg("ids"));
    registerFeatures(m);
    registerGraph(m);
    registerLens(m);
    registerFigure(m);
    m.attr("__version__") = GWB_VERSION; // CMakeLists.txt's project(... VERSION), as `gwb --version`
    m.def("bundled_dirs_hint", [] { return std::string(GWB_SOURCE_DIR "/resources/models"); });
    m.def("builtin_layouts", &builtinLayoutNames);
    // The causal commands' shared options (min_difference, bootstrap, seed, check): the table, and the
    // check every patch and paths call makes first, with the command line's sentences.
    m.def("causal_options", [] { return optionList(causalOptions()); });
    m.def(
        "check_causal_options",
        [](const py::dict& options) {
            CausalOptions c;
            applyOptions(causalOptions(), options, c, "a causal run");
            return optionValues(causalOptions(), c);
        },
        py::arg("options"));
}
