// The Torch-free checkpoint readers: zip records, the restricted unpickler, tensor views,
// safetensors. Inputs are a real torch.save archive (torch_fixture.inc) and hand-built bytes.

#include "import/import_tensor_file.h"
#include "import/pickle_reader.h"
#include "test_builders.h"
#include "import/zip_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "torch_fixture.inc"

namespace gwb::engine {
namespace {

std::vector<uint8_t> fixture() {
    return {kTorchFixture, kTorchFixture + sizeof kTorchFixture};
}

/// Expects `fn` to throw an exception of type E whose message contains `needle`.
template <typename E, typename F> void expectError(F fn, const std::string& needle) {
    try {
        fn();
        ADD_FAILURE() << "no exception; expected one mentioning '" << needle << "'";
    } catch (const E& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

std::vector<float> values(const TensorFile& f, const std::string& name) {
    return f.tensors.at(name).toFloat();
}

TEST(TorchArchive, ReadsRealTorchSaveOutput) {
    const TensorFile f = readTorchArchive(fixture());
    EXPECT_EQ(f.format, "torch-zip");
    std::vector<float> base(12);
    for (int i = 0; i < 12; ++i)
        base[static_cast<size_t>(i)] = static_cast<float>(i) / 4.0f;
    // `_orig_mod.` stripped; tied names each get the shared storage's values.
    EXPECT_EQ(values(f, "emb.weight"), base);
    EXPECT_EQ(values(f, "head.weight"), base);
    EXPECT_EQ(f.tensors.at("emb.weight").shape, (std::vector<int64_t>{3, 4}));
    // Transposed view: element [c][r] = base[r][c].
    const auto t = values(f, "t");
    ASSERT_EQ(f.tensors.at("t").shape, (std::vector<int64_t>{4, 3}));
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c)
            EXPECT_EQ(t[static_cast<size_t>(c * 3 + r)], base[static_cast<size_t>(r * 4 + c)]);
    EXPECT_EQ(values(f, "row"), (std::vector<float>{2.0f, 2.25f, 2.5f, 2.75f})); // storage offset 8
    EXPECT_EQ(f.tensors.at("half").dtype, ScalarType::Float16);
    EXPECT_EQ(values(f, "half"), base);
    EXPECT_EQ(f.tensors.at("bf").dtype, ScalarType::BFloat16);
    EXPECT_EQ(values(f, "bf"), base);
    EXPECT_EQ(f.tensors.at("idx").toInt64(), (std::vector<int64_t>{0, 0, 1, -5}));
    EXPECT_TRUE(f.tensors.at("scalar").shape.empty());
    EXPECT_EQ(values(f, "scalar"), std::vector<float>{2.5f});
    EXPECT_EQ(f.metadata.at("epoch"), "4");
    EXPECT_DOUBLE_EQ(std::stod(f.metadata.at("val_ppl")), 12.25); // numpy float64 record
    EXPECT_EQ(f.metadata.at("args.name"), "tiny");                // argparse.Namespace fields
    EXPECT_DOUBLE_EQ(std::stod(f.metadata.at("args.lr")), 0.001);
    EXPECT_EQ(f.metadata.at("torch.format_version"), "3");
    expectError<TensorFileError>([&] { f.tensors.at("emb.weight").toInt64(); }, "integer tensor");
}

TEST(TorchArchive, PrefixStripping) {
    EXPECT_EQ(stripStateDictPrefixes("_orig_mod.module.blocks.0.x"), "blocks.0.x");
    EXPECT_EQ(stripStateDictPrefixes("module._orig_mod.a"), "a");
    EXPECT_EQ(stripStateDictPrefixes("blocks.module.x"), "blocks.module.x");
}

/// A one-tensor archive with the given pickle and storage bytes.
std::vector<uint8_t> archive(const std::string& pkl, const std::string& storage,
                             const std::string& byteorder = "little") {
    return test::makeZip(
        {{"m/data.pkl", pkl}, {"m/byteorder", byteorder}, {"m/data/0", storage}, {"m/version", "3\n"}});
}

std::string dictOf(const std::string& type, int32_t numel, int32_t offset, std::vector<int32_t> size,
                   std::vector<int32_t> stride) {
    return test::PickleWriter().op('}').str("w").tensor(type, "0", numel, offset, size, stride).op('s').done();
}

TEST(TorchArchive, HandBuiltViewsAndByteOrder) {
    const std::string data = test::floatBytes({1, 2, 3, 4, 5, 6});
    // A 2 x 2 view starting at element 1 with strides (3, 1): rows [2, 3] and [5, 6].
    const auto f = readTorchArchive(archive(dictOf("FloatStorage", 6, 1, {2, 2}, {3, 1}), data));
    EXPECT_EQ(values(f, "w"), (std::vector<float>{2, 3, 5, 6}));
    // Stride 0 repeats an element.
    const auto g = readTorchArchive(archive(dictOf("FloatStorage", 6, 2, {3}, {0}), data));
    EXPECT_EQ(values(g, "w"), (std::vector<float>{3, 3, 3}));
    // Big-endian storages are swapped on read.
    std::string be = data;
    for (size_t i = 0; i < be.size(); i += 4)
        std::reverse(be.begin() + static_cast<long>(i), be.begin() + static_cast<long>(i) + 4);
    const auto h = readTorchArchive(archive(dictOf("FloatStorage", 6, 0, {6}, {1}), be, "big"));
    EXPECT_EQ(values(h, "w"), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(TorchArchive, TorchTwoTensorWrapper) {
    // torch 2.x: _rebuild_from_type_v2(_rebuild_tensor_v2, torch.Tensor, (args...), {}).
    const std::string data = test::floatBytes({7, 8});
    test::PickleWriter w;
    w.op('}').str("w").global("torch._tensor", "_rebuild_from_type_v2").op('(');
    w.global("torch._utils", "_rebuild_tensor_v2").global("torch", "Tensor").op('(');
    w.storage("FloatStorage", "0", 2).integer(0).ints({2}).ints({1}).op('\x89');
    w.global("collections", "OrderedDict").op(')').op('R').op('t').op('}').op('t').op('R').op('s');
    const auto f = readTorchArchive(archive(w.done(), data));
    EXPECT_EQ(values(f, "w"), (std::vector<float>{7, 8}));
}

TEST(TorchArchive, BadTensorsNameTheProblem) {
    const std::string data = test::floatBytes({1, 2, 3, 4});
    expectError<PickleError>([&] { readTorchArchive(archive(dictOf("FloatStorage", 4, 0, {5}, {1}), data)); },
                             "reaches element 4 of a storage with 4 elements");
    expectError<PickleError>([&] { readTorchArchive(archive(dictOf("FloatStorage", 4, 0, {2}, {-1}), data)); },
                             "negative or huge");
    expectError<PickleError>(
        [&] {
            readTorchArchive(archive(dictOf("FloatStorage", 4, 0, {2, 2}, {1}), data));
        },
        "size and stride differ");
    expectError<TensorFileError>([&] { readTorchArchive(archive(dictOf("FloatStorage", 8, 0, {8}, {1}), data)); },
                                 "fewer than its 8 float32 elements");
    expectError<TensorFileError>(
        [&] { readTorchArchive(archive(dictOf("FloatStorage", 4, 0, {4}, {1}), data, "middle")); }, "byteorder");
    const auto missing = test::makeZip({{"m/data.pkl", dictOf("FloatStorage", 4, 0, {4}, {1})}});
    expectError<TensorFileError>([&] { readTorchArchive(missing); }, "missing record 'm/data/0'");
    expectError<TensorFileError>([&] { readTorchArchive(test::makeZip({{"x.txt", "hi"}})); }, "data.pkl");
    const std::string list = test::PickleWriter().op(']').done();
    expectError<TensorFileError>([&] { readTorchArchive(archive(list, data)); }, "not a state_dict");
}

TEST(Pickle, RefusesClassesOutsideTheAllowedSet) {
    // The classic exploit: os.system("...") through REDUCE. Refused at the GLOBAL, before any call.
    const std::string evil =
        test::PickleWriter().global("os", "system").str("touch /tmp/pwned").op('\x85').op('R').done();
    expectError<PickleError>([&] { parsePickle(evil); }, "'os.system', which is outside the allowed set");
    const std::string evil2 = test::PickleWriter().str("builtins").str("eval").op('\x93').done();
    expectError<PickleError>([&] { parsePickle(evil2); }, "'builtins.eval'");
    // An allowed plain-data class becomes an opaque record holding its arguments.
    const auto doc = parsePickle(test::PickleWriter()
                                     .global("argparse", "Namespace")
                                     .op(')')
                                     .op('\x81')
                                     .op('}')
                                     .str("lr")
                                     .integer(3)
                                     .op('s')
                                     .op('b')
                                     .done());
    const PickleValue& ns = doc.at(doc.root());
    EXPECT_EQ(ns.kind, PickleValue::Kind::Object);
    EXPECT_EQ(ns.text, "argparse.Namespace");
    EXPECT_EQ(doc.at(doc.find(ns.state, "lr")).integer, 3);
}

TEST(Pickle, PlainContainersAndScalars) {
    const std::string p = test::PickleWriter()
                              .op('(')
                              .integer(-7)
                              .raw("K\xff")
                              .raw("M\x34\x12")
                              .raw("\x8a\x01\xfe")
                              .raw(std::string("G\x3f\xf8\0\0\0\0\0\0", 9))
                              .op('N')
                              .op('\x88')
                              .op('\x89')
                              .raw("C\x02hi")
                              .str("caf\xc3\xa9")
                              .op(']')
                              .op('q')
                              .raw("\x01")
                              .op('h')
                              .raw("\x01")
                              .op('l')
                              .done();
    const auto doc = parsePickle(p);
    const PickleValue& l = doc.at(doc.root());
    ASSERT_EQ(l.kind, PickleValue::Kind::List);
    ASSERT_EQ(l.items.size(), 12u);
    EXPECT_EQ(doc.at(l.items[0]).integer, -7);
    EXPECT_EQ(doc.at(l.items[1]).integer, 255);
    EXPECT_EQ(doc.at(l.items[2]).integer, 0x1234);
    EXPECT_EQ(doc.at(l.items[3]).integer, -2); // LONG1 two's complement
    EXPECT_DOUBLE_EQ(doc.at(l.items[4]).number, 1.5);
    EXPECT_EQ(doc.at(l.items[5]).kind, PickleValue::Kind::None);
    EXPECT_TRUE(doc.at(l.items[6]).boolean);
    EXPECT_FALSE(doc.at(l.items[7]).boolean);
    EXPECT_EQ(doc.at(l.items[8]).text, "hi");
    EXPECT_EQ(doc.at(l.items[9]).text, "caf\xc3\xa9");
    EXPECT_EQ(doc.at(l.items[10]).kind, PickleValue::Kind::List);
    EXPECT_EQ(l.items[10], l.items[11]); // BINGET returns the memoized list itself
}

TEST(Pickle, MalformedInputsEndInPickleError) {
    expectError<PickleError>([] { parsePickle(""); }, "unexpected end");
    expectError<PickleError>([] { parsePickle("\x80\x02}"); }, "no STOP");
    expectError<PickleError>([] { parsePickle("\x80\x02."); }, "stack underflow");
    expectError<PickleError>([] { parsePickle("\x80\x02h\x05."); }, "memo key 5");
    expectError<PickleError>([] { parsePickle("\x80\x02X\xff\xff\xff\x7f."); }, "runs past the end");
    expectError<PickleError>([] { parsePickle("\x80\x02I01\n."); }, "unsupported pickle opcode");
    expectError<PickleError>([] { parsePickle("\x80\x02]]."); }, "values left on the stack");
    expectError<PickleError>([] { parsePickle("\x80\x02Ns."); }, "stack underflow");
    expectError<PickleError>([] { parsePickle("\x80\x02\x8a\x09" + std::string(9, '\1') + "."); }, "wider than 64");
}

TEST(Pickle, CyclesDoNotHangOrLeak) {
    // l = []; l.append(l): a self-referencing list through the memo.
    const auto doc = parsePickle(std::string("\x80\x02]q\x00h\x00"
                                             "a.",
                                             9));
    const PickleValue& l = doc.at(doc.root());
    ASSERT_EQ(l.items.size(), 1u);
    EXPECT_EQ(l.items[0], doc.root());
}

TEST(Zip, StructuralErrors) {
    const auto good = test::makeZip({{"a", "hello"}, {"b", ""}});
    const ZipReader z(good);
    EXPECT_EQ(z.names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(z.read("a"), "hello");
    EXPECT_EQ(z.read("b"), "");
    expectError<ZipError>([&] { (void)z.read("c"); }, "no record 'c'");
    for (size_t cut = 0; cut < good.size(); ++cut) { // every truncation fails cleanly
        std::vector<uint8_t> part(good.begin(), good.begin() + static_cast<long>(cut));
        EXPECT_THROW(ZipReader{part}, ZipError);
    }
    auto deflated = good;
    deflated[8] = 8; // method field of the first local header ...
    const uint8_t sig[] = {'P', 'K', 1, 2};
    const auto central = std::search(deflated.begin(), deflated.end(), sig, sig + 4);
    ASSERT_NE(central, deflated.end());
    central[10] = 8; // ... and of its central header
    expectError<ZipError>([&] { (void)ZipReader(deflated).read("a"); }, "compressed");
}

TEST(Safetensors, ReadsAndValidates) {
    auto make = [](const std::string& header, const std::string& data) {
        std::string s(8, '\0');
        for (size_t i = 0; i < 8; ++i)
            s[i] = static_cast<char>(header.size() >> (8 * i));
        s += header;
        s += data;
        return std::vector<uint8_t>(s.begin(), s.end());
    };
    const std::string data = test::floatBytes({1, 2, 3, 4, 5, 6});
    const auto f = readSafetensorsBytes(make(
        R"({"__metadata__":{"format":"pt"},"module.a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", data));
    EXPECT_EQ(f.tensors.at("a").shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(values(f, "a"), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(f.metadata.at("format"), "pt");
    expectError<TensorFileError>(
        [&] { readSafetensorsBytes(make(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,24]}})", data)); },
        "shape need 16");
    expectError<TensorFileError>(
        [&] { readSafetensorsBytes(make(R"({"a":{"dtype":"F32","shape":[6],"data_offsets":[8,32]}})", data)); },
        "outside the data section");
    expectError<TensorFileError>(
        [&] { readSafetensorsBytes(make(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", data)); },
        "unsupported dtype C64");
    expectError<TensorFileError>([&] { readSafetensorsBytes(make(R"({"a":)", data)); }, "not valid JSON");
    // Fuzzer find: a number the JSON parser cannot represent must be a clean error as well.
    expectError<TensorFileError>(
        [&] { readSafetensorsBytes(make(R"({"a":{"dtype":"F32","shape":[1E777777],"data_offsets":[0,4]}})", data)); },
        "safetensors");
    std::vector<uint8_t> huge(16, 0xff);
    expectError<TensorFileError>([&] { readSafetensorsBytes(huge); }, "exceeds the file");
}

TEST(TensorFile, DetectsFormatAndNamesTheFile) {
    const auto dir = std::filesystem::temp_directory_path();
    const auto path = (dir / "gwb_import_legacy.pt").string();
    { std::ofstream(path, std::ios::binary) << std::string("\x80\x02\x8a\x0a", 4) << "junk"; }
    expectError<TensorFileError>([&] { readTensorFile(path); }, "legacy");
    const auto fx = fixture();
    {
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(fx.data()), static_cast<long>(fx.size()));
    }
    EXPECT_EQ(readTensorFile(path).tensors.size(), 8u);
    std::filesystem::remove(path);
    expectError<TensorFileError>([&] { readTensorFile(path); }, "cannot open");
}

} // namespace
} // namespace gwb::engine
