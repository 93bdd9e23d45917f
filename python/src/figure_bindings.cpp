// figure_command: `gwb figure` drawn in this process (gwb.figure) with the figure library, where the
// package was built with Qt Gui (GWB_HAVE_FIGURES). Through a std-only header: no Qt header here.

#include "bindings_common.h"

#ifdef GWB_HAVE_FIGURES
#include "figure/figure_command.h"
#endif

#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace gwb::python {

void registerFigure(py::module_& m) {
#ifdef GWB_HAVE_FIGURES
    m.def(
        "figure_command",
        [](const std::vector<std::string>& args) {
            gwb::app::FigureCommandResult r;
            {
                py::gil_scoped_release release; // tracing and drawing take a while
                r = gwb::app::runFigureInProcess(args);
            }
            return py::make_tuple(r.status, r.out, r.err);
        },
        py::arg("args"), "Runs `gwb figure ARGS` in this process: (exit status, standard output, messages).");
#else
    (void)m;
#endif
}

} // namespace gwb::python
