#include "gui/views_guide.h"

#include "gwb/engine/analysis.h"

#include <QDialogButtonBox>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gwb::app {
namespace {

struct ViewEntry {
    const char* title;
    const char* shows;
    std::vector<const char*> definitions; ///< keys of gwb::engine::definitions()
};

// What each view draws, in the order of the tabs; the definitions are the ones its data export
// writes into the JSON ("definitions_used").
const std::vector<ViewEntry>& entries() {
    static const std::vector<ViewEntry> e = {
        {"Gates",
         "Layer \u00d7 token heatmap of the Grassmann gate a_t: the mean over channels (or the fraction of "
         "channels above 0.5); click a layer to drill into token \u00d7 channel. Low gate: the layer replaced the "
         "token's state with geometry; high gate: it kept the state. Colours follow the data's range (the colour "
         "bar gives it); Scale \u25b8 fixed 0 to 1 puts every prompt on one scale.",
         {"meanGate", "gateAboveHalf"}},
        {"Pl\u00fccker",
         "Layer \u00d7 token heatmap of the coherence \u2016B_t\u2016 of the aggregated bivector (residual and "
         "planarity of B_t as a rounding check), and the selected token's pair norms per offset D. An offset that "
         "reaches before the prompt reads \u2014 (undefined, not 0). B_t is not defined for a mixer that sends "
         "each offset's plane through an MLP and averages the outputs (aggregation per_offset_mlp, the "
         "CausalGrassmannMixer family): no mean plane is formed, so only the pair norms are shown.",
         {"coherence", "pairNorm", "residual", "planarity"}},
        {"Principal angles",
         "For the selected token and offset: the principal angles between its lifted pair plane in layer l and "
         "l+1; below, the layer \u00d7 layer distances of prompt or reading subspaces. Not defined (\u2014) for a "
         "mixer that normalises z (GrassmannGPTv3: z = LN(W_red x)), whose pinv(W_red) z is not the reading of "
         "the residual stream.",
         {"anglesNext", "promptSubspaceDistance", "readingSubspaceDistance"}},
        {"Subspace picture",
         "The selected token's pair planes of the selected layer as great circles on the unit sphere of the "
         "layer's top-3 principal directions (needs at least 2 tokens). Drag to rotate.",
         {}},
        {"Attention",
         "The baseline's attention: every head as a thumbnail, one head large, and per query row the entropy, "
         "sparsity, top-1 mass and entropic transport cost.",
         {"entropy", "normEntropy", "sparsity", "effSupport", "transportCost"}},
        {"Compare",
         "The selected token's Grassmann influence row next to the attention rows of the same layer (Jensen\u2013"
         "Shannon divergence, top-1 agreement), and both models' layer \u00d7 layer subspace distances. The "
         "influence is not defined (\u2014) for a mixer that normalises g (GrassmannGPTv3: g = LN(W_plu B + b)): "
         "no share of g then belongs to one offset. For the per-offset MLP (per_offset_mlp) g is the mean of the "
         "offsets' MLP outputs m_D, so the influence is each one's share \u2016(1 \u2212 a) m_D\u2016 / |W_t|. "
         "For GrassmannGPTv3, B_t is the scaled raw mean of the planes "
         "(its code does not normalise them), which the Pl\u00fccker view shows as such.",
         {"influence", "jsDivergence", "promptSubspaceDistance"}},
        {"Read-out planes",
         "Each channel of W_plu as an antisymmetric matrix A_c: its planarity and Pl\u00fccker residual ranked, the "
         "selected channel's singular pairs, and the channels the selected token excites, with the angles "
         "between the token plane and each channel's top plane. Not defined for the per-offset MLP "
         "(per_offset_mlp): no linear W_plu reads the planes.",
         {"readoutResidual", "readoutPlanarity", "readoutSpectrum", "readoutTopPlane", "readoutContribution",
          "readoutAngles"}},
        {"Logit lens",
         "Both models: each layer's input state (rows \u201cL0 in\u201d \u2026, then \u201cfinal\u201d) through the "
         "final LayerNorm and the tied head; cells show the top-1 next token coloured by its probability (bold, "
         "underlined: the actual next token). Below: the selected cell's top-K and the rank of the actual next "
         "token per lens layer (1 = top-1, log axis). The lens (N + 1 passes through the T x V head, most of a long "
         "prompt's cost) is computed when this view is shown, with progress and Cancel, and kept until the next "
         "Run.",
         {}},
        {"Saliency",
         "Gradient \u00d7 input saliency of the actual next token (or a typed piece) for both models, as shares of "
         "the past tokens, next to the Grassmann influence row and the mean attention row.",
         {"jsDivergence"}},
        {"Patching",
         "Causal tests on both models side by side, one diverging colour scale centred at 0: activation patching "
         "(clean values into the corrupted run) or zero / mean ablation of a site (resid.L block input, mixer, "
         "gate, ffn, one Grassmann offset offset.L.D, one attention head head.L.H), swept over layers \u00d7 "
         "positions (offsets, heads). With a corrupted prompt a cell shows the normalised effect (patched \u2212 "
         "corrupted) / (clean \u2212 corrupted) of the metric logit[answer] \u2212 logit[wrong] at the metric "
         "token (1: the clean behaviour restored, 0: none of it); with answer and wrong but no corrupted prompt, "
         "the metric's change, ablated \u2212 clean; without a metric, the mean change of log p(next token). "
         "Hover for raw and normalised values, click a cell for its top-K. A cell that cannot act reads "
         "\u2014: a layer without that offset, or an offset D \u2265 T that reaches before the prompt at every "
         "position; so is every effect when the clean and corrupted metrics are equal. A sweep that no longer "
         "matches its inputs (a refused run, edited fields, another prompt) is greyed under a banner saying why. "
         "Right-click a cell: \u201cTrace paths from here\u201d runs that component in the Paths view. "
         "Pairs file\u2026 runs a JSONL/CSV file of pairs (clean, corrupt, answer, wrong, optional position) "
         "with the same site and mode: the heatmaps then show each cell's mean over the pairs (columns of a "
         "position site count back from each pair's metric position m), hovering gives the mean, its 95% "
         "bootstrap interval and n, and the side panel a clicked cell's distribution over the pairs and the "
         "attribution estimate against the exact change with their correlations (Pairs: exact computes both; "
         "attribution estimates every cell and checks 5 + 5 a pair exactly). Cancel keeps the pairs done.",
         {}},
        {"Paths",
         "Path patching (gwb paths) of both models on one diverging scale: rows are the senders in layer order "
         "(Grassmann offset.l.D, mixer.l, gate.l, ffn.l; Transformer head.l.H, mixer.l, ffn.l), columns the "
         "receivers. The corrupted prompt runs with one sender at its clean value; what in its own sublayer "
         "depends on it is recomputed and every other component keeps its corrupted value, so column logits is the "
         "sender's direct effect on logit[answer] \u2212 logit[wrong]; column resid.M puts the block input h^M of "
         "that run into a plain corrupted run: the sender's effect through block M onwards. Cells show the "
         "normalised effect (1: the clean metric, 0: the corrupted one); a receiver at or before the sender's "
         "layer reads \u2014. Token restricts the senders to one position. Hover for the raw metric and the effect, "
         "click a cell for that run's top next pieces. Not defined for a variant: nothing; both models' every "
         "component is a sender.",
         {}},
        {"Features",
         "A sparse dictionary (gwb features train; Open Dictionary\u2026) read at the selected token: the features "
         "active there by activation. Clicking one shows its dashboard: top-activating contexts from the "
         "dictionary's training files with the activation shaded on each token, its activation histogram, the "
         "pieces its decoder direction promotes and suppresses through the unembedding, and the share of that "
         "direction in the reading subspace row(W_red) of the Grassmann layer that reads the site; the token "
         "strip is coloured by its activation (Colour tokens by returns to a scalar). A crosscoder of the two models "
         "adds the histogram of relative decoder "
         "norms ||d_T|| / (||d_G|| + ||d_T||) and a filter: the Grassmann model's features (near 0), shared "
         "(about 0.5), the Transformer's (near 1).",
         {}},
        {"Graph",
         "Attribution graphs of the next token after the prompt (gwb graph; Transcoders\u2026 opens each model's "
         "transcoder set, gwb features train --transcoders): the model's replacement with transcoders in place of "
         "the FFNs, an error node for what they miss, norms, gates, Pl\u00fccker normalisers and attention patterns "
         "frozen at the prompt and the Pl\u00fccker product split evenly between its two tokens; edges are direct "
         "effects, pruned by influence on the logits (circuit-tracer's thresholds). Layers up, positions across, "
         "both models side by side. Hover a node for its strongest inputs, click to pin it, click an edge for its "
         "split across the offsets or heads of each block it crosses, drag a box to group nodes.",
         {}},
        {"Corpus",
         "Statistics over a corpus (gwb stats, File \u25b8 Open Statistics, Run \u25b8 Corpus): per layer one box or "
         "violin per model, the mean with its 95% interval, and the mean against the position in the window.",
         {}},
    };
    return e;
}

const std::vector<std::pair<const char*, const char*>>& shortcuts() {
    static const std::vector<std::pair<const char*, const char*>> s = {
        {"Ctrl+Return, F5", "Run the prompt through both models"},
        {"Ctrl+Shift+Return", "Continue: the Grassmann model writes the next tokens, then both are traced"},
        {"Esc", "Cancel the run"},
        {"\u2190 / \u2192", "Previous / next token (when the focus is not in a text or number field)"},
        {"Delete (on the token strip)", "Clear the strip's bars (a saliency or an ablation)"},
        {"\u2191 / \u2193", "Previous / next layer"},
        {"Alt+1 \u2026 Alt+9, Alt+0", "Show the first ten views"},
        {"Ctrl+PgDown / Ctrl+PgUp", "Next / previous view (every view, in tab order)"},
        {"Ctrl+E", "Export the current view's figure (also while typing a prompt)"},
        {"Ctrl+O", "Open a model"},
        {"Ctrl+S / Ctrl+Shift+S", "Save the session / save it as"},
        {"Ctrl+Q", "Quit"},
        {"Mouse wheel (Shift: columns only)", "Zoom a heatmap"},
        {"Drag, double-click", "Pan a heatmap, reset its zoom"},
        {"Click a token, cell or row", "Select it in every view"},
    };
    return s;
}

QString escaped(const char* text) {
    return QString::fromUtf8(text).toHtmlEscaped();
}

/// A definition's name in words ("mean gate"); the key ("meanGate") is what the data's JSON uses.
QString readableName(const std::string& key) {
    static const std::map<std::string, const char*> names = {
        {"meanGate", "mean gate"},
        {"gateAboveHalf", "share of gate channels above 0.5"},
        {"coherence", "coherence \u2016B_t\u2016"},
        {"pairNorm", "pair norm \u2016z_t \u2227 z_{t\u2212D}\u2016"},
        {"residual", "Pl\u00fccker residual \u03c1"},
        {"planarity", "planarity"},
        {"anglesNext", "principal angles to the next layer"},
        {"promptSubspaceDistance", "prompt-subspace distance"},
        {"readingSubspaceDistance", "reading-subspace distance"},
        {"entropy", "attention entropy"},
        {"normEntropy", "normalised entropy"},
        {"sparsity", "sparsity"},
        {"effSupport", "effective support"},
        {"transportCost", "transport cost"},
        {"influence", "Grassmann influence"},
        {"jsDivergence", "Jensen\u2013Shannon divergence"},
        {"readoutResidual", "read-out residual"},
        {"readoutPlanarity", "read-out planarity"},
        {"readoutSpectrum", "read-out singular pairs"},
        {"readoutTopPlane", "read-out top plane"},
        {"readoutContribution", "channel contribution"},
        {"readoutAngles", "angles to the read-out planes"},
    };
    if (const auto it = names.find(key); it != names.end()) return QString::fromUtf8(it->second);
    QString words; // camelCase in words, for a key added later without a name here
    for (const char c : key) {
        if (std::isupper(static_cast<unsigned char>(c))) words += QLatin1Char(' ');
        words += QChar::fromLatin1(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return words;
}

} // namespace

QString viewsGuideHtml() {
    const auto& defs = gwb::engine::definitions();
    QString html = QStringLiteral("<h2>Views</h2><p>Every view follows the shared selection (token, layer, head, "
                                  "offset), exports its figure (File \u25b8 Export Figure) and its numbers (File "
                                  "\u25b8 Export Data; the JSON carries the definitions below). An undefined value "
                                  "reads \u2014 and its tooltip says why.</p>"
                                  "<p><b>How a piece reads.</b> Every front end (the token strip, axes, figures, "
                                  "hovers, the command line's summaries) spells a token piece the same way: "
                                  "SentencePiece's word-start mark \u2581 is drawn as a middle dot (\u00b7the), a "
                                  "byte piece as its character (\u23ce a return, \u21e5 a tab, \u2423 a space). "
                                  "Exported data and Python keep the piece as the tokenizer writes it (\u2581the). "
                                  "A field that takes a piece accepts \u00b7the, _the and \u2581the alike.</p>");
    for (const ViewEntry& e : entries()) {
        html += QStringLiteral("<h3>%1</h3><p>%2</p>").arg(escaped(e.title), escaped(e.shows));
        if (e.definitions.empty()) continue;
        html += QStringLiteral("<ul>");
        for (const char* key : e.definitions) {
            const auto it = defs.find(key);
            if (it == defs.end()) continue;
            html += QStringLiteral("<li><b>%1</b> (<code>%2</code> in the exported JSON): %3</li>")
                        .arg(readableName(key).toHtmlEscaped(), escaped(key),
                             QString::fromStdString(it->second).toHtmlEscaped());
        }
        html += QStringLiteral("</ul>");
    }
    html += QStringLiteral("<h2>Keyboard and mouse</h2><table cellspacing=\"4\">");
    for (const auto& [keys, what] : shortcuts())
        html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(escaped(keys), escaped(what));
    html += QStringLiteral("</table>");
    return html;
}

ViewsGuide::ViewsGuide(QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("viewsGuide"));
    setWindowTitle(QStringLiteral("Views guide"));
    auto* text = new QTextBrowser(this);
    text->setObjectName(QStringLiteral("viewsGuideText"));
    text->setOpenExternalLinks(true);
    text->setHtml(viewsGuideHtml());
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(text);
    layout->addWidget(buttons);
    resize(720, 600);
}

} // namespace gwb::app
