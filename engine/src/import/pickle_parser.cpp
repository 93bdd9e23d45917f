// The restricted unpickler's stack machine: pickle protocols 2-5, every read bounds-checked,
// every global checked against the allow-list (pickle_globals.h).

#include "import/pickle_globals.h"
#include "import/pickle_reader.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

namespace gwb::engine {

namespace {

using K = PickleValue::Kind;
using detail::allowedGlobals;
using detail::GlobalRole;
using detail::storageType;

} // namespace

/// The stack machine. One instance per parse.
class PickleParser {
public:
    PickleParser(std::string_view bytes, const PickleLimits& limits) : m_in(bytes), m_limits(limits) {}

    PickleDocument run() {
        while (true) {
            m_opPos = m_pos;
            m_op = byte();
            if (m_op == '.') {
                const PickleId root = pop();
                if (!m_stack.empty() || !m_marks.empty()) fail("STOP with values left on the stack");
                m_doc.m_root = root;
                return std::move(m_doc);
            }
            step();
        }
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        char op[8];
        std::snprintf(op, sizeof op, "0x%02x", m_op);
        throw PickleError("pickle: " + what + " (opcode " + op + " at byte " + std::to_string(m_opPos) + ")");
    }

    // ---- input ----
    uint8_t byte() {
        if (m_pos >= m_in.size()) fail("unexpected end of data (no STOP opcode)");
        return static_cast<uint8_t>(m_in[m_pos++]);
    }
    uint64_t le(int n) {
        uint64_t v = 0;
        for (int i = 0; i < n; ++i)
            v |= static_cast<uint64_t>(byte()) << (8 * i);
        return v;
    }
    std::string_view take(uint64_t n) {
        if (n > m_in.size() - m_pos) fail("length " + std::to_string(n) + " runs past the end of the data");
        const std::string_view s = m_in.substr(m_pos, static_cast<size_t>(n));
        m_pos += static_cast<size_t>(n);
        return s;
    }
    std::string line() {
        const size_t nl = m_in.find('\n', m_pos);
        if (nl == std::string_view::npos) fail("unterminated text line");
        std::string s(m_in.substr(m_pos, nl - m_pos));
        m_pos = nl + 1;
        return s;
    }

    // ---- values and stack ----
    PickleId make(PickleValue v) {
        if (m_doc.m_values.size() >= m_limits.maxValues) fail("too many values");
        m_doc.m_values.push_back(std::move(v));
        return static_cast<PickleId>(m_doc.m_values.size() - 1);
    }
    PickleId makeKind(K k) {
        PickleValue v;
        v.kind = k;
        return make(std::move(v));
    }
    PickleValue& val(PickleId id) { return m_doc.m_values[static_cast<size_t>(id)]; }
    void push(PickleId id) {
        if (m_stack.size() >= m_limits.maxStack) fail("stack too deep");
        m_stack.push_back(id);
    }
    size_t floor() const { return m_marks.empty() ? 0 : m_marks.back(); }
    PickleId pop() {
        if (m_stack.size() <= floor()) fail("stack underflow");
        const PickleId id = m_stack.back();
        m_stack.pop_back();
        return id;
    }
    PickleId top() {
        if (m_stack.size() <= floor()) fail("stack underflow");
        return m_stack.back();
    }
    /// Pops everything above the innermost MARK and the mark itself.
    std::vector<PickleId> popMark() {
        if (m_marks.empty()) fail("no MARK on the stack");
        const size_t m = m_marks.back();
        m_marks.pop_back();
        std::vector<PickleId> items(m_stack.begin() + static_cast<std::ptrdiff_t>(m), m_stack.end());
        m_stack.resize(m);
        return items;
    }
    void memoPut(uint64_t key) {
        if (m_memo.size() >= m_limits.maxValues) fail("memo too large");
        m_memo[key] = top();
    }
    void memoGet(uint64_t key) {
        const auto it = m_memo.find(key);
        if (it == m_memo.end()) fail("memo key " + std::to_string(key) + " was never stored");
        push(it->second);
    }
    const PickleValue& expect(PickleId id, K kind, const char* what) {
        const PickleValue& v = val(id);
        if (v.kind != kind) fail(std::string(what) + " expected, got " + m_doc.describe(id));
        return v;
    }
    int64_t integer(PickleId id, const char* what) { return expect(id, K::Int, what).integer; }

