#pragma once
// An analysis's options, declared once (std only). Each analysis's request has one table of
// Option<Request>: its Python keyword, its command-line flag, one line of help, its kind and range,
// and how it reads and sets the request. The default is the request's own member initialiser. The
// command line (app/common/option_table.h), Python (python/src/option_table.h) and the engine's
// validation all read the table, so each front end shows the same help and refuses a bad value with
// the same sentence: "max_logits (--max-logits) must be an integer, at least 1; got 0".

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gwb::engine {

enum class OptionKind {
    Integer, ///< a whole number in [min, max]
    Number,  ///< a real number in [min, max] (either end exclusive where asked)
    Text,    ///< a word or a pattern ("tuned|jacobian", "i/n"): set from text, checked by its setter
};

/// What every option has, whatever its request.
struct OptionSpec {
    const char* key;       ///< Python's keyword: "max_logits"
    const char* flag;      ///< the command line's, without dashes: "max-logits"
    const char* valueName; ///< the command line's value: "N"
    const char* help;      ///< one line, no full stop: front ends add the default and the range
    OptionKind kind = OptionKind::Integer;
    double min = 0, max = 0; ///< numbers: the range (max kNoMax: none above)
    bool minExclusive = false, maxExclusive = false;
};

/// An integer option's upper bound where it has none of its own: the largest int, so that a value fits
/// every integer field; its range then reads "at least N".
inline constexpr double kNoMax = 2147483647.0;
/// A seed's upper bound: 2^53, so that every seed is exact in Python and in the table's numbers.
inline constexpr double kMaxSeed = 9007199254740992.0;

/// "an integer, at least 1", "a number in (0, 1]", "a number in [0, 1)"; a text option's value name.
std::string optionRangeText(const OptionSpec& o);
/// "max_logits (--max-logits)": how a message names the option in every front end.
std::string optionName(const OptionSpec& o);
/// Throws std::invalid_argument with the option's sentence unless `v` is finite, whole for an
/// integer, and in range.
void checkOptionValue(const OptionSpec& o, double v);
/// A number from the command line's text; throws "max_logits (--max-logits) needs a number, got 'x'".
double parseOptionNumber(const OptionSpec& o, const std::string& text);
/// How a number is shown in help and files: 0.95, 4096, 0.001.
std::string formatOptionNumber(double v);

template <class Request> struct Option : OptionSpec {
    std::function<double(const Request&)> number;              ///< numbers: the value
    std::function<void(Request&, double)> setNumber;           ///< numbers: sets an already checked value
    std::function<std::string(const Request&)> text;           ///< text options: the value as written
    std::function<void(Request&, const std::string&)> setText; ///< text options: parses; throws naming it

    /// The value as the command line would write it.
    std::string shown(const Request& r) const {
        return kind == OptionKind::Text ? text(r) : formatOptionNumber(number(r));
    }
    /// "default 10; an integer, at least 1" (the default is Request{}'s).
    std::string defaultAndRange() const {
        return "default " + shown(Request{}) + (kind == OptionKind::Text ? "" : "; " + optionRangeText(*this));
    }
};

template <class Request> using OptionTable = std::vector<Option<Request>>;

/// An integer option over a member of the request (any integer type): its range is [min, max].
template <class Request, class T>
Option<Request> integerOption(const char* key, const char* flag, const char* valueName, const char* help, double min,
                              double max, T Request::*member) {
    Option<Request> o;
    static_cast<OptionSpec&>(o) = {key, flag, valueName, help, OptionKind::Integer, min, max, false, false};
    o.number = [member](const Request& r) { return static_cast<double>(r.*member); };
    o.setNumber = [member](Request& r, double v) { r.*member = static_cast<T>(v); };
    return o;
}

/// A real option over a double member: its range is min..max, either end exclusive where asked.
template <class Request>
Option<Request> numberOption(const char* key, const char* flag, const char* valueName, const char* help, double min,
                             bool minExclusive, double max, bool maxExclusive, double Request::*member) {
    Option<Request> o;
    static_cast<OptionSpec&>(o) = {key, flag, valueName,    help,        OptionKind::Number,
                                   min, max,  minExclusive, maxExclusive};
    o.number = [member](const Request& r) { return r.*member; };
    o.setNumber = [member](Request& r, double v) { r.*member = v; };
    return o;
}

/// A text option: `text` writes the value, `setText` parses it (throwing std::invalid_argument that
/// names the option).
template <class Request>
Option<Request> textOption(const char* key, const char* flag, const char* valueName, const char* help,
                           std::function<std::string(const Request&)> text,
                           std::function<void(Request&, const std::string&)> setText) {
    Option<Request> o;
    static_cast<OptionSpec&>(o) = {key, flag, valueName, help, OptionKind::Text, 0, 0, false, false};
    o.text = std::move(text);
    o.setText = std::move(setText);
    return o;
}

/// The option whose key or flag is `name`; throws std::invalid_argument naming the known ones.
template <class Request>
const Option<Request>& findOption(const OptionTable<Request>& table, const std::string& name, const char* what) {
    std::string known;
    for (const Option<Request>& o : table) {
        if (name == o.key || name == o.flag) return o;
        known += (known.empty() ? "" : ", ") + std::string(o.key);
    }
    throw std::invalid_argument(std::string(what) + " has no option '" + name + "' (its options: " + known + ")");
}

/// Sets a numeric option, checked (a text option refuses a number by name).
template <class Request> void setOptionNumber(const Option<Request>& o, Request& r, double v) {
    if (o.kind == OptionKind::Text)
        throw std::invalid_argument(optionName(o) + " is written as " + o.valueName + ", not a number");
    checkOptionValue(o, v);
    o.setNumber(r, v);
}

/// Sets an option from text (the command line's value): a number is parsed and checked.
template <class Request> void setOptionText(const Option<Request>& o, Request& r, const std::string& text) {
    if (o.kind == OptionKind::Text)
        o.setText(r, text);
    else
        setOptionNumber(o, r, parseOptionNumber(o, text));
}

/// Checks every numeric option of `r` against its range, with the same sentences.
template <class Request> void checkOptions(const OptionTable<Request>& table, const Request& r) {
    for (const Option<Request>& o : table)
        if (o.kind != OptionKind::Text) checkOptionValue(o, o.number(r));
}

/// "i/n" into its two numbers (checked by the request, 0 <= i < n); throws std::invalid_argument
/// "shard (--shard) is written i/n, e.g. 0/4; got 'x'" unless both are whole numbers.
void parseShard(const std::string& text, int& index, int& count);

/// The shard option of a request with int members shardIndex and shardCount (gwb stats, the
/// Jacobian lens): "i/n", default "0/1".
template <class Request> Option<Request> shardOption(const char* help) {
    return textOption<Request>(
        "shard", "shard", "i/n", help,
        [](const Request& r) { return std::to_string(r.shardIndex) + "/" + std::to_string(r.shardCount); },
        [](Request& r, const std::string& v) { parseShard(v, r.shardIndex, r.shardCount); });
}

} // namespace gwb::engine
