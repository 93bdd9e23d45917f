#include "gwb/engine/npy.h"

#include "gwb/engine/file_error.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace gwb::engine;
namespace fs = std::filesystem;

namespace {
fs::path freshDir(const std::string& tag) {
    const fs::path dir = fs::temp_directory_path() / ("gwb_npy_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

// A python3 that has numpy, or "" (the numpy cross-checks are skipped without one).
std::string pythonWithNumpy() {
    for (const char* py : {"/usr/bin/python3", "python3"}) {
        const std::string cmd = std::string(py) + " -c \"import numpy\" > /dev/null 2>&1";
        if (std::system(cmd.c_str()) == 0) return py;
    }
    return "";
}

FloatArray sampleFloats() {
    FloatArray a = FloatArray::zeros({2, 3, 4});
    for (size_t i = 0; i < a.data.size(); ++i)
        a.data[i] = static_cast<float>(i) * 0.5f - 3.0f;
    a.data[5] = std::numeric_limits<float>::quiet_NaN();
    return a;
}
} // namespace

TEST(Npy, Crc32KnownValue) {
    const std::string s = "123456789";
    EXPECT_EQ(crc32Ieee(reinterpret_cast<const uint8_t*>(s.data()), s.size()), 0xCBF43926u);
}

TEST(Npy, HeaderIsAlignedAndRoundTrips) {
    const FloatArray a = sampleFloats();
    const std::vector<uint8_t> bytes = encodeNpy(a);
    const size_t headerLen = bytes[8] | (size_t{bytes[9]} << 8);
    EXPECT_EQ((10 + headerLen) % 64, 0u);
    EXPECT_EQ(bytes[10 + headerLen - 1], '\n');
    const NpyArray back = parseNpy(bytes);
    EXPECT_EQ(back.type, NpyType::Float32);
    EXPECT_EQ(back.shape, a.shape);
    const std::vector<float> v = back.values<float>();
    for (size_t i = 0; i < v.size(); ++i)
        if (i != 5) {
            EXPECT_EQ(v[i], a.data[i]);
        }
    EXPECT_TRUE(std::isnan(v[5]));

    Array<int64_t> i64({3}, {1, -2, 1LL << 40});
    EXPECT_EQ(parseNpy(encodeNpy(i64)).values<int64_t>(), i64.data);
    Array<uint8_t> u8({2, 2}, {0, 1, 254, 255});
    EXPECT_EQ(parseNpy(encodeNpy(u8)).values<uint8_t>(), u8.data);
    Array<double> scalar({}, {3.25});
    const NpyArray s = parseNpy(encodeNpy(scalar));
    EXPECT_TRUE(s.shape.empty());
    EXPECT_EQ(s.values<double>()[0], 3.25);
}

TEST(Npy, NpzRoundTripWithExtraMember) {
    NpzWriter w;
    w.add("x", sampleFloats());
    w.add("ids", IntArray({4}, {7, 8, 9, 10}));
    w.addFile("meta.json", "{\"model\": \"test\"}");
    EXPECT_THROW(w.add("x", sampleFloats()), std::invalid_argument);
    const auto members = readZipStored(w.archive());
    ASSERT_EQ(members.size(), 3u);
    EXPECT_EQ(parseNpy(members.at("ids.npy")).values<int32_t>(), (std::vector<int32_t>{7, 8, 9, 10}));
    EXPECT_EQ(std::string(members.at("meta.json").begin(), members.at("meta.json").end()), "{\"model\": \"test\"}");
    // A flipped payload byte is caught by the CRC.
    std::vector<uint8_t> bad = w.archive();
    bad[40] ^= 0xff;
    EXPECT_THROW(readZipStored(bad), std::runtime_error);
}

TEST(Npy, AtomicWriteAndErrors) {
    const fs::path dir = freshDir("atomic");
    const std::string path = (dir / "a.npy").string();
    writeNpy(path, sampleFloats());
    writeNpy(path, IntArray({2}, {1, 2})); // replaces atomically
    EXPECT_EQ(readNpy(path).values<int32_t>(), (std::vector<int32_t>{1, 2}));
    size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir))
        ++files;
    EXPECT_EQ(files, 1u); // no temp file left behind
    try {
        writeNpy((dir / "missing" / "b.npy").string(), sampleFloats());
        FAIL() << "expected an error for a missing folder";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot write"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
    }
    EXPECT_THROW(readNpy((dir / "nope.npy").string()), std::runtime_error);
    EXPECT_THROW(parseNpy(std::vector<uint8_t>{1, 2, 3}), std::runtime_error);
    std::vector<uint8_t> truncated = encodeNpy(sampleFloats());
    truncated.resize(truncated.size() - 4);
    EXPECT_THROW(parseNpy(truncated), std::runtime_error);
    fs::remove_all(dir);
}

