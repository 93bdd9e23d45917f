// .gwb checkpoints: exact round trips, F16/BF16, and a clear message for every broken-file kind.

#include "engine_test_util.h"
#include "gwb/engine/checkpoint.h"
#include "gwb/engine/file_error.h"
#include "gwb/engine/model.h"

#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

using namespace gwb::engine;
using nlohmann::json;

namespace {

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}
void writeAll(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
}

/// Splits a safetensors file into its header JSON and data section, and joins them back.
struct RawFile {
    json header;
    std::string data;
    explicit RawFile(const std::string& bytes) {
        uint64_t n;
        std::memcpy(&n, bytes.data(), 8);
        header = json::parse(bytes.substr(8, n));
        data = bytes.substr(8 + n);
    }
    std::string bytes() const {
        const std::string h = header.dump();
        const uint64_t n = h.size();
        return std::string(reinterpret_cast<const char*>(&n), 8) + h + data;
    }
};

void expectLoadError(const std::string& path, const std::string& fragment,
                     std::optional<ModelKind> kind = std::nullopt) {
    try {
        (void)Model::load(path, "cpu", kind);
        FAIL() << "loaded a broken file; expected: " << fragment;
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos)
            << "message does not name the file: " << e.what();
    }
}

class Checkpoints : public ::testing::Test {
protected:
    test::TempDir dir;
    std::string saved(ModelKind kind, SaveDtype dtype = SaveDtype::F32) {
        const std::string path =
            dir.file(std::string(kindName(kind)) + (dtype == SaveDtype::F16 ? "16" : "32") + ".gwb");
        Model::init(test::tinyConfig(kind), 7, nullptr, "cpu").save(path, dtype);
        return path;
    }
};

} // namespace

TEST_F(Checkpoints, F32RoundTripIsBitExact) {
    for (const ModelConfig& c : test::allVariants()) {
        Model m = Model::init(c, 13, nullptr, "cpu");
        m.setTrainingSummary(R"({"steps": 5})");
        const std::string path = dir.file("m.gwb");
        m.save(path);
        const Model back = Model::load(path, "cpu");
        EXPECT_EQ(configToJson(back.config()), configToJson(c));
        EXPECT_EQ(back.trainingSummary(), R"({"steps": 5})");
        const auto a = m.parameters(), b = back.parameters();
        ASSERT_EQ(a.size(), b.size());
        for (const auto& [name, arr] : a)
            EXPECT_EQ(std::memcmp(arr.data.data(), b.at(name).data.data(), arr.data.size() * 4), 0) << name;
    }
}

TEST_F(Checkpoints, F16RoundTripWithinHalfPrecision) {
    const Model m = Model::init(test::tinyConfig(ModelKind::Grassmann), 13, nullptr, "cpu");
    const std::string path = dir.file("h.gwb");
    m.save(path, SaveDtype::F16);
    EXPECT_EQ(readSafetensors(path).tensors.at("blocks.0.w_plu.weight").dtype, "F16");
    const auto a = m.parameters(), b = Model::load(path, "cpu").parameters();
    for (const auto& [name, arr] : a)
        for (size_t i = 0; i < arr.data.size(); ++i)
            ASSERT_NEAR(b.at(name).data[i], arr.data[i], std::abs(arr.data[i]) * 1e-3 + 1e-7) << name;
}

TEST_F(Checkpoints, Bf16Loads) {
    const std::string path = saved(ModelKind::Transformer);
    SafetensorsFile f = readSafetensors(path);
    for (auto& [name, t] : f.tensors) {
        const auto v = t.toFloat();
        std::string bytes(v.size() * 2, '\0');
        for (size_t i = 0; i < v.size(); ++i) {
            uint32_t u;
            std::memcpy(&u, &v[i], 4);
            const uint16_t h = uint16_t(u >> 16); // truncation is a valid bfloat16 value
            std::memcpy(bytes.data() + 2 * i, &h, 2);
        }
        t.dtype = "BF16";
        t.bytes = bytes;
    }
    writeSafetensors(path, f);
    const Model m = Model::load(path, "cpu");
    EXPECT_NEAR(m.parameters().at("ln_final.weight").data[0], 1.0f, 1e-6);
}

