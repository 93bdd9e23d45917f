#pragma once
// What the translation units of gwb._gwb share: the model handle, numpy arrays that own engine
// arrays, and running engine work without the GIL while a Python exception (a hook's, Ctrl-C)
// waits to be raised again.

#include "gwb/engine/array.h"
#include "gwb/engine/model.h"

#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>

#include <exception>
#include <vector>

namespace gwb::python {

namespace py = pybind11;
using gwb::engine::Array;
using gwb::engine::Model;

/// A numpy array that owns `a`'s values (moved, not copied).
template <typename T> inline py::array toNumpy(Array<T>&& a) {
    auto* values = new std::vector<T>(std::move(a.data));
    py::capsule owner(values, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    std::vector<py::ssize_t> shape(a.shape.begin(), a.shape.end());
    return py::array_t<T>(shape, values->data(), owner);
}

/// The first Python exception (a hook's, or KeyboardInterrupt from a progress report) raised while
/// the engine worked; the engine is stopped by a C++ exception and this one is raised again.
struct Pending {
    std::exception_ptr error;
    void rethrowIfAny() {
        if (error) {
            std::exception_ptr e = error;
            error = nullptr;
            std::rethrow_exception(e);
        }
    }
};

struct Stopped : std::exception {
    const char* what() const noexcept override { return "stopped by Python"; }
};

/// Calls fn with the GIL released; a Python exception kept in `pending` is raised instead of the
/// engine's stop.
template <typename Fn> auto withoutGil(Pending& pending, Fn&& fn) -> decltype(fn()) {
    try {
        py::gil_scoped_release release;
        return fn();
    } catch (...) {
        pending.rethrowIfAny();
        throw;
    }
}

/// Checks Ctrl-C and calls the Python progress callback (may be None) with the GIL held.
inline bool reportProgress(Pending& pending, const py::object& callback, double fraction) {
    py::gil_scoped_acquire gil;
    try {
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        if (!callback.is_none()) callback(fraction);
    } catch (py::error_already_set&) {
        pending.error = std::current_exception();
        return false;
    }
    return true;
}

struct PyModel {
    Model model;
    py::dict report; ///< the import report (empty for a .gwb)
};

/// The gwb._gwb.features functions (features_bindings.cpp).
void registerFeatures(py::module_& m);
/// The gwb._gwb.graph functions (graph_bindings.cpp).
void registerGraph(py::module_& m);
/// The gwb._gwb.lens_* functions (lens_bindings.cpp).
void registerLens(py::module_& m);
/// figure_command (gwb.figure): `gwb figure` in this process, where the package has the figure
/// library (built with Qt Gui); absent otherwise.
void registerFigure(py::module_& m);

} // namespace gwb::python
