#pragma once
// An analysis's option table (gwb/engine/options.h) in Python: the table as dicts, keywords set with
// the engine's checks and sentences (a ValueError), and a request's values as a dict.

#include "gwb/engine/options.h"

#include <pybind11/pybind11.h>

#include <string>

namespace gwb::python {

namespace py = pybind11;

/// One dict per option: key, flag, help, kind ("integer", "number", "text"), default, range, min,
/// max, min_exclusive, max_exclusive.
template <class Request> py::list optionList(const engine::OptionTable<Request>& table) {
    py::list out;
    const Request defaults{};
    for (const engine::Option<Request>& o : table) {
        py::dict d;
        d["key"] = o.key;
        d["flag"] = o.flag;
        d["help"] = o.help;
        d["kind"] = o.kind == engine::OptionKind::Integer  ? "integer"
                    : o.kind == engine::OptionKind::Number ? "number"
                                                           : "text";
        d["integer"] = o.kind == engine::OptionKind::Integer;
        if (o.kind == engine::OptionKind::Text) {
            d["default"] = o.text(defaults);
            d["min"] = py::none();
            d["max"] = py::none();
        } else {
            const double v = o.number(defaults);
            d["default"] = o.kind == engine::OptionKind::Integer ? py::object(py::int_(static_cast<long long>(v)))
                                                                 : py::object(py::float_(v));
            d["min"] = o.min;
            d["max"] = o.max;
        }
        d["min_exclusive"] = o.minExclusive;
        d["max_exclusive"] = o.maxExclusive;
        d["range"] = engine::optionRangeText(o);
        out.append(d);
    }
    return out;
}

/// Sets the options given as keywords (None keeps the request's default) with the engine's checks:
/// a number for a numeric option, text for a text one (text for a numeric one is read as the command
/// line reads it). An unknown key, a bool or a value out of range raises ValueError naming it.
template <class Request>
void applyOptions(const engine::OptionTable<Request>& table, const py::dict& options, Request& r, const char* what) {
    for (const auto& [k, v] : options) {
        if (v.is_none()) continue;
        const engine::Option<Request>& o = engine::findOption(table, py::cast<std::string>(k), what);
        if (py::isinstance<py::str>(v))
            engine::setOptionText(o, r, py::cast<std::string>(v));
        else if (py::isinstance<py::bool_>(v) || PyNumber_Check(v.ptr()) == 0)
            throw std::invalid_argument(engine::optionName(o) + " must be " + engine::optionRangeText(o) + "; got " +
                                        py::cast<std::string>(py::repr(v)));
        else
            engine::setOptionNumber(o, r, py::cast<double>(v));
    }
}

/// The request's options as {key: value}: integers as int, numbers as float, text as str.
template <class Request> py::dict optionValues(const engine::OptionTable<Request>& table, const Request& r) {
    py::dict d;
    for (const engine::Option<Request>& o : table) {
        if (o.kind == engine::OptionKind::Text)
            d[o.key] = o.text(r);
        else if (o.kind == engine::OptionKind::Integer)
            d[o.key] = static_cast<long long>(o.number(r));
        else
            d[o.key] = o.number(r);
    }
    return d;
}

} // namespace gwb::python
