// libFuzzer harness: the safetensors container of .gwb checkpoints and Hugging Face .safetensors
// files (formats/checkpoint.cpp), followed by the Torch-free steps of Model::load: the header,
// the model_config metadata, the parameter names and shapes it implies, every tensor's values,
// and the embedded tokenizer (tensor "tokenizer.model" + metadata tokenizer_kind). Seeds:
// tests/fuzz/corpus/gwb (checkpoints written by `gwb init`).

#include "fuzz_util.h"

#include "gwb/engine/checkpoint.h"
#include "gwb/engine/config_io.h"

#include <set>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    // The memory-mapped path (Model::load) and the copying path (import, tests) check the same.
    engine::SafetensorsHeader header;
    const bool mapped =
        fuzz::readOrRefuse([&] { header = engine::parseSafetensorsHeader(bytes.data(), bytes.size(), "fuzz.gwb"); });
    engine::SafetensorsFile file;
    const bool copied = fuzz::readOrRefuse([&] { file = engine::parseSafetensors(bytes, "fuzz.gwb"); });
    if (mapped != copied) fuzz::finding("parseSafetensorsHeader and parseSafetensors disagree");
    if (!copied) return 0;
    fuzz::mustWork("reading an accepted container", [&] {
        for (const auto& [name, t] : file.tensors) {
            if (static_cast<int64_t>(t.bytes.size()) != t.numel() * engine::dtypeSize(t.dtype))
                fuzz::finding("tensor '" + name + "' byte size does not match its shape");
            if (t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16" || t.dtype == "F64" || t.dtype == "I64" ||
                t.dtype == "I32" || t.dtype == "U8")
                (void)t.toFloat();
        }
        // Writing the file back and reading it again gives the same tensors.
        const engine::SafetensorsFile again = engine::parseSafetensors(engine::serializeSafetensors(file), "again");
        if (again.tensors.size() != file.tensors.size() || again.metadata != file.metadata)
            fuzz::finding("safetensors write/read round trip differs");
    });
    const auto config = file.metadata.find("model_config");
    if (config == file.metadata.end()) return 0;
    engine::ModelConfig c;
    if (!fuzz::readOrRefuse([&] { c = engine::configFromJson(config->second); })) return 0;
    std::set<std::string> expected;
    fuzz::mustWork("parameter specs of an accepted config", [&] {
        for (const engine::ParameterSpec& s : engine::parameterSpecs(c)) {
            expected.insert(s.name);
            const auto it = file.tensors.find(s.name);
            // Model::load converts the float dtypes it accepts (F32, F16, BF16) and refuses others.
            if (it == file.tensors.end() || it->second.shape != s.shape) continue;
            const std::string& dtype = it->second.dtype;
            if (dtype == "F32" || dtype == "F16" || dtype == "BF16") (void)it->second.toArray();
        }
    });
    const auto tok = file.tensors.find("tokenizer.model");
    const auto kind = file.metadata.find("tokenizer_kind");
    if (tok == file.tensors.end() || kind == file.metadata.end()) return 0;
    engine::TokenizerPtr t;
    // The tokenizer readers have harnesses of their own; here: it loads and encodes.
    if (fuzz::readOrRefuse([&] { t = engine::makeTokenizer(kind->second, tok->second.bytes); }))
        fuzz::mustWork("embedded tokenizer", [&] { (void)t->decode(t->encodeIds(fuzz::sampleTexts().back())); });
    return 0;
}
