// Read-out analysis of a Grassmann layer against direct recomputation from the definitions:
// contributions from the per-offset normalized planes, angles with the general principal-angle
// routine on the nearest plane of B_t, planted planar and two-plane channels.
#include "gwb/engine/analysis.h"
#include "gwb/geometry/bivector.h"
#include "gwb/geometry/plucker.h"
#include "gwb/geometry/subspace.h"
#include "trace_builders.h"

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace gwb::engine;
using gwb::engine::test::grassmannTrace;
namespace geo = gwb::geometry;

namespace {
Eigen::VectorXd zRow(const GrassmannLayerTrace& g, int64_t t) {
    Eigen::VectorXd v(g.z.dim(1));
    for (int64_t i = 0; i < v.size(); ++i)
        v[i] = g.z.at2(t, i);
    return v;
}
Eigen::VectorXd wRow(const GrassmannLayerTrace& g, int64_t c) {
    Eigen::VectorXd v(g.wPlu.dim(1));
    for (int64_t k = 0; k < v.size(); ++k)
        v[k] = g.wPlu.at2(c, k);
    return v;
}
void setWRow(GrassmannLayerTrace& g, int64_t c, const Eigen::VectorXd& v) {
    for (int64_t k = 0; k < v.size(); ++k)
        g.wPlu.data[static_cast<size_t>(c * g.wPlu.dim(1) + k)] = static_cast<float>(v[k]);
}
} // namespace

TEST(ReadoutAnalysis, PlantedChannelsHaveTheirAnalyticValues) {
    Trace tr = grassmannTrace(10, 12, 6, 1, {1, 3}, 21);
    GrassmannLayerTrace& g = *tr.layers[0].grassmann;
    // Channel 0 reads one plane (e0 + e1) ^ e2; channel 1 two equal orthogonal planes e0^e1 + e2^e3.
    Eigen::VectorXd u = Eigen::VectorXd::Zero(6), v = Eigen::VectorXd::Zero(6);
    u[0] = 1, u[1] = 1, v[2] = 1;
    setWRow(g, 0, geo::wedge(u, v));
    Eigen::VectorXd e(6);
    auto unit = [&](int i) {
        e.setZero();
        e[i] = 1;
        return e;
    };
    const Eigen::VectorXd two = geo::wedge(unit(0), unit(1)) + geo::wedge(unit(2), unit(3));
    setWRow(g, 1, two);
    const TraceAnalysis an = analyzeTrace(tr);
    const GrassmannLayerAnalysis& L = an.grassmann[0];
    ASSERT_EQ(L.readoutResidual.size(), 12u);
    EXPECT_LE(L.readoutResidual[0], 1e-6f);
    EXPECT_NEAR(L.readoutPlanarity[0], 1.0f, 1e-6f);
    EXPECT_NEAR(L.readoutPlanarity[1], 0.5f, 1e-6f);
    EXPECT_NEAR(L.readoutResidual[1], 0.5f, 1e-6f);
    ASSERT_EQ(L.readoutSpectrum.shape, (std::vector<int64_t>{12, 3}));
    EXPECT_NEAR(L.readoutSpectrum.at2(0, 0), std::sqrt(2.0f), 1e-5f); // ||(e0+e1) ^ e2||
    EXPECT_NEAR(L.readoutSpectrum.at2(1, 0), 1.0f, 1e-5f);
    EXPECT_NEAR(L.readoutSpectrum.at2(1, 1), 1.0f, 1e-5f);
    // Channel 0's top plane is span(e0 + e1, e2): its basis has no e3..e5 part and is orthonormal.
    ASSERT_EQ(L.readoutTopPlane.shape, (std::vector<int64_t>{12, 6, 2}));
    Eigen::MatrixXd q(6, 2);
    for (int i = 0; i < 6; ++i)
        for (int k = 0; k < 2; ++k)
            q(i, k) = L.readoutTopPlane.at3(0, i, k);
    Eigen::MatrixXd ref(6, 2);
    ref << u, v;
    EXPECT_LE(geo::principalAngles(q, ref).angles.maxCoeff(), 1e-5);
}

