// Thousands of random mutations of valid checkpoints through the readers: every input must end
// either in a result or in one of the readers' own exceptions (PickleError, ZipError,
// TensorFileError) with a message, never in a crash, a hang or a foreign exception.
// fuzz_pickle.cpp is the same harness for libFuzzer (clang builds).

#include "import/import_tensor_file.h"
#include "import/pickle_reader.h"
#include "test_builders.h"
#include "import/zip_reader.h"

#include <gtest/gtest.h>

#include <random>

#include "torch_fixture.inc"

namespace gwb::engine {
namespace {

constexpr int kMutationsPerSeed = 3000;

/// One random edit: flip bits, overwrite with interesting bytes, insert, delete, duplicate a
/// slice, or truncate. Several edits may stack.
std::string mutate(std::string s, std::mt19937& rng) {
    auto pick = [&](size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0; };
    static const uint8_t interesting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '.', '(', 't', 'R',  'Q',  'b', 'h',
                                          'q',  'a',  's',  'u',  'e',  ']', '}', ')', 0x85, 0x93, 0x8a};
    const int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits; ++e) {
        switch (pick(6)) {
        case 0:
            if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
            break;
        case 1:
            if (!s.empty()) s[pick(s.size())] = static_cast<char>(interesting[pick(sizeof interesting)]);
            break;
        case 2:
            s.insert(pick(s.size() + 1), 1, static_cast<char>(pick(256)));
            break;
        case 3:
            if (!s.empty()) {
                const size_t at = pick(s.size());
                s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
            }
            break;
        case 4:
            if (!s.empty()) {
                const size_t at = pick(s.size());
                const size_t len = 1 + pick(std::min<size_t>(32, s.size() - at));
                s.insert(pick(s.size() + 1), s.substr(at, len));
            }
            break;
        default:
            s.resize(pick(s.size() + 1));
            break;
        }
    }
    return s;
}

/// Runs `fn`; a reader exception is a clean failure, anything else fails the test.
template <typename F> bool cleanly(F fn, const std::string& input, int& ok) {
    try {
        fn();
        ++ok;
        return true;
    } catch (const PickleError& e) {
        EXPECT_GT(std::string(e.what()).size(), 8u);
    } catch (const ZipError& e) {
        EXPECT_GT(std::string(e.what()).size(), 8u);
    } catch (const TensorFileError& e) {
        EXPECT_GT(std::string(e.what()).size(), 8u);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "foreign exception " << typeid(e).name() << ": " << e.what() << " for input of "
                      << input.size() << " bytes";
        return false;
    }
    return true;
}

std::string fixtureArchive() {
    return {reinterpret_cast<const char*>(kTorchFixture), sizeof kTorchFixture};
}

/// The fixture's records, so mutations of data.pkl can be re-wrapped into a valid zip.
std::vector<std::pair<std::string, std::string>> fixtureRecords() {
    const ZipReader z(std::vector<uint8_t>(kTorchFixture, kTorchFixture + sizeof kTorchFixture));
    std::vector<std::pair<std::string, std::string>> r;
    for (const auto& n : z.names())
        r.emplace_back(n, std::string(z.read(n)));
    return r;
}

TEST(Fuzz, MutatedPicklesInsideValidArchives) {
    auto records = fixtureRecords();
    size_t pkl = 0;
    while (records[pkl].first != "archive/data.pkl")
        ++pkl;
    const std::string seed = records[pkl].second;
    std::mt19937 rng(1234);
    int ok = 0;
    for (int i = 0; i < kMutationsPerSeed; ++i) {
        records[pkl].second = mutate(seed, rng);
        const std::string& input = records[pkl].second;
        ASSERT_TRUE(cleanly([&] { readTorchArchive(test::makeZip(records)); }, input, ok));
        // The bare parser too, and every value of a document that parses must be describable.
        ASSERT_TRUE(cleanly(
            [&] {
                const PickleDocument d = parsePickle(input);
                for (size_t v = 0; v < d.size(); ++v)
                    (void)d.describe(static_cast<PickleId>(v));
            },
            input, ok));
    }
    std::cout << "[          ] " << ok << " of " << 2 * kMutationsPerSeed << " mutated inputs still parsed\n";
}

TEST(Fuzz, MutatedArchives) {
    const std::string seed = fixtureArchive();
    std::mt19937 rng(99);
    int ok = 0;
    for (int i = 0; i < kMutationsPerSeed; ++i) {
        const std::string input = mutate(seed, rng);
        ASSERT_TRUE(cleanly([&] { readTorchArchive(std::vector<uint8_t>(input.begin(), input.end())); }, input, ok));
    }
    std::cout << "[          ] " << ok << " of " << kMutationsPerSeed << " mutated archives still read\n";
}

TEST(Fuzz, MutatedSafetensors) {
    const std::string header =
        R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"I64","shape":[1],"data_offsets":[12,20]}})";
    std::string seed(8, '\0');
    for (int i = 0; i < 8; ++i)
        seed[static_cast<size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
    seed += header + std::string(20, '\x11');
    std::mt19937 rng(7);
    int ok = 0;
    for (int i = 0; i < kMutationsPerSeed; ++i) {
        const std::string input = mutate(seed, rng);
        ASSERT_TRUE(
            cleanly([&] { readSafetensorsBytes(std::vector<uint8_t>(input.begin(), input.end())); }, input, ok));
    }
    EXPECT_GT(ok, 0);
}

} // namespace
} // namespace gwb::engine