TEST_F(Checkpoints, HalfConversionEdgeCases) {
    for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.0009765625f})
        EXPECT_EQ(halfToFloat(floatToHalf(v)), v) << v;
    EXPECT_NEAR(halfToFloat(floatToHalf(1e-3f)), 1e-3f, 1e-3f / 1024);
    EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(1e6f))));
    EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
    EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048.0f), floatToHalf(1.0f)); // tie rounds to even
}

TEST_F(Checkpoints, TruncatedFile) {
    const std::string path = saved(ModelKind::Grassmann);
    const std::string bytes = readAll(path);
    writeAll(path, bytes.substr(0, bytes.size() - 100));
    expectLoadError(path, "outside the data section");
    writeAll(path, bytes.substr(0, 5));
    expectLoadError(path, "too short");
}

// Issue 67: a cut-off file says first that it is truncated, with its size and the size its header
// needs, and only then which tensor's offsets showed it.
TEST_F(Checkpoints, TruncatedFileSaysSoFirstWithBothSizes) {
    const std::string path = saved(ModelKind::Grassmann);
    const std::string bytes = readAll(path);
    writeAll(path, bytes.substr(0, bytes.size() - 100));
    try {
        (void)Model::load(path, "cpu");
        FAIL() << "loaded a truncated file";
    } catch (const std::exception& e) {
        const std::string m = e.what();
        const std::string sizes = "the file is truncated: it is " + std::to_string(bytes.size() - 100) +
                                  " bytes but its header needs " + std::to_string(bytes.size()) + " bytes";
        EXPECT_NE(m.find(sizes), std::string::npos) << m;
        ASSERT_NE(m.find("outside the data section"), std::string::npos) << m;
        EXPECT_LT(m.find("truncated"), m.find("outside the data section")) << m;
    }
}

TEST_F(Checkpoints, BadHeaderJson) {
    const std::string path = saved(ModelKind::Grassmann);
    std::string bytes = readAll(path);
    bytes[9] = '#';
    writeAll(path, bytes);
    expectLoadError(path, "not valid JSON");
}

// Found by tests/fuzz/fuzz_gwb (libFuzzer): a header number too large for a double escaped as the
// JSON library's own out_of_range exception, without the file's name.
TEST_F(Checkpoints, FuzzFoundHeaderNumberOverflowIsBadJson) {
    const std::string path = dir.file("overflow.gwb");
    const std::string h = R"({"x":{"dtype":"F32","shape":[8222222222222222222222222222222222222222222222222222222)"
                          R"(222222222e22222222222222],"data_offsets":[0,0]}})";
    const uint64_t n = h.size();
    writeAll(path, std::string(reinterpret_cast<const char*>(&n), 8) + h);
    expectLoadError(path, "not valid JSON");
    EXPECT_THROW((void)parseSafetensors(readAll(path), path), std::runtime_error);
}

TEST_F(Checkpoints, HeaderLengthBeyondFile) {
    const std::string path = saved(ModelKind::Grassmann);
    std::string bytes = readAll(path);
    const uint64_t n = bytes.size() + 10;
    std::memcpy(bytes.data(), &n, 8);
    writeAll(path, bytes);
    expectLoadError(path, "exceeds the file size");
}

TEST_F(Checkpoints, WrongShape) {
    const std::string path = saved(ModelKind::Grassmann);
    SafetensorsFile f = readSafetensors(path);
    StoredTensor& t = f.tensors.at("blocks.0.w_red.weight"); // 6 x 16 -> 16 x 6
    t.shape = {16, 6};
    writeSafetensors(path, f);
    expectLoadError(path, "tensor 'blocks.0.w_red.weight' has shape [16, 6] but the config needs [6, 16]");
}

TEST_F(Checkpoints, WrongDtype) {
    const std::string path = saved(ModelKind::Grassmann);
    SafetensorsFile f = readSafetensors(path);
    f.tensors.at("ln_final.bias").dtype = "I32";
    writeSafetensors(path, f);
    expectLoadError(path, "tensor 'ln_final.bias' has dtype I32");
    RawFile raw(readAll(path));
    raw.header["ln_final.bias"]["dtype"] = "Q7";
    writeAll(path, raw.bytes());
    expectLoadError(path, "unsupported dtype Q7");
}