TEST(ReadoutAnalysis, ContributionsAndAnglesMatchDirectRecomputation) {
    // Three offsets (W_plu B_t by one GEMM on B) and one or two (the contributions as the mean of
    // the per-offset projections the influence computes), with either wedge order.
    for (const std::vector<int>& offsets : {std::vector<int>{1, 2, 4}, std::vector<int>{1, 3}, std::vector<int>{2}})
        for (const bool pastFirst : {false, true}) {
            SCOPED_TRACE("offsets " + std::to_string(offsets.size()) + (pastFirst ? ", past first" : ""));
            Trace tr = grassmannTrace(14, 10, 5, 1, offsets, 5);
            tr.config.stages.wedgePastFirst = pastFirst;
            const GrassmannLayerTrace& g = *tr.layers[0].grassmann;
            const TraceAnalysis an = analyzeTrace(tr);
            const GrassmannLayerAnalysis& L = an.grassmann[0];
            const int64_t T = 14, d = 10;
            const int64_t first = *std::min_element(offsets.begin(), offsets.end());
            ASSERT_EQ(L.readoutContribution.shape, (std::vector<int64_t>{T, d}));
            ASSERT_EQ(L.readoutAngles.shape, (std::vector<int64_t>{T, d, 2}));
            for (int64_t t = 0; t < first; ++t)
                for (int64_t c = 0; c < d; ++c)
                    EXPECT_TRUE(std::isnan(L.readoutContribution.at2(t, c)));
            for (int64_t t = first; t < T; ++t) {
                // B_t straight from model-spec steps 3-5 (z_{t-D} ^ z_t when the past comes first), and
                // its plane (it is one) from the planarity routine.
                Eigen::VectorXd b = Eigen::VectorXd::Zero(g.wPlu.dim(1));
                int count = 0;
                for (int D : g.offsets) {
                    if (t - D < 0) continue;
                    const Eigen::VectorXd p =
                        pastFirst ? geo::wedge(zRow(g, t - D), zRow(g, t)) : geo::wedge(zRow(g, t), zRow(g, t - D));
                    b += p / std::max(p.norm(), 1e-8);
                    ++count;
                }
                b /= count;
                const geo::Planarity plane = geo::planarity(b);
                for (int64_t c = 0; c < d; ++c) {
                    const Eigen::VectorXd w = wRow(g, c);
                    EXPECT_NEAR(L.readoutContribution.at2(t, c), w.dot(b), 1e-5 * (1 + std::abs(w.dot(b))))
                        << t << " " << c;
                    const geo::Planarity top = geo::planarity(w);
                    const Eigen::VectorXd ref = geo::principalAngles(plane.basis, top.basis).angles;
                    EXPECT_NEAR(L.readoutAngles.at3(t, c, 0), ref[0], 2e-4) << t << " " << c;
                    EXPECT_NEAR(L.readoutAngles.at3(t, c, 1), ref[1], 2e-4) << t << " " << c;
                }
            }
            if (offsets.size() != 3) continue;
            // Top channels: sorted by |contribution|, none at t = 0.
            EXPECT_TRUE(topReadoutChannels(L, 0, 3).empty());
            const std::vector<int> top = topReadoutChannels(L, 9, 4);
            ASSERT_EQ(top.size(), 4u);
            for (size_t i = 1; i < top.size(); ++i)
                EXPECT_GE(std::abs(L.readoutContribution.at2(9, top[i - 1])),
                          std::abs(L.readoutContribution.at2(9, top[i])));
            for (int64_t c = 0; c < d; ++c) {
                if (std::find(top.begin(), top.end(), c) == top.end()) {
                    EXPECT_LE(std::abs(L.readoutContribution.at2(9, c)),
                              std::abs(L.readoutContribution.at2(9, top.back())));
                }
            }
            for (const char* key : {"readoutResidual", "readoutPlanarity", "readoutSpectrum", "readoutTopPlane",
                                    "readoutContribution", "readoutAngles"})
                EXPECT_TRUE(definitions().count(key)) << key;
        }
}