    // ---- compound opcodes ----
    void pushString(K kind, std::string_view s) {
        PickleValue v;
        v.kind = kind;
        v.text = std::string(s);
        push(make(std::move(v)));
    }
    void pushInt(int64_t i) {
        PickleValue v;
        v.kind = K::Int;
        v.integer = i;
        push(make(std::move(v)));
    }
    void pushLong(uint64_t n) {
        const std::string_view b = take(n);
        if (n > 8) fail("integer wider than 64 bits");
        uint64_t u = 0;
        for (size_t i = 0; i < b.size(); ++i)
            u |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
        if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) // sign-extend
            u |= ~uint64_t{0} << (8 * n);
        int64_t i;
        std::memcpy(&i, &u, sizeof i);
        pushInt(i);
    }
    void pushGlobal(const std::string& module, const std::string& name) {
        const std::string full = module + "." + name;
        if (allowedGlobals().count(full) == 0)
            fail("the pickle asks for class or function '" + full +
                 "', which is outside the allowed set (tensors, storages, OrderedDict, plain data); "
                 "refusing to load it");
        pushString(K::Global, full);
    }
    void setItems(PickleId dict, const std::vector<PickleId>& kv) {
        if (kv.size() % 2) fail("odd number of items for a dict");
        PickleValue& d = val(dict);
        if (d.kind != K::Dict) fail("SETITEM on " + m_doc.describe(dict));
        for (size_t i = 0; i < kv.size(); i += 2)
            val(dict).entries.emplace_back(kv[i], kv[i + 1]);
    }
    void appendItems(PickleId list, const std::vector<PickleId>& items) {
        const K k = val(list).kind;
        if (k != K::List && !(k == K::Object && m_doc.at(list).text.find("set") != std::string::npos))
            fail("APPEND on " + m_doc.describe(list));
        auto& dst = val(list).items;
        dst.insert(dst.end(), items.begin(), items.end());
    }
    PickleId makeSeq(K kind, std::vector<PickleId> items) {
        PickleValue v;
        v.kind = kind;
        v.items = std::move(items);
        return make(std::move(v));
    }

    std::vector<int64_t> intTuple(PickleId id, const char* what) {
        const PickleValue& t = val(id);
        if (t.kind != K::Tuple && t.kind != K::List)
            fail(std::string(what) + " must be a tuple of ints, got " + m_doc.describe(id));
        if (static_cast<int64_t>(t.items.size()) > m_limits.maxRank)
            fail(std::string(what) + " has too many dimensions");
        std::vector<int64_t> out;
        for (PickleId e : t.items)
            out.push_back(integer(e, what));
        return out;
    }

    PickleId rebuildTensor(const std::vector<PickleId>& args) {
        if (args.size() < 4) fail("_rebuild_tensor needs (storage, offset, size, stride)");
        const PickleValue& s = expect(args[0], K::Storage, "a storage");
        PickleValue v;
        v.kind = K::Tensor;
        v.tensor = s.tensor;
        v.tensor.storageOffset = integer(args[1], "storage offset");
        v.tensor.shape = intTuple(args[2], "tensor size");
        v.tensor.stride = intTuple(args[3], "tensor stride");
        if (v.tensor.shape.size() != v.tensor.stride.size()) fail("tensor size and stride differ in length");
        // Bounds: the last element addressed must lie inside the storage.
        if (v.tensor.storageOffset < 0) fail("negative storage offset");
        constexpr int64_t kMax = int64_t{1} << 48;
        int64_t last = v.tensor.storageOffset;
        bool empty = false;
        for (size_t i = 0; i < v.tensor.shape.size(); ++i) {
            const int64_t n = v.tensor.shape[i], st = v.tensor.stride[i];
            if (n < 0 || st < 0 || n > kMax || st > kMax) fail("negative or huge tensor size/stride");
            if (n == 0)
                empty = true;
            else
                last += (n - 1) * st;
            if (last > kMax) fail("tensor extends past any plausible storage");
        }
        if (!empty && last >= v.tensor.storageNumel)
            fail("tensor view reaches element " + std::to_string(last) + " of a storage with " +
                 std::to_string(v.tensor.storageNumel) + " elements");
        return make(std::move(v));
    }

