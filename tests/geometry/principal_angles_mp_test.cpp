// Principal angles of rounded (random-orthogonal) inputs against a 40-digit mpmath reference of the
// very same stored doubles. Skipped when no python3 with mpmath is available.
#include "gwb/geometry/subspace.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace gwb::geometry;
using namespace gwb::geometry::test;
namespace fs = std::filesystem;

namespace {
std::string pythonWithMpmath() {
    for (const char* py : {"/usr/bin/python3", "python3"}) {
        const std::string cmd = std::string(py) + " -c \"import mpmath\" > /dev/null 2>&1";
        if (std::system(cmd.c_str()) == 0) return py;
    }
    return "";
}

constexpr const char* kScript = R"(import sys
from mpmath import mp, mpf, sqrt, asin, acos
mp.dps = 40
vals = open(sys.argv[1]).read().split()
n, ka, kb = int(vals[0]), int(vals[1]), int(vals[2])
nums = [mpf(float(v)) for v in vals[3:]]  # the exact stored doubles, not the decimal strings
A = [[nums[i * ka + j] for i in range(n)] for j in range(ka)]
off = n * ka
B = [[nums[off + i * kb + j] for i in range(n)] for j in range(kb)]
def orth(cols):
    q = []
    for c in cols:
        v = list(c)
        for _ in range(2):
            for u in q:
                h = sum(a * b for a, b in zip(u, v))
                v = [x - h * y for x, y in zip(v, u)]
        nv = sqrt(sum(x * x for x in v))
        q.append([x / nv for x in v])
    return q
qa, qb = orth(A), orth(B)
if len(qa) < len(qb):
    qa, qb = qb, qa
C = mp.matrix([[sum(a * b for a, b in zip(u, w)) for w in qb] for u in qa])
S = mp.matrix(n, len(qb))
for j, w in enumerate(qb):
    for i in range(n):
        S[i, j] = w[i] - sum(C[m, j] * qa[m][i] for m in range(len(qa)))
cos = sorted(mp.svd_r(C, compute_uv=False), reverse=True)
sin = sorted(mp.svd_r(S, compute_uv=False))
for c, s in zip(cos, sin):
    print(mp.nstr(asin(s) if s * s <= mpf(1) / 2 else acos(c), 30))
)";

std::vector<double> reference(const std::string& py, const Eigen::MatrixXd& a, const Eigen::MatrixXd& b,
                              const fs::path& dir) {
    const fs::path data = dir / "in.txt", script = dir / "ref.py", out = dir / "out.txt";
    {
        std::ofstream f(data);
        f << a.rows() << " " << a.cols() << " " << b.cols() << "\n";
        char buf[40];
        for (const Eigen::MatrixXd* m : {&a, &b})
            for (Eigen::Index i = 0; i < m->rows(); ++i)
                for (Eigen::Index j = 0; j < m->cols(); ++j) {
                    std::snprintf(buf, sizeof buf, "%.17g ", (*m)(i, j));
                    f << buf;
                }
        std::ofstream(script) << kScript;
    }
    const std::string cmd = py + " " + script.string() + " " + data.string() + " > " + out.string();
    if (std::system(cmd.c_str()) != 0) return {};
    std::vector<double> th;
    std::ifstream in(out);
    std::string line;
    while (std::getline(in, line))
        th.push_back(std::strtod(line.c_str(), nullptr));
    return th;
}
} // namespace

TEST(PrincipalAnglesHighPrecision, RoundedInputsMatchMpmath) {
    const std::string py = pythonWithMpmath();
    if (py.empty()) GTEST_SKIP() << "no python3 with mpmath";
    const fs::path dir = fs::temp_directory_path() / ("gwb_mp_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::vector<std::vector<double>> sets = {
        {1e-9, 1.4},
        {1e-6, 1.2},
        {1e-12, 1.5707963267948966},
        {1e-12, 1e-10, 1e-8, 1e-6},
        {1e-4, 0.3, 0.785, 0.786, 1.5},
        {2e-8, 2.1e-8, 1.0},
    };
    uint64_t seed = 300;
    double worst = 0;
    for (const auto& th : sets) {
        const auto k = static_cast<Eigen::Index>(th.size());
        const AnglePair s = subspacesWithAngles(randomOrthogonal(2 * k + 3, ++seed), th);
        // A non-orthonormal basis of span(Qa) as well, so the QR/orthonormalization path is exercised.
        const Eigen::MatrixXd a = s.qa * randomMatrix(k, k, seed + 1000);
        for (const Eigen::MatrixXd* first : {&s.qa, &a}) {
            const std::vector<double> ref = reference(py, *first, s.qb, dir);
            ASSERT_EQ(ref.size(), th.size()) << "mpmath reference failed";
            const PrincipalAngles got = principalAngles(*first, s.qb);
            for (size_t i = 0; i < ref.size(); ++i) {
                worst = std::max(worst, std::abs(got.angles[static_cast<Eigen::Index>(i)] - ref[i]) / ref[i]);
                EXPECT_LE(std::abs(got.angles[static_cast<Eigen::Index>(i)] - ref[i]), 1e-10 * ref[i])
                    << "angle " << i << ": reference " << ref[i] << " got " << got.angles[static_cast<Eigen::Index>(i)]
                    << " (nominal " << th[i] << ")";
            }
        }
    }
    RecordProperty("worst_relative_error", std::to_string(worst));
    std::printf("worst relative error vs mpmath: %.3g\n", worst);
    fs::remove_all(dir);
}
