#pragma once
// Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.cpp). A reader may refuse an input only
// with one of its documented exceptions (std::runtime_error or std::invalid_argument and their
// subclasses) carrying a message a person can act on; everything else is a finding: a crash or
// sanitizer report, a hang (libFuzzer -timeout), an allocation past -malloc_limit_mb, a foreign
// exception (std::out_of_range from a container, std::length_error, std::bad_alloc, a JSON
// library's own exception), or a bare library message such as "stoll".

#include "gwb/engine/npy.h"
#include "gwb/engine/tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

namespace gwb::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
    std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

/// A refusal message must say something: not empty, not a bare function name from the library.
inline void checkMessage(const std::exception& e) {
    const std::string m = e.what();
    if (m.find(' ') == std::string::npos) finding(std::string("refusal without a readable message: '") + m + "'");
}

/// GWB_FUZZ_VERBOSE=1 prints every refusal (to see why a seed does not get through).
inline void note(const std::exception& e) {
    static const bool verbose = std::getenv("GWB_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "refused: %s\n", e.what());
}

/// Runs `read`; a documented refusal is an expected outcome, anything else aborts with its type.
template <typename F> bool readOrRefuse(F&& read) {
    try {
        read();
        return true;
    } catch (const std::invalid_argument& e) {
        checkMessage(e);
        note(e);
    } catch (const std::runtime_error& e) {
        checkMessage(e);
        note(e);
    } catch (const std::exception& e) {
        finding(std::string("foreign exception ") + typeid(e).name() + ": " + e.what());
    }
    return false;
}

/// Runs `use` on something a reader accepted: any exception here is a finding (an accepted input
/// must be usable).
template <typename F> void mustWork(const char* what, F&& use) {
    try {
        use();
    } catch (const std::exception& e) {
        finding(std::string(what) + " failed on an accepted input: " + typeid(e).name() + ": " + e.what());
    }
}

/// Texts every tokenizer is asked to encode (short, so that a run spends its time in the reader):
/// ASCII with punctuation and a contraction, accents, CJK, an emoji, a whitespace run, control
/// characters, digits, and the spellings of special pieces.
inline const std::vector<std::string_view>& sampleTexts() {
    static const std::vector<std::string_view> texts = {
        "",
        "It is a truth, don't 42!  caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80\t\x01 [UNK] <unk> \xe2\x96\x81 <0x41>",
        // Normal forms: a ligature and an ellipsis (compatibility), e + two marks out of canonical
        // order, conjoining jamo and a syllable, a mark with no base, a Devanagari sign (Mc).
        "\xef\xac\x81ne\xe2\x80\xa6 e\xcc\x81\xcc\xa3 \xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab \xed\x95\x9c "
        "\xcc\x88x \xe0\xa4\x95\xe0\xa4\xbe \xc2\xbd",
    };
    return texts;
}

/// Uses a tokenizer the way the workbench does and checks its documented contract: ids inside
/// the vocabulary, spans inside the text in order, decode and pieceText for every produced id,
/// and serialize() -> makeTokenizer() giving back a tokenizer that encodes identically (the
/// round trip a .gwb checkpoint relies on).
/// `encodeMayRefuse`: the tokenizer documents std::invalid_argument for some valid texts (a
/// tokenizer.json BPE without unk_token meeting a character outside its vocabulary).
inline void exerciseTokenizer(const engine::Tokenizer& t, bool encodeMayRefuse = false) {
    using engine::TokenPiece;
    const int64_t vocab = t.vocabSize();
    if (vocab < 1) finding("tokenizer with an empty vocabulary was accepted");
    for (int32_t id = 0; id < vocab && id < 64; ++id)
        (void)t.pieceText(id);
    const std::string bytes = t.serialize();
    const engine::TokenizerPtr again = engine::makeTokenizer(t.kind(), bytes);
    if (again->vocabSize() != vocab) finding("serialize() round trip changed the vocabulary size");
    for (std::string_view text : sampleTexts()) {
        std::vector<TokenPiece> pieces;
        if (encodeMayRefuse) {
            bool refused = false;
            try {
                pieces = t.encode(text);
            } catch (const std::invalid_argument& e) {
                checkMessage(e);
                refused = true;
            }
            if (refused) continue;
        } else {
            pieces = t.encode(text);
        }
        std::vector<int32_t> ids;
        int64_t last = 0;
        for (const TokenPiece& p : pieces) {
            if (p.id < 0 || p.id >= vocab)
                finding("encode produced id " + std::to_string(p.id) + " outside the vocabulary");
            if (p.begin < last || p.end < p.begin || p.end > static_cast<int64_t>(text.size()))
                finding("encode produced a span out of order or outside the text");
            last = p.end;
            ids.push_back(p.id);
        }
        if (t.encodeIds(text) != ids) finding("encodeIds differs from encode");
        if (again->encodeIds(text) != ids) finding("the serialize() round trip encodes differently");
        (void)t.decode(ids);
    }
}

/// An input "@@@@ <name>\n<contents>" (repeated, up to the next "\n@@@@ ") packed as a valid stored
/// zip (correct CRCs), so that mutations reach the members instead of stopping at the CRC check.
inline std::vector<uint8_t> packMembers(const std::string& in) {
    static const std::string kMark = "@@@@ ", kNext = "\n@@@@ ";
    gwb::engine::NpzWriter w;
    size_t pos = kMark.size();
    try {
        while (pos <= in.size()) {
            const size_t end = std::min(in.find(kNext, pos), in.size());
            const std::string record = in.substr(pos, end - pos);
            const size_t nl = record.find('\n');
            const std::string name = record.substr(0, nl);
            w.addFile(name, nl == std::string::npos ? std::string() : record.substr(nl + 1));
            pos = end + kNext.size();
        }
        return w.archive();
    } catch (const std::invalid_argument&) { // empty or duplicate member name: not an archive to test
        return {};
    }
}

/// A harness input as an archive: the raw bytes, or the "@@@@ " member form packed (empty: skip).
inline std::vector<uint8_t> archiveOf(const uint8_t* data, size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    if (input.rfind("@@@@ ", 0) == 0) return packMembers(input);
    return {data, data + size};
}

} // namespace gwb::fuzz
