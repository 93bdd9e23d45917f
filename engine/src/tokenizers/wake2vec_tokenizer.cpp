// Wake2vec's character map (see hf_tokenizer.h): {"char_to_id": {"<pad>": 0, "<eos>": 1, "a": 2,
// ...}}, one code point a piece; a character not in the map encodes to 0, as in Wake2vec.

#include "tokenizers/hf_tokenizer.h"
#include "tokenizers/token_id.h"

#include "tokenizers/hf_common.h"

#include <stdexcept>
#include <unordered_map>

namespace gwb::engine {
namespace {

using hf::densePieces;
using hf::fail;
using hf::field;
using hf::json;
using hf::shortJson;

class Wake2vecCharTokenizer final : public Tokenizer {
public:
    explicit Wake2vecCharTokenizer(std::string text) : m_text(std::move(text)) {
        json j;
        try {
            j = json::parse(m_text);
        } catch (const json::exception& e) {
            fail(std::string("not valid JSON: ") + e.what());
        }
        const json* map = field(j, "char_to_id");
        if (!map || !map->is_object()) fail("no \"char_to_id\" object");
        std::map<int32_t, std::string> byId;
        for (const auto& item : map->items()) {
            const json& v = item.value();
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
                fail("char_to_id: id of '" + item.key() + "' is " + shortJson(v) + ", not an id in [0, 2147483647]");
            const auto id = v.get<int32_t>();
            const auto [it, fresh] = byId.emplace(id, item.key());
            if (!fresh)
                fail("char_to_id: id " + std::to_string(id) + " is given to both '" + it->second + "' and '" +
                     item.key() + "'");
            const auto cps = unicode::decodeUtf8(item.key());
            if (cps.size() == 1) m_ids.emplace(cps[0].cp, id); // "<pad>" and the like never match a character
        }
        m_pieces = densePieces(byId, "char_to_id: ", "character");
    }

    std::string kind() const override { return "wake2vec_chars"; }
    int64_t vocabSize() const override { return static_cast<int64_t>(m_pieces.size()); }
    std::string serialize() const override { return m_text; }
    std::string pieceText(int32_t id) const override {
        detail::checkTokenId(id, static_cast<int64_t>(m_pieces.size()));
        return m_pieces[static_cast<size_t>(id)];
    }
    /// Wake2vec's decode: the entries joined ("<pad>" and "<eos>" as written).
    std::string decode(const std::vector<int32_t>& ids) const override {
        std::string out;
        for (int32_t id : ids)
            out += pieceText(id);
        return out;
    }
    /// One piece per code point; a character not in the map is id 0, as in Wake2vec.
    std::vector<TokenPiece> encode(std::string_view text) const override {
        checkUtf8(text);
        std::vector<TokenPiece> out;
        for (const auto& d : unicode::decodeUtf8(text)) {
            const auto it = m_ids.find(d.cp);
            const int32_t id = it == m_ids.end() ? 0 : it->second;
            out.push_back({id, m_pieces[static_cast<size_t>(id)], d.begin, d.end});
        }
        return out;
    }

private:
    std::string m_text;
    std::vector<std::string> m_pieces;
    std::unordered_map<char32_t, int32_t> m_ids;
};

} // namespace

TokenizerPtr makeWake2vecCharTokenizer(const std::string& json) {
    return std::make_shared<Wake2vecCharTokenizer>(json);
}

} // namespace gwb::engine
