#include "import/import_tensor_file.h"

#include "import/grasslm_file.h"

#include "import/zip_reader.h"

#include "gwb/engine/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace gwb::engine {
namespace {

using K = PickleValue::Kind;

template <typename T> T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

bool isFloating(ScalarType t) {
    return t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16 ||
           t == ScalarType::BFloat16;
}

std::string scalarText(const PickleDocument& doc, PickleId id) {
    const PickleValue& v = doc.at(id);
    switch (v.kind) {
    case K::None:
        return "None";
    case K::Bool:
        return v.boolean ? "true" : "false";
    case K::Int:
        return std::to_string(v.integer);
    case K::Float: {
        std::ostringstream s;
        s.precision(10);
        s << v.number;
        return s.str();
    }
    case K::String:
        return v.text;
    case K::Object:
        // numpy.core.multiarray.scalar(dtype('f8'), 8 raw bytes): what np.float64 pickles to.
        if (v.text.find("multiarray.scalar") != std::string::npos && v.items.size() == 2) {
            const PickleValue& dt = doc.at(v.items[0]);
            const PickleValue& raw = doc.at(v.items[1]);
            if (dt.kind == K::Object && !dt.items.empty() && raw.kind == K::Bytes) {
                const PickleValue& code = doc.at(dt.items[0]);
                const auto* p = reinterpret_cast<const uint8_t*>(raw.text.data());
                if (code.kind == K::String && code.text == "f8" && raw.text.size() == 8)
                    return std::to_string(load<double>(p));
                if (code.kind == K::String && code.text == "f4" && raw.text.size() == 4)
                    return std::to_string(load<float>(p));
                if (code.kind == K::String && code.text == "i8" && raw.text.size() == 8)
                    return std::to_string(load<int64_t>(p));
            }
        }
        return "<" + v.text + ">";
    default:
        return "";
    }
}

bool isScalar(const PickleValue& v) {
    return v.kind == K::None || v.kind == K::Bool || v.kind == K::Int || v.kind == K::Float || v.kind == K::String ||
           (v.kind == K::Object && v.text.find("scalar") != std::string::npos);
}

/// "1,2,4" for a list or tuple of integers (offset lists in saved arguments); "" otherwise.
std::string intListText(const PickleDocument& doc, const PickleValue& v) {
    if ((v.kind != K::List && v.kind != K::Tuple) || v.items.empty() || v.items.size() > 4096) return "";
    std::string s;
    for (PickleId id : v.items) {
        const PickleValue& e = doc.at(id);
        if (e.kind != K::Int) return "";
        s += (s.empty() ? "" : ",") + std::to_string(e.integer);
    }
    return s;
}

/// Scalars (and integer lists) of the root dict and of plain-data records one level below it
/// (args.lr, config.window_offsets, ...).
void collectMetadata(const PickleDocument& doc, PickleId root, PickleId stateDict, TensorFile& out) {
    const PickleValue& r = doc.at(root);
    if (r.kind != K::Dict || root == stateDict) return;
    for (const auto& [k, v] : r.entries) {
        const PickleValue& key = doc.at(k);
        if (key.kind != K::String || v == stateDict) continue;
        const PickleValue& val = doc.at(v);
        if (isScalar(val)) {
            out.metadata[key.text] = scalarText(doc, v);
            continue;
        }
        PickleId fields = val.kind == K::Dict ? v : (val.kind == K::Object ? val.state : -1);
        if (fields < 0 || doc.at(fields).kind != K::Dict) continue;
        for (const auto& [fk, fv] : doc.at(fields).entries)
            if (doc.at(fk).kind == K::String) {
                if (isScalar(doc.at(fv)))
                    out.metadata[key.text + "." + doc.at(fk).text] = scalarText(doc, fv);
                else if (const std::string list = intListText(doc, doc.at(fv)); !list.empty())
                    out.metadata[key.text + "." + doc.at(fk).text] = list;
            }
    }
}

/// Copies a strided view out of a storage record into a dense block.
RawTensor materialize(const PickleTensorRef& t, std::string_view storage, bool swapBytes, uint64_t& budget) {
    const auto elem = static_cast<uint64_t>(scalarTypeSize(t.dtype));
    if (storage.size() / elem < static_cast<uint64_t>(t.storageNumel))
        throw TensorFileError("storage '" + t.storageKey + "' holds " + std::to_string(storage.size()) +
                              " bytes, fewer than its " + std::to_string(t.storageNumel) + " " +
                              scalarTypeName(t.dtype) + " elements");
    RawTensor out;
    out.dtype = t.dtype;
    out.shape = t.shape;
    uint64_t n = 1;
    for (int64_t s : t.shape) {
        if (s != 0 && n > (uint64_t{1} << 40) / static_cast<uint64_t>(s))
            throw TensorFileError("tensor " + shapeText(t.shape) + " is too large");
        n *= static_cast<uint64_t>(s);
    }
    // Views may repeat storage elements (stride 0): cap the total copied against the file size.
    if (n * elem > budget)
        throw TensorFileError("tensors expand to far more data than the file holds (stride-0 views?)");
    budget -= n * elem;
    out.bytes.resize(static_cast<size_t>(n * elem));
    const size_t rank = t.shape.size();
    std::vector<int64_t> idx(rank, 0);
    const auto* src = reinterpret_cast<const uint8_t*>(storage.data());
    for (uint64_t i = 0; i < n; ++i) {
        int64_t off = t.storageOffset;
        for (size_t d = 0; d < rank; ++d)
            off += idx[d] * t.stride[d];
        uint8_t* dst = out.bytes.data() + i * elem;
        std::memcpy(dst, src + static_cast<uint64_t>(off) * elem, static_cast<size_t>(elem));
        if (swapBytes) std::reverse(dst, dst + elem);
        for (size_t d = rank; d-- > 0;) { // odometer increment, last dimension fastest
            if (++idx[d] < t.shape[d]) break;
            idx[d] = 0;
        }
    }
    return out;
}

std::vector<uint8_t> readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw TensorFileError("cannot open '" + path + "'");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

int64_t RawTensor::numel() const {
    int64_t n = 1;
    for (int64_t s : shape)
        n *= s;
    return n;
}

std::string RawTensor::describe() const {
    return scalarTypeName(dtype) + " " + shapeText(shape);
}

std::vector<float> RawTensor::toFloat() const {
    const auto n = static_cast<size_t>(numel());
    std::vector<float> out(n);
    const uint8_t* p = bytes.data();
    for (size_t i = 0; i < n; ++i) {
        switch (dtype) {
        case ScalarType::Float32:
            out[i] = load<float>(p + 4 * i);
            break;
        case ScalarType::Float64:
            out[i] = static_cast<float>(load<double>(p + 8 * i));
            break;
        case ScalarType::Float16:
            out[i] = halfToFloat(load<uint16_t>(p + 2 * i));
            break;
        case ScalarType::BFloat16:
            out[i] = bfloat16ToFloat(load<uint16_t>(p + 2 * i));
            break;
        case ScalarType::Int64:
            out[i] = static_cast<float>(load<int64_t>(p + 8 * i));
            break;
        case ScalarType::Int32:
            out[i] = static_cast<float>(load<int32_t>(p + 4 * i));
            break;
        case ScalarType::Int16:
            out[i] = static_cast<float>(load<int16_t>(p + 2 * i));
            break;
        case ScalarType::Int8:
            out[i] = static_cast<float>(load<int8_t>(p + i));
            break;
        case ScalarType::UInt8:
        case ScalarType::Bool:
            out[i] = static_cast<float>(p[i]);
            break;
        }
    }
    return out;
}

std::vector<int64_t> RawTensor::toInt64() const {
    if (isFloating(dtype)) throw TensorFileError("expected an integer tensor, got " + describe());
    const auto n = static_cast<size_t>(numel());
    std::vector<int64_t> out(n);
    const uint8_t* p = bytes.data();
    for (size_t i = 0; i < n; ++i) {
        switch (dtype) {
        case ScalarType::Int64:
            out[i] = load<int64_t>(p + 8 * i);
            break;
        case ScalarType::Int32:
            out[i] = load<int32_t>(p + 4 * i);
            break;
        case ScalarType::Int16:
            out[i] = load<int16_t>(p + 2 * i);
            break;
        case ScalarType::Int8:
            out[i] = load<int8_t>(p + i);
            break;
        default:
            out[i] = p[i];
            break;
        }
    }
    return out;
}

std::string stripStateDictPrefixes(std::string name) {
    for (bool again = true; again;) {
        again = false;
        for (const std::string prefix : {"_orig_mod.", "module."}) {
            if (name.rfind(prefix, 0) == 0) {
                name.erase(0, prefix.size());
                again = true;
            }
        }
    }
    return name;
}

TensorFile readTorchArchive(std::vector<uint8_t> bytes) {
    const uint64_t fileSize = bytes.size();
    const ZipReader zip(std::move(bytes));
    // The archive's records share one top folder (named after the file by torch.save).
    std::string top;
    for (const auto& n : zip.names()) {
        const size_t slash = n.find('/');
        if (slash != std::string::npos && n.substr(slash) == "/data.pkl") {
            top = n.substr(0, slash);
            break;
        }
    }
    if (top.empty()) throw TensorFileError("archive has no <folder>/data.pkl record: not a torch.save checkpoint");
    bool swap = false;
    if (zip.contains(top + "/byteorder")) {
        const std::string_view order = zip.read(top + "/byteorder");
        if (order != "little" && order != "big")
            throw TensorFileError("unknown byteorder record '" + std::string(order.substr(0, 16)) + "'");
        swap = order == "big";
    }
    TensorFile out;
    out.format = "torch-zip";
    if (zip.contains(top + "/version")) {
        std::string version(zip.read(top + "/version").substr(0, 16));
        while (!version.empty() && std::isspace(static_cast<unsigned char>(version.back())))
            version.pop_back();
        out.metadata["torch.format_version"] = version;
    }

    const PickleDocument doc = parsePickle(zip.read(top + "/data.pkl"));
    const PickleId root = doc.root();
    if (doc.at(root).kind != K::Dict)
        throw TensorFileError("the checkpoint holds " + doc.describe(root) +
                              ", not a state_dict or a dict with model_state_dict (whole pickled "
                              "modules cannot be read safely; save model.state_dict() instead)");
    PickleId sd = root;
    for (const char* key : {"model_state_dict", "state_dict", "model"}) {
        const PickleId v = doc.find(root, key);
        if (v >= 0 && doc.at(v).kind == K::Dict) {
            sd = v;
            break;
        }
    }
    collectMetadata(doc, root, sd, out);

    uint64_t budget = 4 * fileSize + (uint64_t{16} << 20);
    for (const auto& [k, v] : doc.at(sd).entries) {
        const PickleValue& key = doc.at(k);
        if (key.kind != K::String) {
            out.warnings.push_back("skipped a state-dict entry whose key is " + doc.describe(k));
            continue;
        }
        const PickleValue& val = doc.at(v);
        if (val.kind != K::Tensor) {
            out.warnings.push_back("skipped '" + key.text + "': " + doc.describe(v) + ", not a tensor");
            continue;
        }
        const std::string record = top + "/data/" + val.tensor.storageKey;
        if (!zip.contains(record))
            throw TensorFileError("tensor '" + key.text + "' refers to missing record '" + record + "'");
        const std::string name = stripStateDictPrefixes(key.text);
        if (out.tensors.count(name))
            throw TensorFileError("two tensors are called '" + name + "' once prefixes are stripped");
        out.tensors[name] = materialize(val.tensor, zip.read(record), swap, budget);
    }
    if (out.tensors.empty()) throw TensorFileError("the checkpoint contains no tensors");
    return out;
}

TensorFile readSafetensorsBytes(const std::vector<uint8_t>& bytes) {
    // The engine's .gwb container reader does the structural checks (checkpoint.h).
    SafetensorsFile file;
    try {
        file = parseSafetensors(std::string(bytes.begin(), bytes.end()), "safetensors");
    } catch (const std::exception& e) {
        // Not only runtime_error: the JSON parser also throws out_of_range (e.g. for a number
        // like 1E777777 in the header), which must end as a clean error too (found by fuzzing).
        throw TensorFileError(std::string("safetensors: ") + e.what());
    }
    static const std::map<std::string, ScalarType> types{{"F32", ScalarType::Float32}, {"F64", ScalarType::Float64},
                                                         {"F16", ScalarType::Float16}, {"BF16", ScalarType::BFloat16},
                                                         {"I64", ScalarType::Int64},   {"I32", ScalarType::Int32},
                                                         {"I16", ScalarType::Int16},   {"I8", ScalarType::Int8},
                                                         {"U8", ScalarType::UInt8},    {"BOOL", ScalarType::Bool}};
    TensorFile out;
    out.format = "safetensors";
    out.metadata = file.metadata;
    for (auto& [name, stored] : file.tensors) {
        const auto t = types.find(stored.dtype);
        if (t == types.end())
            throw TensorFileError("safetensors: tensor '" + name + "' has unsupported dtype " + stored.dtype);
        RawTensor r;
        r.dtype = t->second;
        r.shape = stored.shape;
        r.bytes.assign(stored.bytes.begin(), stored.bytes.end());
        const std::string key = stripStateDictPrefixes(name);
        if (out.tensors.count(key))
            throw TensorFileError("safetensors: two tensors are called '" + key + "' once prefixes are stripped");
        out.tensors[key] = std::move(r);
    }
    if (out.tensors.empty()) throw TensorFileError("safetensors: the file contains no tensors");
    return out;
}

TensorFile readTensorFile(const std::string& path) {
    std::vector<uint8_t> bytes = readAll(path);
    try {
        if (ZipReader::looksLikeZip(bytes)) return readTorchArchive(std::move(bytes));
        if (looksLikeGrassLM(bytes)) return readGrassLMBytes(bytes);
        // Legacy torch.save (before 1.6) starts with a pickled magic number (protocol 2 LONG1).
        if (bytes.size() >= 2 && bytes[0] == 0x80 && bytes[1] == 0x02)
            throw TensorFileError("legacy (pre-1.6, non-zip) torch.save format; re-save it with a "
                                  "current torch.save or as .safetensors");
        if (bytes.size() >= 9 && bytes[8] == '{') return readSafetensorsBytes(bytes);
        throw TensorFileError("neither a torch.save zip archive nor a safetensors file");
    } catch (const TensorFileError& e) {
        throw TensorFileError("'" + path + "': " + e.what());
    } catch (const PickleError& e) {
        throw TensorFileError("'" + path + "': " + e.what());
    } catch (const ZipError& e) {
        throw TensorFileError("'" + path + "': " + e.what());
    }
}

} // namespace gwb::engine