    void reduce(PickleId callable, PickleId argTuple) {
        const PickleValue& c = val(callable);
        if (c.kind != K::Global) fail("REDUCE/NEWOBJ on " + m_doc.describe(callable) + ", not an allowed class");
        const PickleValue& a = val(argTuple);
        if (a.kind != K::Tuple) fail("call arguments must be a tuple, got " + m_doc.describe(argTuple));
        const std::vector<PickleId> args = a.items;
        const std::string name = c.text;
        switch (allowedGlobals().find(name)->second) {
        case GlobalRole::RebuildTensor:
        case GlobalRole::RebuildTensorV1:
            push(rebuildTensor(args));
            return;
        case GlobalRole::RebuildParameter:
            if (args.empty() || val(args[0]).kind != K::Tensor) fail("_rebuild_parameter needs a tensor");
            push(args[0]);
            return;
        case GlobalRole::RebuildFromType: {
            // (func, type, args, state): torch 2.x wraps tensors that carry Python state. Only
            // the tensor rebuild functions may be the inner func, so this cannot recurse.
            if (args.size() != 4 || val(args[0]).kind != K::Global)
                fail("_rebuild_from_type_v2 needs (function, type, args, state)");
            const GlobalRole inner = allowedGlobals().find(val(args[0]).text)->second;
            if (inner != GlobalRole::RebuildTensor && inner != GlobalRole::RebuildTensorV1 &&
                inner != GlobalRole::RebuildParameter)
                fail("_rebuild_from_type_v2 of " + val(args[0]).text + " is not supported");
            reduce(args[0], args[2]);
            return;
        }
        case GlobalRole::OrderedDict: {
            const PickleId d = makeKind(K::Dict);
            if (!args.empty()) { // OrderedDict([(k, v), ...])
                const PickleValue& items = val(args[0]);
                if (items.kind != K::List && items.kind != K::Tuple)
                    fail("OrderedDict argument must be a list of pairs");
                const std::vector<PickleId> pairs = items.items;
                for (PickleId p : pairs) {
                    const PickleValue& pair = val(p);
                    if (pair.kind != K::Tuple || pair.items.size() != 2) fail("OrderedDict item is not a pair");
                    val(d).entries.emplace_back(pair.items[0], pair.items[1]);
                }
            }
            push(d);
            return;
        }
        case GlobalRole::CodecsEncode: { // protocol 2 stores bytes as _codecs.encode(str, 'latin1')
            if (args.size() != 2) fail("_codecs.encode needs 2 arguments");
            const std::string enc = expect(args[1], K::String, "an encoding name").text;
            if (enc != "latin1" && enc != "latin-1")
                fail("_codecs.encode with encoding '" + enc + "' is not supported");
            pushString(K::Bytes, latin1(expect(args[0], K::String, "a string").text));
            return;
        }
        case GlobalRole::Storage:
            fail("storage classes cannot be called");
        case GlobalRole::Opaque: {
            PickleValue o;
            o.kind = K::Object;
            o.text = name;
            o.items = args;
            push(make(std::move(o)));
            return;
        }
        }
    }

