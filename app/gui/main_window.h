#pragma once
// The workbench window: prompt editor with Run/Cancel, the two models, the token strip, the views
// in docks, the shared selection, status bar with progress and Cancel. Long work goes through the
// TraceController (worker thread); this class only reacts to its queued results.

#include "gui/corpus_job.h"
#include "runs/figure_request.h"
#include "gui/session.h"
#include "gui/trace_controller.h"

#include "gwb/views/selection.h"
#include "gwb/views/view.h"
#include "gwb/views/view_data.h"

#include <QMainWindow>
#include <QPointer>
#include <QSet>

#include <functional>
#include <optional>
#include <vector>

class QComboBox;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QToolButton;

namespace gwb::views {
class TokenStrip;
}

namespace gwb::app {

/// The banners about models, by their opening words (an opened model clears only these).
inline const QString kCannotOpenModel = QStringLiteral("Cannot open model: ");
inline const QString kSessionModelsMissing = QStringLiteral("The session's model files are missing: ");

class FeatureRunner;
struct FeaturesContext;
class PromptLimit;
class PromptPanel;
class RecentFiles;
class SelectionBar;

struct MainWindowOptions {
    bool useBundledModels = true; ///< start with the bundled models when they exist
    bool restoreSettings = true;  ///< restore layout and settings from QSettings (tests: false)
    /// Without a restored session (first start), run the sample prompt once the window exists.
    bool sampleOnFirstStart = true;
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const MainWindowOptions& options = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    /// The window works down to this size (a small laptop screen at its panel's scale).
    static constexpr QSize kWindowMinimum{1024, 640};
    /// Each view's dock keeps at least this much room; a view needing more scrolls inside it.
    static constexpr QSize kViewAreaMinimum{320, 200};

    /// Model files to run (""= leave that model out). Not loaded until Run (or probed for display).
    void setModelPaths(const QString& grassmannPath, const QString& baselinePath);
    QString grassmannPath() const { return m_grassmannPath; }
    QString baselinePath() const { return m_baselinePath; }
    /// Opens a model file of either kind (kind found by loading it on the worker).
    void openModel(const QString& path);

    /// Asked when a PyTorch checkpoint cannot be opened on its own (needsImportChoice()): gets
    /// the path and the error, returns the user's layout/vocabulary/offsets or nothing (cancel).
    using ImportChoiceAsker = std::function<std::optional<ImportChoice>(const QString& path, const QString& message)>;
    /// Replaces the default asker (an ImportDialog); tests answer without a modal dialog.
    void setImportChoiceAsker(ImportChoiceAsker asker) { m_askImportChoice = std::move(asker); }

    void setPrompt(const QString& text);
    QString prompt() const;
    /// Reads a UTF-8 text file into the prompt editor; returns "" or the error shown to the user.
    QString openPromptFile(const QString& path);

    /// First start: with models and an empty prompt, puts the sample prompt in and queues a run.
    /// Returns whether it did.
    bool startWithSample();

    /// Starts a run of the current prompt (drops any older one's results).
    void run();
    /// Continue: generate `tokens` after the prompt (greedy, or sampled with a fresh seed), append
    /// them marked, and trace prompt + continuation through both models.
    void continueRun(int tokens, bool sample);
    void cancelRun();
    bool isRunning() const;

    Session currentSession() const;
    /// Returns "" or the error (also shown in the window).
    QString saveSession(const QString& path);
    /// Applies a session file and runs it; on error the current state is kept.
    QString openSession(const QString& path);
    void applySession(const Session& session, bool runNow);

    /// Exports the current (or given) view's figure (format from the suffix). On failure the
    /// message is shown in the window and false returned.
    bool exportFigureTo(const QString& path, const QString& viewId = {}, const FigureSettings& settings = {});
    /// Exports the view's numbers as <basePath>_<table>.csv/.npy and <basePath>.json.
    bool exportDataTo(const QString& basePath, const QString& viewId = {});

    /// Opens corpus statistics (gwb stats, Run > Corpus) in the Corpus view and shows it; returns
    /// "" or the error (also shown, in a dialog when the window is visible). Code in main_window_corpus.cpp.
    QString openStatistics(const QString& path);
    /// Opens a dictionary folder (gwb features train) in the Features view; its activations on the
    /// current traces follow off the GUI thread (and after every run).
    void openDictionary(const QString& path);
    FeatureRunner* featureRunner() const { return m_featureRunner; }
    /// The Run > Corpus request for the window's models, device and threads and the last files used.
    CorpusRequest corpusRequest() const;
    /// Starts a corpus run on the worker thread (progress and Cancel in the status bar); the file
    /// opens in the Corpus view when it is written, also after Cancel (the windows done). Returns
    /// false and shows the problem when nothing started.
    bool runCorpus(const CorpusRequest& request);
    void cancelCorpus();
    bool isCorpusRunning() const;

