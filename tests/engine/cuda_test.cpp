// The same model on CPU and on CUDA: logits, every traced array and one training step agree.
// Each test skips with a message when this build or machine has no usable CUDA GPU.
//
// Tolerances: float32 on both devices, but different kernels (cuBLAS vs OpenBLAS, other reduction
// orders): logits and traced states to 1e-4 of the array's largest magnitude, weights after one
// AdamW step to 1e-5 absolute (the step itself is ~lr = 1e-3 per weight).

#include "runtime/device_errors.h"
#include "engine_test_util.h"
#include "gwb/engine/device.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tracer.h"
#include "gwb/engine/train.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

namespace gwb::engine {
namespace {

constexpr double kRelativeTolerance = 1e-4; ///< of max |value| of the array, for logits and traces
constexpr double kWeightTolerance = 1e-5;   ///< absolute, weights after one optimizer step
constexpr const char* kNoGpu = "no usable CUDA GPU (CPU-only LibTorch or no device): CPU/CUDA parity not run";

std::vector<int32_t> promptIds(int64_t vocab, int64_t n) {
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < n; ++t)
        ids.push_back(static_cast<int32_t>((t * 7 + 3) % vocab));
    return ids;
}

/// Max |a - b| over max(|a|, 1e-6): fails with the array's name when shapes differ.
double relativeDiff(const FloatArray& a, const FloatArray& b, const std::string& what) {
    EXPECT_EQ(a.shape, b.shape) << what;
    if (a.shape != b.shape || a.data.empty()) return 0.0;
    double diff = 0.0, scale = 1e-6;
    for (size_t i = 0; i < a.data.size(); ++i) {
        diff = std::max(diff, static_cast<double>(std::abs(a.data[i] - b.data[i])));
        scale = std::max(scale, static_cast<double>(std::abs(a.data[i])));
    }
    return diff / scale;
}

void expectClose(const FloatArray& a, const FloatArray& b, const std::string& what) {
    EXPECT_LE(relativeDiff(a, b, what), kRelativeTolerance) << what;
}

/// `cpu` copied onto the GPU through its parameters (the same weights, bit for bit).
Model onCuda(const Model& cpu) {
    return Model::fromParameters(cpu.config(), cpu.parameters(), cpu.tokenizer(), "cuda");
}

/// Parameter: an index into test::allVariants() (readable test names, no byte dumps).
class CudaParity : public ::testing::TestWithParam<size_t> {
protected:
    void SetUp() override {
        if (!cudaAvailable()) GTEST_SKIP() << kNoGpu;
    }
};

TEST_P(CudaParity, LogitsAndTraceMatchCpu) {
    const ModelConfig config = test::allVariants().at(GetParam());
    const Model cpu = Model::init(config, /*seed=*/11, nullptr, "cpu");
    const Model gpu = onCuda(cpu);
    ASSERT_EQ(gpu.device().rfind("cuda", 0), 0u) << gpu.device();

    TraceOptions options;
    options.keepLogits = true;
    const auto ids = promptIds(config.vocabSize, config.maxLen);
    const TracePtr a = traceIds(cpu, ids, options);
    const TracePtr b = traceIds(gpu, ids, options);
    EXPECT_EQ(b->device.rfind("cuda", 0), 0u) << "the trace names the device it ran on";

    expectClose(a->logits, b->logits, "logits");
    expectClose(a->finalH, b->finalH, "final state");
    ASSERT_EQ(a->surprisal.size(), b->surprisal.size());
    for (size_t t = 1; t < a->surprisal.size(); ++t)
        EXPECT_NEAR(a->surprisal[t], b->surprisal[t], 1e-3) << "surprisal at " << t;
    EXPECT_EQ(a->lens->topIds.data, b->lens->topIds.data) << "logit-lens top ids";
    ASSERT_EQ(a->layers.size(), b->layers.size());
    for (size_t l = 0; l < a->layers.size(); ++l) {
        const std::string at = " (layer " + std::to_string(l) + ")";
        expectClose(a->layers[l].h, b->layers[l].h, "h" + at);
        if (a->layers[l].grassmann) {
            expectClose(a->layers[l].grassmann->z, b->layers[l].grassmann->z, "z" + at);
            expectClose(a->layers[l].grassmann->g, b->layers[l].grassmann->g, "g" + at);
            expectClose(a->layers[l].grassmann->gate, b->layers[l].grassmann->gate, "gate" + at);
        }
        if (a->layers[l].attention) {
            expectClose(a->layers[l].attention->q, b->layers[l].attention->q, "q" + at);
            expectClose(a->layers[l].attention->attn, b->layers[l].attention->attn, "attention" + at);
        }
    }
}

TEST_P(CudaParity, OneTrainingStepMatchesCpu) {
    ModelConfig config = test::allVariants().at(GetParam());
    config.dropout = 0.0; // CPU and CUDA draw different dropout masks from the same seed
    Model cpu = Model::init(config, /*seed=*/5, nullptr, "cpu");
    Model gpu = onCuda(cpu);

    const auto trainIds = promptIds(config.vocabSize, 4 * (config.maxLen + 1));
    const auto validIds = promptIds(config.vocabSize, config.maxLen + 1);
    test::TempDir dir;
    TrainOptions options;
    options.steps = 1;
    options.batch = 2;
    options.lr = 1e-3;
    options.warmup = 0;
    options.evalEvery = 1;
    options.outPath = dir.file("cpu.gwb");
    trainOnTokens(cpu, trainIds, validIds, options);
    options.outPath = dir.file("gpu.gwb");
    trainOnTokens(gpu, trainIds, validIds, options);

    const auto pa = cpu.parameters(), pb = gpu.parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (const auto& [name, value] : pa) {
        const FloatArray& other = pb.at(name);
        ASSERT_EQ(value.shape, other.shape) << name;
        double diff = 0.0;
        for (size_t i = 0; i < value.data.size(); ++i)
            diff = std::max(diff, static_cast<double>(std::abs(value.data[i] - other.data[i])));
        EXPECT_LE(diff, kWeightTolerance) << name;
    }
}

INSTANTIATE_TEST_SUITE_P(Variants, CudaParity, ::testing::Range<size_t>(0, test::allVariants().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                             return test::variantTestName(info.param);
                         });

TEST(CudaDevice, AskingForCudaWithoutGpuSaysSo) {
    if (cudaAvailable()) GTEST_SKIP() << "a GPU is present: the no-GPU message is not reachable here";
    const ModelConfig config = test::tinyConfig(ModelKind::Grassmann);
    try {
        (void)Model::init(config, 1, nullptr, "cuda");
        FAIL() << "init on 'cuda' without a GPU must throw";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("no usable CUDA GPU"), std::string::npos) << e.what();
    }
}

TEST(DeviceErrors, FailedAllocationNamesTheWorkTheDeviceAndTheSize) {
    // 2^52 floats (16 PiB): no machine has it, so the allocator refuses at once.
    try {
        (void)withDeviceErrors("tracing 4096 tokens", "cpu",
                               [] { return torch::empty({int64_t{1} << 52}, torch::kFloat); });
        FAIL() << "a 16 PiB allocation must fail";
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("tracing 4096 tokens"), std::string::npos) << message;
        EXPECT_NE(message.find("cpu"), std::string::npos) << message;
        EXPECT_NE(message.find("18014398509481984"), std::string::npos) << "bytes asked for: " << message;
        EXPECT_EQ(message.find("Exception raised from"), std::string::npos) << "no C++ backtrace: " << message;
    }
}

TEST(DeviceErrors, OtherExceptionsPassThrough) {
    EXPECT_THROW(withDeviceErrors("x", "cpu", []() -> int { throw std::invalid_argument("bad"); }),
                 std::invalid_argument);
}

} // namespace
} // namespace gwb::engine