    /// UTF-8 text whose code points are all < 256 -> those bytes.
    std::string latin1(const std::string& utf8) {
        std::string out;
        for (size_t i = 0; i < utf8.size(); ++i) {
            const auto c = static_cast<uint8_t>(utf8[i]);
            if (c < 0x80) {
                out += static_cast<char>(c);
            } else if ((c & 0xE0) == 0xC0 && c <= 0xC3 && i + 1 < utf8.size()) {
                out += static_cast<char>(((c & 0x1F) << 6) | (static_cast<uint8_t>(utf8[++i]) & 0x3F));
            } else {
                fail("latin1-encoded bytes contain a code point above 255");
            }
        }
        return out;
    }

    void persistentLoad(PickleId pid) {
        const PickleValue& t = val(pid);
        if (t.kind != K::Tuple || t.items.size() < 5)
            fail("persistent id is not a ('storage', type, key, location, numel) tuple");
        if (expect(t.items[0], K::String, "'storage'").text != "storage") fail("persistent id of an unknown kind");
        PickleValue s;
        s.kind = K::Storage;
        s.tensor.dtype = storageType(expect(t.items[1], K::Global, "a storage class").text);
        s.tensor.storageKey = expect(t.items[2], K::String, "a storage key").text;
        s.tensor.storageNumel = integer(t.items[4], "storage size");
        if (s.tensor.storageNumel < 0) fail("negative storage size");
        if (s.tensor.storageKey.empty() || s.tensor.storageKey.find('/') != std::string::npos ||
            s.tensor.storageKey.find("..") != std::string::npos)
            fail("storage key '" + s.tensor.storageKey + "' is not a plain record name");
        push(make(std::move(s)));
    }