// Issue 67: a failed write is a FileError naming the file asked for (never the temporary one) with
// its errno, which the Python package raises as the matching OSError subclass.
TEST(Npy, AFailedWriteIsAFileErrorNamingTheFile) {
    const fs::path dir = freshDir("file-error");
    const std::string missing = (dir / "missing" / "b.npy").string();
    try {
        writeNpy(missing, sampleFloats());
        FAIL() << "wrote into a missing folder";
    } catch (const gwb::engine::FileError& e) {
        EXPECT_EQ(e.path, missing);
        EXPECT_EQ(e.errorNumber, ENOENT);
        EXPECT_EQ(std::string(e.what()),
                  "cannot write '" + missing + "': the folder '" + (dir / "missing").string() + "' does not exist");
    }
    try {
        writeNpy(dir.string(), sampleFloats()); // a folder in the file's place
        FAIL() << "wrote over a folder";
    } catch (const gwb::engine::FileError& e) {
        EXPECT_EQ(e.errorNumber, EISDIR) << e.what();
        EXPECT_EQ(std::string(e.what()).find(".tmp"), std::string::npos) << e.what();
    }
}

TEST(Npy, NumpyReadsOurFiles) {
    const std::string py = pythonWithNumpy();
    if (py.empty()) GTEST_SKIP() << "no python3 with numpy";
    const fs::path dir = freshDir("numpy");
    writeNpy((dir / "f4.npy").string(), sampleFloats());
    writeNpy((dir / "f8.npy").string(), Array<double>({2, 2}, {1.5, -2.5, 1e300, 0}));
    writeNpy((dir / "i4.npy").string(), IntArray({3}, {-1, 0, 2147483647}));
    writeNpy((dir / "i8.npy").string(), Array<int64_t>({1, 2}, {-5, 1LL << 50}));
    writeNpy((dir / "u1.npy").string(), Array<uint8_t>({3}, {0, 128, 255}));
    NpzWriter w;
    w.add("x", sampleFloats());
    w.add("ids", IntArray({4}, {7, 8, 9, 10}));
    w.addFile("meta.json", "{\"model\": \"test\"}");
    w.write((dir / "all.npz").string());
    const fs::path script = dir / "check.py";
    std::ofstream(script)
        << "import numpy as np, sys, json, zipfile\n"
           "d = sys.argv[1]\n"
           "a = np.load(d + '/f4.npy'); assert a.dtype == np.float32 and a.shape == (2, 3, 4)\n"
           "assert a[0, 1, 1] != a[0, 1, 1] and a[1, 2, 3] == 23 * 0.5 - 3\n"
           "b = np.load(d + '/f8.npy'); assert b.dtype == np.float64 and b[1, 0] == 1e300\n"
           "assert np.load(d + '/i4.npy').tolist() == [-1, 0, 2147483647]\n"
           "c = np.load(d + '/i8.npy'); assert c.dtype == np.int64 and c[0, 1] == 2 ** 50\n"
           "assert np.load(d + '/u1.npy').dtype == np.uint8\n"
           "z = np.load(d + '/all.npz'); assert sorted(z.files) == ['ids', 'meta.json', 'x'], z.files\n"
           "assert z['ids'].tolist() == [7, 8, 9, 10] and z['x'].shape == (2, 3, 4)\n"
           "zf = zipfile.ZipFile(d + '/all.npz'); assert zf.testzip() is None\n"
           "assert json.loads(zf.read('meta.json'))['model'] == 'test'\n"
           "print('ok')\n";
    const std::string cmd = py + " " + script.string() + " " + dir.string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    fs::remove_all(dir);
}