TEST(ReadoutAnalysis, CacheGivesTheSameAnalysisAndIsKeyedByTheWeights) {
    // One cache across traces of two different models (and again): every analysis equals the one
    // computed without a cache, so a hit never hands one model's read-out planes to another.
    const Trace a = grassmannTrace(12, 10, 5, 2, {1, 2}, 31);
    const Trace b = grassmannTrace(12, 10, 5, 2, {1, 2}, 32);
    // b's layer 1 differs from a's in one W_plu entry only.
    Trace c = a;
    c.layers[1].grassmann->wPlu.data[7] += 0.25f;
    const std::shared_ptr<AnalysisCache> cache = makeAnalysisCache();
    AnalysisOptions cached;
    cached.cache = cache;
    for (int round = 0; round < 2; ++round)
        for (const Trace* tr : std::initializer_list<const Trace*>{&a, &b, &c}) {
            const TraceAnalysis plain = analyzeTrace(*tr);
            const TraceAnalysis hit = analyzeTrace(*tr, cached);
            ASSERT_EQ(plain.grassmann.size(), hit.grassmann.size());
            for (size_t l = 0; l < plain.grassmann.size(); ++l) {
                const GrassmannLayerAnalysis& p = plain.grassmann[l];
                const GrassmannLayerAnalysis& h = hit.grassmann[l];
                auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
                    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](float u, float v) {
                               return u == v || (std::isnan(u) && std::isnan(v));
                           });
                };
                EXPECT_TRUE(same(p.readoutResidual, h.readoutResidual)) << "layer " << l;
                EXPECT_TRUE(same(p.readoutPlanarity, h.readoutPlanarity)) << "layer " << l;
                EXPECT_TRUE(same(p.readoutSpectrum.data, h.readoutSpectrum.data)) << "layer " << l;
                EXPECT_TRUE(same(p.readoutTopPlane.data, h.readoutTopPlane.data)) << "layer " << l;
                EXPECT_TRUE(same(p.readoutAngles.data, h.readoutAngles.data)) << "layer " << l;
            }
        }
    // The changed entry changes layer 1's read-out of c, so the cache must have told them apart.
    const TraceAnalysis ta = analyzeTrace(a, cached), tc = analyzeTrace(c, cached);
    EXPECT_NE(ta.grassmann[1].readoutSpectrum.data, tc.grassmann[1].readoutSpectrum.data);
    EXPECT_EQ(ta.grassmann[0].readoutSpectrum.data, tc.grassmann[0].readoutSpectrum.data);
}