    void step() {
        switch (m_op) {
        case 0x80:
            byte();
            return; // PROTO
        case 0x95:
            le(8);
            return; // FRAME: framing is only a hint
        case '(':
            m_marks.push_back(m_stack.size());
            return; // MARK
        case '0':
            pop();
            return; // POP
        case '1':
            popMark();
            return; // POP_MARK
        case '2':
            push(top());
            return; // DUP
        case 'N':
            push(makeKind(K::None));
            return;
        case 0x88:
        case 0x89: { // NEWTRUE / NEWFALSE
            PickleValue v;
            v.kind = K::Bool;
            v.boolean = m_op == 0x88;
            push(make(std::move(v)));
            return;
        }
        case 'J':
            pushInt(static_cast<int32_t>(static_cast<uint32_t>(le(4))));
            return; // BININT
        case 'K':
            pushInt(static_cast<int64_t>(le(1)));
            return; // BININT1
        case 'M':
            pushInt(static_cast<int64_t>(le(2)));
            return; // BININT2
        case 0x8a:
            pushLong(le(1));
            return; // LONG1
        case 0x8b:
            pushLong(le(4));
            return; // LONG4
        case 'G': { // BINFLOAT, big-endian
            uint64_t u = 0;
            for (int i = 0; i < 8; ++i)
                u = (u << 8) | byte();
            PickleValue v;
            v.kind = K::Float;
            std::memcpy(&v.number, &u, sizeof u);
            push(make(std::move(v)));
            return;
        }
        case 'X':
            pushString(K::String, take(le(4)));
            return; // BINUNICODE
        case 0x8c:
            pushString(K::String, take(le(1)));
            return; // SHORT_BINUNICODE
        case 0x8d:
            pushString(K::String, take(le(8)));
            return; // BINUNICODE8
        case 'T':
            pushString(K::Bytes, take(le(4)));
            return; // BINSTRING
        case 'U':
            pushString(K::Bytes, take(le(1)));
            return; // SHORT_BINSTRING
        case 'B':
            pushString(K::Bytes, take(le(4)));
            return; // BINBYTES
        case 'C':
            pushString(K::Bytes, take(le(1)));
            return; // SHORT_BINBYTES
        case 0x8e:  // BINBYTES8
        case 0x96:
            pushString(K::Bytes, take(le(8)));
            return; // BYTEARRAY8
        case ']':
            push(makeKind(K::List));
            return; // EMPTY_LIST
        case ')':
            push(makeKind(K::Tuple));
            return; // EMPTY_TUPLE
        case '}':
            push(makeKind(K::Dict));
            return;  // EMPTY_DICT
        case 0x8f: { // EMPTY_SET
            PickleValue v;
            v.kind = K::Object;
            v.text = "builtins.set";
            push(make(std::move(v)));
            return;
        }
        case 'l':
            push(makeSeq(K::List, popMark()));
            return; // LIST
        case 't':
            push(makeSeq(K::Tuple, popMark()));
            return;  // TUPLE
        case 0x91: { // FROZENSET
            PickleValue v;
            v.kind = K::Object;
            v.text = "builtins.frozenset";
            v.items = popMark();
            push(make(std::move(v)));
            return;
        }
        case 0x85:
        case 0x86:
        case 0x87: { // TUPLE1..3
            std::vector<PickleId> items(static_cast<size_t>(m_op - 0x84));
            for (size_t i = items.size(); i-- > 0;)
                items[i] = pop();
            push(makeSeq(K::Tuple, std::move(items)));
            return;
        }
        case 'd': { // DICT
            const PickleId d = makeKind(K::Dict);
            setItems(d, popMark());
            push(d);
            return;
        }
        case 'a': { // APPEND
            const PickleId v = pop();
            appendItems(top(), {v});
            return;
        }
        case 'e':    // APPENDS
        case 0x90: { // ADDITEMS
            const std::vector<PickleId> items = popMark();
            appendItems(top(), items);
            return;
        }
        case 's': { // SETITEM
            const PickleId v = pop();
            const PickleId k = pop();
            setItems(top(), {k, v});
            return;
        }
        case 'u': { // SETITEMS
            const std::vector<PickleId> kv = popMark();
            setItems(top(), kv);
            return;
        }
        case 'c': { // GLOBAL
            const std::string module = line();
            const std::string name = line();
            pushGlobal(module, name);
            return;
        }
        case 0x93: { // STACK_GLOBAL
            const PickleId name = pop();
            const PickleId module = pop();
            pushGlobal(expect(module, K::String, "a module name").text, expect(name, K::String, "a class name").text);
            return;
        }
        case 'R': { // REDUCE
            const PickleId args = pop();
            const PickleId callable = pop();
            reduce(callable, args);
            return;
        }
        case 0x81: { // NEWOBJ
            const PickleId args = pop();
            const PickleId cls = pop();
            reduce(cls, args);
            return;
        }
        case 0x92: { // NEWOBJ_EX: kwargs are dropped
            pop();
            const PickleId args = pop();
            const PickleId cls = pop();
            reduce(cls, args);
            return;
        }
        case 'b': { // BUILD
            const PickleId state = pop();
            const PickleId obj = top();
            const K k = val(obj).kind;
            if (k == K::Object || k == K::Dict)
                val(obj).state = state;
            else if (k != K::Tensor) // tensors carry no state that matters for inference
                fail("BUILD on " + m_doc.describe(obj));
            return;
        }
        case 'Q':
            persistentLoad(pop());
            return; // BINPERSID
        case 'q':
            memoPut(le(1));
            return; // BINPUT
        case 'r':
            memoPut(le(4));
            return; // LONG_BINPUT
        case 0x94:
            memoPut(m_memo.size());
            return; // MEMOIZE
        case 'h':
            memoGet(le(1));
            return; // BINGET
        case 'j':
            memoGet(le(4));
            return; // LONG_BINGET
        default:
            fail("unsupported pickle opcode (text-mode protocol 0/1 opcodes, extensions and "
                 "out-of-band buffers are not read)");
        }
    }

    std::string_view m_in;
    PickleLimits m_limits;
    size_t m_pos = 0;
    size_t m_opPos = 0;
    uint8_t m_op = 0;
    PickleDocument m_doc;
    std::vector<PickleId> m_stack;
    std::vector<size_t> m_marks;
    std::unordered_map<uint64_t, PickleId> m_memo;
};

PickleDocument parsePickle(std::string_view bytes, const PickleLimits& limits) {
    return PickleParser(bytes, limits).run();
}

} // namespace gwb::engine