    gwb::views::Selection* selection() const { return m_selection; }
    const gwb::views::WorkbenchData& workbenchData() const { return m_data; }
    TraceController* controller() const { return m_controller; }
    const std::vector<gwb::views::View*>& views() const { return m_views; }
    gwb::views::View* view(const QString& id) const;
    QString currentViewId() const { return m_currentView; }
    /// Brings a view's dock to the front.
    void showView(const QString& id);
    QString statusText() const;
    QString noticeText() const;

    /// Whether the Lens view is on screen now.
    bool lensViewShown() const;
    /// Starts the logit lens of the shown traces when the Lens view is on screen and they have none
    /// (off the GUI thread, with progress and Cancel; lensComputed() follows).
    void ensureLens();
    /// The longest prompt a Run traces (the toolbar's setting), in tokens.
    int promptLimit() const;
    void setPromptLimit(int tokens);
    /// What the toolbar says a Run of that length costs.
    QString promptCostText() const;
    /// K of the logit lens the window computes (the Lens view's top-K list).
    static constexpr int kLensTopK = 5;

Q_SIGNALS:
    void runFinished();
    /// The rest of a run's Grassmann analysis is in the views (after runFinished(), when the run
    /// computed only what the visible views draw).
    void analysisCompleted();
    /// The logit lens the Lens view asked for has come (or failed, or was cancelled).
    void lensComputed();
    void runFailed(const QString& message);
    void runCancelled();
    void modelsChanged();
    /// A corpus run ended and its file (complete or partial) is open; `path` is the file.
    void corpusFinished(const QString& path);
    void corpusFailed(const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    /// Copies the corrupted prompt, answer and wrong piece into the Patching or Paths view (`to`)
    /// from the other one: when `to` has no corrupted prompt yet, or always (`overwrite`, after a run).
    void carryCausalFields(const QString& to, bool overwrite = false);
    /// The first size: 1400 x 900, or the screen's available area when that is smaller.
    QSize initialWindowSize() const;
    /// Whether the prompt was edited since the shown results were traced.
    bool resultsAreStale() const;
    /// Marks the token strip (and the notice) when the results are stale, unmarks when not.
    void updateStaleness();
    /// Fits the prompt dock to its panel (with or without a notice) and the token strip's dock to
    /// its rows of chips (up to four), so no empty band stays above the views.
    void fitTopDocks();
    void buildActions();
    void buildModelBar();
    void buildDocks();
    void buildStatusBar();
    void buildCorpusUi();
    void chooseStatistics();
    void showCorpusDialog();
    void onCorpusFinished(const CorpusOutcome& outcome);
    void restoreWindowSettings();
    void saveWindowSettings() const;
    void resetLayout();

    void onRunStarted(quint64 id);
    void onProgress(quint64 id, const QString& stage, double fraction);
    /// The selected token a run starts from (tokenAfterRun keeps it when it stays valid); -1 = no data.
    int selectedTokenBeforeRun() const;
    void onFinished(quint64 id, const TraceOutcome& outcome);
    void onAnalysisCompleted(quint64 id, const AnalysisCompletion& completion);
    void onLensComputed(quint64 id, const LensCompletion& completion);
    /// Starts the logit lens of the shown traces when they have none (ensureLens without the check
    /// that the Lens view is on screen).
    void startLens();
    /// An export of the Lens view (`viewId`) needs the lens: computed now when missing, the window
    /// responding meanwhile. False when it could not be had (cancelled or failed).
    bool lensForExport(const QString& viewId);
    /// The analysis parts the visible views draw (kAnalysisAll when no view is visible).
    unsigned visibleAnalysisParts() const;
    /// "Traced 26 tokens" and the rest of a finished run's status line.
    QString tracedStatus(bool pending) const;
    void onFailed(quint64 id, const QString& message);
    void onCancelled(quint64 id);
    void onModelProbed(const ModelInfo& info);
    void onModelFailed(const QString& path, const QString& message);
    std::optional<ImportChoice> askImportChoice(const QString& path, const QString& message);
    void setRunningUi(bool running);

    void setData(const gwb::views::WorkbenchData& data);
    /// m_data into every view, the selection bar and the token strip.
    void showDataInViews();
    QString m_runStatus;      ///< the status line of the last finished run, before "still computing"
    QStringList m_runNotices; ///< its notices (a completed analysis may add to them)
    void updateTokenStrip();
    void updateModelLabels();
    void updateDeviceLabel();
    void showError(const QString& message, bool dialog);
    /// Fills a worker request's models as the window has them: paths, import choices, device.
    template <class Request> void setModelSources(Request& r) const; ///< main_window_wiring.cpp
    /// The view workers (saliency, features, patching, paths), wired to their views (main_window_wiring.cpp).
    void wireViewWorkers();
    FeaturesContext featuresContext() const;
    void showStatus(const QString& message);

    void chooseModel();
    void chooseSession();
    void saveSessionAs();
    void chooseExportFigure();
    void chooseExportData();
    void choosePromptFile();
    void useBundledModels();
    void openRecent(const QString& path);
    void openDroppedFile(const QString& path);

    MainWindowOptions m_options;
    ImportChoiceAsker m_askImportChoice;
    gwb::views::Selection* m_selection;
    TraceController* m_controller;
    FeatureRunner* m_featureRunner = nullptr;
    PromptPanel* m_prompt = nullptr;
    SelectionBar* m_selectionBar = nullptr;
    gwb::views::TokenStrip* m_strip = nullptr;
    std::vector<gwb::views::View*> m_views;
    std::vector<QDockWidget*> m_viewDocks;
    QDockWidget* m_promptDock = nullptr;
    QDockWidget* m_stripDock = nullptr;
    QByteArray m_defaultState; ///< dock layout right after construction (View > Reset Layout)

    QLabel* m_grassmannLabel = nullptr;
    QLabel* m_baselineLabel = nullptr;
    QComboBox* m_device = nullptr;
    QSpinBox* m_threads = nullptr;
    PromptLimit* m_promptLimit = nullptr; ///< the longest prompt a Run traces, and its cost
    /// The open models' configurations (from their probes and runs), for the cost shown beside it.
    std::optional<gwb::engine::ModelConfig> m_grassmannConfig, m_baselineConfig;
    qint64 m_runStartedMs = 0; ///< when the current Run started (ms since epoch)
    void updatePromptCost();
    QLabel* m_statusMessage = nullptr;
    quint64 m_statusSerial = 0;      ///< counts messages shown; a probe's news must not hide a newer one
    quint64 m_probeStatusSerial = 0; ///< m_statusSerial when the pending model probes began
    QSet<QString> m_openingModels;   ///< files opened (File ▸ Open Model, a drop) whose probe is pending
    QProgressBar* m_progress = nullptr;
    QPushButton* m_statusCancel = nullptr;
    QLabel* m_deviceLabel = nullptr;
    QMenu* m_viewMenu = nullptr;
    RecentFiles* m_recentModels = nullptr;
    RecentFiles* m_recentSessions = nullptr;

    QString m_grassmannPath;
    QString m_baselinePath;
    QString m_grassmannName; ///< display name once probed
    QString m_baselineName;
    QString m_sessionPath;
    /// The tokens the last run traced from ids (a Continue's), for the text it left in the
    /// prompt: while that text is unedited, Run and Continue trace these ids again (and extend
    /// them), so generated pieces stay as generated and their marks stay.
    struct IdTokens {
        QString text;                                ///< the prompt they belong to
        std::vector<gwb::engine::TraceToken> tokens; ///< ids, pieces, byte spans in text
        int64_t firstGenerated = -1;                 ///< first generated token
        int continuationFrom = -1;                   ///< QChar index of the generated text in text
    } m_idTokens;
    QPointer<QDialog> m_viewsGuide; ///< Help > Views guide, made on first use
    bool m_shownOnce = false;       ///< the first show lays the docks out at the real size
    bool m_layoutRestored = false;  ///< the user's saved dock layout was restored: keep it
    QString m_currentView;
    QString m_tokenScalar = QStringLiteral("surprisal");
    gwb::views::WorkbenchData m_data;
    std::optional<Session> m_pendingSelection; ///< applied when the session's run finishes
    quint64 m_runId = 0;

    CorpusRunner* m_corpusRunner = nullptr; ///< Run > Corpus (main_window_corpus.cpp)
    QLabel* m_corpusStatus = nullptr;
    QProgressBar* m_corpusProgress = nullptr;
    QPushButton* m_corpusCancel = nullptr;
    CorpusRequest m_lastCorpus; ///< files, window, stride, output of the last corpus run
};

} // namespace gwb::app