TEST(ReadoutAnalysis, WeightOnlyResultsAreKeptOnDiskKeyedByTheWeights) {
    // The read-out planes and the reading subspaces are stored under a hash of the weights: a fresh
    // process (here: no in-memory cache) reads them back and gets the same analysis; other weights
    // get another file; a damaged file is ignored and replaced; GWB_CACHE_DIR=none keeps nothing.
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("gwb-readout-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const char* before = std::getenv("GWB_CACHE_DIR");
    const std::string saved = before ? before : "";
    ::setenv("GWB_CACHE_DIR", dir.c_str(), 1);
    auto files = [&](const std::string& prefix = "readout-") {
        std::vector<fs::path> out;
        if (fs::exists(dir))
            for (const auto& e : fs::directory_iterator(dir))
                if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
        std::sort(out.begin(), out.end());
        return out;
    };
    auto readout = [](const TraceAnalysis& a) {
        std::vector<float> out;
        for (const GrassmannLayerAnalysis& g : a.grassmann) {
            out.insert(out.end(), g.readoutResidual.begin(), g.readoutResidual.end());
            out.insert(out.end(), g.readoutSpectrum.data.begin(), g.readoutSpectrum.data.end());
            out.insert(out.end(), g.readoutTopPlane.data.begin(), g.readoutTopPlane.data.end());
            out.insert(out.end(), g.readoutAngles.data.begin(), g.readoutAngles.data.end());
        }
        return out;
    };
    const Trace a = grassmannTrace(12, 10, 5, 2, {1, 2}, 41);
    const TraceAnalysis firstAnalysis = analyzeTrace(a);
    const std::vector<float> first = readout(firstAnalysis);
    const std::vector<fs::path> stored = files();
    ASSERT_EQ(stored.size(), 2u) << "one file per layer";
    ASSERT_EQ(files("reading-").size(), 1u) << "one file for the layers' reading subspaces";
    const std::vector<fs::path> lifters = files("lifter-");
    ASSERT_EQ(lifters.size(), 2u) << "one pseudo-inverse of W_red per layer";
    const TraceAnalysis againAnalysis = analyzeTrace(a); // read from disk
    auto sameFloats = [](const std::vector<float>& x, const std::vector<float>& y) {
        return std::equal(x.begin(), x.end(), y.begin(), y.end(),
                          [](float u, float v) { return u == v || (std::isnan(u) && std::isnan(v)); });
    };
    for (size_t l = 0; l < 2; ++l) // the angles between layers, through the stored pseudo-inverses
        EXPECT_TRUE(sameFloats(againAnalysis.grassmann[l].anglesNext.data, firstAnalysis.grassmann[l].anglesNext.data));
    // A damaged lifter file: ignored and replaced, the same angles.
    fs::resize_file(lifters[0], fs::file_size(lifters[0]) - 8);
    EXPECT_TRUE(sameFloats(analyzeTrace(a).grassmann[0].anglesNext.data, firstAnalysis.grassmann[0].anglesNext.data));
    EXPECT_EQ(files("lifter-"), lifters);
    EXPECT_EQ(fs::file_size(lifters[0]), fs::file_size(lifters[1]));
    const std::vector<float> again = readout(againAnalysis);
    EXPECT_TRUE(std::equal(first.begin(), first.end(), again.begin(), again.end(),
                           [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); }));
    EXPECT_EQ(againAnalysis.readingSubspaceDistance.data, firstAnalysis.readingSubspaceDistance.data);
    EXPECT_EQ(againAnalysis.readingSubspaceDistance.shape, firstAnalysis.readingSubspaceDistance.shape);
    // A damaged reading file: ignored and replaced, the same distances.
    fs::resize_file(files("reading-")[0], fs::file_size(files("reading-")[0]) - 4);
    EXPECT_EQ(analyzeTrace(a).readingSubspaceDistance.data, firstAnalysis.readingSubspaceDistance.data);
    // A damaged file: ignored, the planes recomputed and the file replaced.
    {
        std::fstream f(stored[0], std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(40);
        f.put('\x7f');
        f.seekp(static_cast<std::streamoff>(fs::file_size(stored[0]) - 3));
        f.put('\x01');
    }
    fs::resize_file(stored[1], fs::file_size(stored[1]) - 8); // truncated
    const std::vector<float> repaired = readout(analyzeTrace(a));
    EXPECT_TRUE(std::equal(first.begin(), first.end(), repaired.begin(), repaired.end(),
                           [](float x, float y) { return x == y || (std::isnan(x) && std::isnan(y)); }));
    EXPECT_EQ(files(), stored);
    // Other weights: other files (W_plu: the read-out planes of that layer; W_red: the reading subspaces).
    Trace b = a;
    b.layers[0].grassmann->wPlu.data[3] += 0.5f;
    analyzeTrace(b);
    EXPECT_EQ(files().size(), 3u);
    b.layers[1].grassmann->wRed.data[2] += 0.5f;
    const TraceAnalysis ab = analyzeTrace(b);
    EXPECT_EQ(files("reading-").size(), 2u);
    EXPECT_NE(ab.readingSubspaceDistance.data, firstAnalysis.readingSubspaceDistance.data);
    // Turned off: nothing written.
    fs::remove_all(dir);
    ::setenv("GWB_CACHE_DIR", "none", 1);
    analyzeTrace(a);
    EXPECT_TRUE(files("").empty());
    if (before)
        ::setenv("GWB_CACHE_DIR", saved.c_str(), 1);
    else
        ::unsetenv("GWB_CACHE_DIR");
    fs::remove_all(dir);
}