TEST_F(Checkpoints, OverlappingAndUncoveredOffsets) {
    const std::string path = saved(ModelKind::Grassmann);
    RawFile raw(readAll(path));
    // Make ln_final.bias point at ln_final.weight's bytes (same size): overlap + a gap.
    raw.header["ln_final.bias"]["data_offsets"] = raw.header["ln_final.weight"]["data_offsets"];
    writeAll(path, raw.bytes());
    expectLoadError(path, "overlaps");
    RawFile raw2(readAll(saved(ModelKind::Grassmann)));
    raw2.data += std::string(16, '\0');
    writeAll(path, raw2.bytes());
    expectLoadError(path, "not covered by any tensor");
    RawFile raw3(readAll(saved(ModelKind::Grassmann)));
    auto off = raw3.header["ln_final.bias"]["data_offsets"];
    raw3.header["ln_final.bias"]["data_offsets"] = {off[0].get<uint64_t>(), off[1].get<uint64_t>() - 4};
    writeAll(path, raw3.bytes());
    expectLoadError(path, "need");
}

TEST_F(Checkpoints, TransformerReadAsGrassmann) {
    const std::string path = saved(ModelKind::Transformer);
    expectLoadError(path, "is a Transformer checkpoint, expected a Grassmann model", ModelKind::Grassmann);
    // A Transformer's tensors under a Grassmann config.
    SafetensorsFile f = readSafetensors(path);
    f.metadata["model_config"] = configToJson(test::tinyConfig(ModelKind::Grassmann));
    writeSafetensors(path, f);
    expectLoadError(path, "contains Transformer tensors");
}

TEST_F(Checkpoints, MissingUnexpectedAndForeign) {
    const std::string path = saved(ModelKind::Grassmann);
    SafetensorsFile f = readSafetensors(path);
    f.tensors.erase("blocks.1.w_gate.bias");
    writeSafetensors(path, f);
    expectLoadError(path, "missing tensor 'blocks.1.w_gate.bias'");
    f = readSafetensors(saved(ModelKind::Grassmann));
    f.tensors["extra.weight"] = f.tensors.at("ln_final.bias");
    writeSafetensors(path, f);
    expectLoadError(path, "unexpected tensor 'extra.weight'");
    f.metadata.erase("model_config");
    writeSafetensors(path, f);
    expectLoadError(path, "not a gwb checkpoint");
    f = readSafetensors(saved(ModelKind::Grassmann));
    f.metadata["model_config"] = R"({"kind":"grassmann","d_model":-1})";
    writeSafetensors(path, f);
    expectLoadError(path, "'d_model'");
    expectLoadError(dir.file("absent.gwb"), "cannot open");
}

// Issue 67: a save that fails names the file asked for, not its temporary file, as a FileError
// with the errno (gwb.Model.save raises it as the matching OSError subclass).
TEST_F(Checkpoints, AFailedSaveNamesTheFileNotItsTemporary) {
    const Model m = Model::init(test::tinyConfig(ModelKind::Grassmann), 8, nullptr, "cpu");
    const std::string missing = dir.file("no-such-folder/m.gwb");
    try {
        m.save(missing);
        FAIL() << "saved into a missing folder";
    } catch (const FileError& e) {
        EXPECT_EQ(e.path, missing);
        EXPECT_EQ(e.errorNumber, ENOENT);
        EXPECT_EQ(std::string(e.what()),
                  "cannot write '" + missing + "': the folder '" + dir.file("no-such-folder") + "' does not exist");
    }
    if (geteuid() == 0) return; // root writes anywhere
    const std::string ro = dir.file("ro");
    std::filesystem::create_directory(ro);
    std::filesystem::permissions(ro, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    try {
        m.save(ro + "/m.gwb");
        FAIL() << "saved into a read-only folder";
    } catch (const FileError& e) {
        EXPECT_EQ(e.errorNumber, EACCES);
        EXPECT_EQ(
            std::string(e.what()).rfind("cannot write '" + ro + "/m.gwb': the folder '" + ro + "' is not writable", 0),
            0u)
            << e.what();
    }
    std::filesystem::permissions(ro, std::filesystem::perms::owner_all);
}

TEST_F(Checkpoints, SaveIsAtomicAndLeavesNoTemporaries) {
    const std::string path = saved(ModelKind::Grassmann);
    Model::init(test::tinyConfig(ModelKind::Grassmann), 8, nullptr, "cpu").save(path);
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path))
        files += e.is_regular_file();
    EXPECT_EQ(files, 1);
}