// Inputs found by tests/fuzz/fuzz_stats (libFuzzer): each used to end in a foreign exception
// (std::invalid_argument "stoll", std::out_of_range from std::string::compare), a multi-terabyte
// allocation or undefined behaviour; each must now be refused with a message.
namespace {
std::vector<uint8_t> npyWithHeader(const std::string& header, size_t dataBytes = 0) {
    const std::string magic = "\x93NUMPY\x01";
    std::vector<uint8_t> b(magic.begin(), magic.end());
    b.push_back(0); // format 1.0
    b.push_back(static_cast<uint8_t>(header.size() & 0xff));
    b.push_back(static_cast<uint8_t>(header.size() >> 8));
    b.insert(b.end(), header.begin(), header.end());
    b.resize(b.size() + dataBytes, 0);
    return b;
}

/// The message of the std::runtime_error that parseNpy(b) throws ("" when it throws none).
std::string npyRefusal(const std::vector<uint8_t>& b) {
    try {
        (void)parseNpy(b).values<double>();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}
} // namespace

TEST(Npy, FuzzFoundShapesAreRefusedWithAMessage) {
    const std::string head = "{'descr': '<f4', 'fortran_order': False, 'shape': ";
    EXPECT_NE(npyRefusal(npyWithHeader(head + "(\xff\xff,), }")).find("malformed shape"), std::string::npos);
    EXPECT_NE(npyRefusal(npyWithHeader(head + "(-1,), }")).find("malformed shape"), std::string::npos);
    EXPECT_NE(npyRefusal(npyWithHeader(head + "(99999999999999999999999,), }")).find("too large"), std::string::npos);
    EXPECT_NE(
        npyRefusal(npyWithHeader(head + "(4611686018427387904, 4611686018427387904, 0), }")).find("too many elements"),
        std::string::npos);
    // A billion elements declared, none present: refused before anything is allocated.
    EXPECT_NE(npyRefusal(npyWithHeader(head + "(1000000000,), }")).find("truncated data"), std::string::npos);
    // fortran_order at the very end of the header, with no value.
    EXPECT_NE(npyRefusal(npyWithHeader("{'descr': '<f4', 'shape': (1,), 'fortran_order':    ")).find("fortran_order"),
              std::string::npos);
    // Still fine: a zero extent, and a plain shape with its data.
    EXPECT_EQ(parseNpy(npyWithHeader(head + "(3, 0), }")).count(), 0);
    EXPECT_EQ(parseNpy(npyWithHeader(head + "(2, 3), }", 24)).count(), 6);
}

TEST(Npy, FloatsOutsideTheIntegerRangeAreRefused) {
    const Array<double> big({2}, {1.0, 1e300});
    EXPECT_THROW((void)parseNpy(encodeNpy(big)).values<int64_t>(), std::runtime_error);
    const Array<double> nan({1}, {std::numeric_limits<double>::quiet_NaN()});
    EXPECT_THROW((void)parseNpy(encodeNpy(nan)).values<int32_t>(), std::runtime_error);
    EXPECT_EQ(parseNpy(encodeNpy(Array<double>({2}, {-3.0, 7.0}))).values<int64_t>(), (std::vector<int64_t>{-3, 7}));
}
