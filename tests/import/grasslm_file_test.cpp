// GrassLM's own weight file (.grasslm): written here byte by byte as python/grasslm/export.py writes
// it, from our random model under GrassLM's names, then opened like any checkpoint: the same logits,
// the file's own offset schedule, float16 data, and every malformed file refused with its reason.

#include "import/grasslm_file.h"
#include "import_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

namespace gwb::engine {
namespace {

using namespace import_test;

void put32(std::string& out, uint32_t v) {
    for (int k = 0; k < 4; ++k)
        out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}

uint16_t toHalf(float f) {
    // Round-to-nearest-even float -> half (normal and subnormal; the test values stay below 65504).
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffff;
    if (exp <= 0) { // a subnormal half (or zero)
        if (exp < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000;
        const int shift = 14 - exp;
        uint32_t half = mant >> shift;
        const uint32_t rest = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
    return static_cast<uint16_t>(half);
}

struct GrassLMFile {
    ModelConfig config;
    Tensors tensors; ///< as export.py writes them: no lm_head, no pair indices, window_offsets added
    uint32_t dtype = 0;

    std::string bytes() const {
        std::string out(64, '\0');
        std::memcpy(out.data(), "GRLM", 4);
        auto field = [&](int at, uint32_t v) {
            for (int k = 0; k < 4; ++k)
                out[static_cast<size_t>(at + k)] = static_cast<char>((v >> (8 * k)) & 0xff);
        };
        field(4, 1);
        field(8, static_cast<uint32_t>(config.nLayers));
        field(12, static_cast<uint32_t>(config.dModel));
        field(16, static_cast<uint32_t>(config.reduced));
        field(20, static_cast<uint32_t>(config.dFF));
        field(24, static_cast<uint32_t>(config.vocabSize));
        field(28, static_cast<uint32_t>(config.maxLen));
        field(32, dtype);
        put32(out, static_cast<uint32_t>(tensors.size()));
        for (const auto& [name, a] : tensors) {
            put32(out, static_cast<uint32_t>(name.size()));
            out += name;
            put32(out, static_cast<uint32_t>(a.shape.size()));
            for (int64_t e : a.shape)
                put32(out, static_cast<uint32_t>(e));
            for (float v : a.data) {
                if (dtype == 0) {
                    out.append(reinterpret_cast<const char*>(&v), 4);
                } else {
                    const uint16_t h = toHalf(v);
                    out.append(reinterpret_cast<const char*>(&h), 2);
                }
            }
        }
        return out;
    }
    std::string write(const TempDir& dir, const std::string& name) const {
        const std::string path = dir.file(name);
        std::ofstream(path, std::ios::binary) << bytes();
        return path;
    }
};

GrassLMFile grassLMFile(const Model& m, const std::vector<int>& schedule) {
    GrassLMFile f;
    f.config = m.config();
    for (auto& [name, a] : familyTensors(m, "grasslm"))
        if (name != "lm_head.weight" && name.find("idx_") == std::string::npos) f.tensors[name] = a;
    f.tensors["window_offsets"] =
        FloatArray({static_cast<int64_t>(schedule.size())}, std::vector<float>(schedule.begin(), schedule.end()));
    return f;
}

TEST(GrassLMFile, OpensWithItsOwnScheduleAndGivesTheSameLogits) {
    ModelConfig c = tinyConfig("grasslm", ModelKind::Grassmann);
    c.layerOffsets = {{2}, {3}}; // not the layout's rule for 2 layers ([1, 1]): the file's list wins
    const Model ref = randomModel(c, 31);
    TempDir dir;
    const std::string path = grassLMFile(ref, {2, 3}).write(dir, "model.grasslm");
    const ImportedModel m = loadOrImportModel(path, "cpu");
    EXPECT_EQ(m.model.config().layerOffsets, c.layerOffsets);
    EXPECT_EQ(m.report.format, "grasslm");
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids)); // bit for bit: the same float32 weights
    // Read through the file reader directly: the tied head restored, the schedule per block.
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const TensorFile f = readGrassLMBytes(bytes);
    EXPECT_EQ(f.tensors.at("lm_head.weight").bytes, f.tensors.at("tok_embed.weight").bytes);
    EXPECT_EQ(f.tensors.at("blocks.1.mixing.window_offsets").toInt64(), std::vector<int64_t>{3});
    EXPECT_FALSE(f.tensors.count("window_offsets"));
}

TEST(GrassLMFile, Float16FilesOpenWithTheirRoundedWeights) {
    ModelConfig c = tinyConfig("grasslm", ModelKind::Grassmann);
    c.layerOffsets = {{1}, {1}};
    const Model ref = randomModel(c, 32);
    GrassLMFile f = grassLMFile(ref, {1, 1});
    f.dtype = 1;
    TempDir dir;
    const ImportedModel m = loadOrImportModel(f.write(dir, "half.grasslm"), "cpu");
    // Every weight is the float16 value of the original (within half's relative step, 2^-11).
    const auto ours = m.model.parameters(), theirs = ref.parameters();
    for (const auto& [name, a] : theirs) {
        const FloatArray& b = ours.at(name);
        ASSERT_EQ(a.shape, b.shape) << name;
        for (size_t i = 0; i < a.data.size(); ++i)
            ASSERT_NEAR(b.data[i], a.data[i], std::abs(a.data[i]) * (1.0 / 2048) + 1e-7) << name << " " << i;
    }
}

TEST(GrassLMFile, MalformedFilesAreRefusedWithTheReason) {
    ModelConfig c = tinyConfig("grasslm", ModelKind::Grassmann);
    c.layerOffsets = {{1}, {1}};
    const Model ref = randomModel(c, 33);
    const GrassLMFile good = grassLMFile(ref, {1, 1});
    const std::string bytes = good.bytes();
    auto refuse = [](std::string b, const std::string& needle) {
        const std::vector<uint8_t> v(b.begin(), b.end());
        try {
            readGrassLMBytes(v);
            ADD_FAILURE() << "accepted; expected a refusal mentioning '" << needle << "'";
        } catch (const TensorFileError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    std::string b = bytes;
    b[4] = 2;
    refuse(b, "format version 2");
    b = bytes;
    b[32] = 7;
    refuse(b, "dtype code 7");
    refuse(bytes.substr(0, 40), "shorter than the 64-byte header");
    refuse(bytes.substr(0, bytes.size() - 3), "needs more bytes than the file has left");
    refuse(bytes + "xyz", "3 bytes after the last");
    b = bytes;
    b[24] = static_cast<char>(b[24] + 1); // vocab_size 51: the embedding says 50
    refuse(b, "'tok_embed.weight' is [50, 16] but the header says [51, 16]");
    b = bytes;
    b[8] = 3; // three layers claimed, two in the file
    refuse(b, "the header says 3 layers");
    GrassLMFile bad = good;
    bad.tensors["window_offsets"].data[1] = 0.5f;
    refuse(bad.bytes(), "window_offsets[1] is 0.5");
    bad = good;
    bad.tensors["window_offsets"].data.push_back(4);
    bad.tensors["window_offsets"].shape = {3};
    refuse(bad.bytes(), "window_offsets holds 3 values for 2 layers");
    // A table cut inside a name.
    refuse(bytes.substr(0, 70), "the file ends inside");
    // A name length beyond the file: refused before anything is allocated for it.
    b = bytes;
    b[68] = static_cast<char>(0xff);
    b[69] = static_cast<char>(0xff);
    refuse(b, "has a name of");
    // Through the importer: the message names the file.
    TempDir dir;
    const std::string path = dir.file("broken.grasslm");
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    expectImportError([&] { loadOrImportModel(path, "cpu"); }, "broken.grasslm");
}

} // namespace
} // namespace gwb::engine
