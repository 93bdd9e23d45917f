#pragma once
// The window's command-line options, stated once: gui_main.cpp parses them, and `gwb --help`
// (app/main.cpp) lists them from the same table, so an option cannot be parsed and left unlisted.

namespace gwb::app {

struct WindowOption {
    const char* name;  ///< without the dashes
    const char* value; ///< the value's name, or nullptr for a flag
    const char* help;
};

inline constexpr WindowOption kWindowOptions[] = {
    {"model", "FILE", "Grassmann model to open (default: the bundled one)."},
    {"baseline", "FILE",
     "Transformer baseline to open: a model file, or a Hugging Face GPT-2 folder (default: the bundled one)."},
    {"prompt", "TEXT", "Prompt text."},
    {"prompt-file", "FILE",
     "Prompt from a file: UTF-8 text; one line end at the very end of the file (which editors add) is not part "
     "of the prompt."},
    {"run", nullptr, "Run the prompt at start."},
    {"continue", "N",
     "With --run: let the Grassmann model continue the prompt by N tokens first (sampled with seed 0, "
     "as the Continue button)."},
    {"session", "FILE", "Open a saved session (models, prompt, selection, view settings)."},
    {"stats", "S.npz", "Open corpus statistics (gwb stats) in the Corpus view."},
    {"dictionary", "DIR", "Open a dictionary folder (gwb features train, or SAELens's layout) in the Features view."},
    {"transcoders", "DIR",
     "The Grassmann model's transcoder set (gwb features train --transcoders) for the Graph view."},
    {"baseline-transcoders", "DIR", "The Transformer's transcoder set for the Graph view."},
    {"fresh", nullptr, "Start with the default layout and settings (the saved ones are kept)."},
    {"tour", "DIR", "After the run, screenshot every view into DIR and quit."},
    {"select", "T,L", "With --tour: the token[,layer] to select."},
};

} // namespace gwb::app
