#pragma once
// One description of a figure export used by both the window's File > Export Figure and the
// headless `gwb figure`, so that equal settings give the same file.

#include "gwb/views/figure_options.h"
#include "gwb/views/figure_options.h"

#include <QString>

#include <memory>

namespace gwb::app {

/// Parses a length such as "3.5in", "7 in", "89mm", "8.9cm", "252pt" or "3.5" (inches) into
/// inches. Throws std::invalid_argument naming the text for anything else or a non-positive value.
double parseLengthInches(const QString& text);

/// Settings a user chooses for a figure (the dialog's fields and the command's options).
struct FigureSettings {
    double widthInches = 3.5; ///< 3.5 one column, 7 two columns
    int dpi = 300;            ///< PNG resolution
    QString colormap;         ///< "" = the view's own
    double fontPoints = 0;    ///< body text size; 0 = the preset's (8 pt one column, 9 pt two)
    bool colorbar = true;
    bool caption = true;
    bool selection = false; ///< outline the on-screen selection in the figure
};

/// The FigureOptions for those settings (preset font sizes follow the width as in
/// FigureOptions::oneColumn()/twoColumn() unless fontPoints was chosen).
gwb::views::FigureOptions figureOptions(const FigureSettings& settings);

/// Output format from a path's suffix: "png", "svg" or "pdf"; "" for anything else.
QString figureFormat(const QString& path);

/// Checks that the folder of `path` exists and is writable; returns "" or a message.
QString checkWritableTarget(const QString& path);

/// The stem a figure's numbers are written under, from `--data VALUE` (dataHelp() says it to the
/// user): a folder (one that exists, or any value ending in '/', made if missing) gives
/// FOLDER/<view>; anything else is the stem itself. Each table goes to STEM_<table>.csv and .npy,
/// the definitions and metadata to STEM.json. A value ending in .csv, .npy or .json is refused,
/// since no file of that name would be written. Throws std::invalid_argument or
/// std::runtime_error (the folder cannot be made or written) with the message to show.
QString dataStem(const QString& value, const QString& viewId);

/// The help line of `--data` that states the rule above.
QString dataHelp();

} // namespace gwb::app
