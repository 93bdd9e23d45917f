#include "gui/main_window.h"

#include "common/bundled_models.h"
#include "gui/prompt_limit.h"
#include "gui/prompt_panel.h"
#include "gui/recent_files.h"
#include "gui/selection_bar.h"
#include "gui/first_start.h"
#include "gui/patching_job.h"
#include "gui/paths_job.h"
#include "gui/quick_ablation.h"
#include "gui/features_job.h"
#include "gui/saliency_job.h"
#include "gui/token_scalars.h"
#include "gui/views_guide.h"

#include "gwb/engine/device.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/paths_view.h"
#include "gwb/views/features_view.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/selection_policy.h"
#include "gwb/views/token_strip.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QResizeEvent>
#include <QComboBox>
#include <QDialog>
#include <QDockWidget>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QFileDialog>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QThread>
#include <QTimer>
#include <QTextEdit>
#include <QToolBar>
#include <QVBoxLayout>

// Q_INIT_RESOURCE must be used outside a namespace. gwb_gui is a static library: without this
// call a program that links it normally (the tests) would drop the icons and sample prompts.
static void initGwbResources() {
    Q_INIT_RESOURCE(resources);
}

namespace gwb::app {

using gwb::views::Selection;
using gwb::views::View;

MainWindow::MainWindow(const MainWindowOptions& options, QWidget* parent)
    : QMainWindow(parent), m_options(options), m_selection(new Selection(this)),
      m_controller(new TraceController(this)) {
    initGwbResources();
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(QStringLiteral("Grassmann Workbench"));
    setWindowIcon(QIcon(QStringLiteral(":/gwb/icons/gwb.svg")));
    setAcceptDrops(true);
    setDockNestingEnabled(true);
    resize(initialWindowSize());

    m_recentModels = new RecentFiles(QStringLiteral("recent/models"), QStringLiteral("Open &Recent Model"), this);
    m_recentSessions = new RecentFiles(QStringLiteral("recent/sessions"), QStringLiteral("Open Recent &Session"), this);
    connect(m_recentModels, &RecentFiles::chosen, this, &MainWindow::openRecent);
    connect(m_recentSessions, &RecentFiles::chosen, this, &MainWindow::openRecent);

    buildModelBar();
    m_selectionBar = new SelectionBar(m_selection, this);
    addToolBarBreak();
    addToolBar(Qt::TopToolBarArea, m_selectionBar);
    connect(m_selectionBar, &SelectionBar::tokenScalarChanged, this, [this](const QString& id) {
        m_tokenScalar = id;
        updateTokenStrip();
    });

    buildDocks();
    buildActions();
    buildStatusBar();
    buildCorpusUi();

    connect(m_controller, &TraceController::started, this, &MainWindow::onRunStarted);
    connect(m_controller, &TraceController::progress, this, &MainWindow::onProgress);
    connect(m_controller, &TraceController::finished, this, &MainWindow::onFinished);
    connect(m_controller, &TraceController::analysisCompleted, this, &MainWindow::onAnalysisCompleted);
    connect(m_controller, &TraceController::lensComputed, this, &MainWindow::onLensComputed);
    connect(m_controller, &TraceController::failed, this, &MainWindow::onFailed);
    connect(m_controller, &TraceController::cancelled, this, &MainWindow::onCancelled);
    connect(m_controller, &TraceController::modelProbed, this, &MainWindow::onModelProbed);
    connect(m_controller, &TraceController::modelFailed, this, &MainWindow::onModelFailed);

    // Arrow keys move the selected token wherever the focus is not in a text or number field.
    qApp->installEventFilter(this);

    m_defaultState = saveState();
    if (m_options.useBundledModels) useBundledModels();
    if (m_options.restoreSettings) restoreWindowSettings();
    updateModelLabels();
    updateDeviceLabel();
    setData({});
    // First start (no saved session, nothing typed): show the instrument on a sample prompt.
    if (m_options.sampleOnFirstStart) startWithSample();
}

QSize MainWindow::initialWindowSize() const {
    // 1400 x 900 where the screen has room; else the screen's available area (a 1280 x 720 or
    // 1366 x 768 laptop), never less than the window's minimum.
    QSize size(1400, 900);
    if (const QScreen* screen = QGuiApplication::primaryScreen()) {
        const QSize avail = screen->availableGeometry().size();
        if (avail.width() > 0 && avail.height() > 0) size = size.boundedTo(avail);
    }
    return size.expandedTo(kWindowMinimum);
}

bool MainWindow::startWithSample() {
    if (!prompt().trimmed().isEmpty() || (m_grassmannPath.isEmpty() && m_baselinePath.isEmpty())) return false;
    setPrompt(samplePrompt());
    QTimer::singleShot(0, this, [this] {
        // Only if nothing else was asked for meanwhile (a prompt from the command line, a session).
        if (!isRunning() && m_data.tokenCount() == 0 && prompt() == samplePrompt()) run();
    });
    return true;
}

MainWindow::~MainWindow() {
    qApp->removeEventFilter(this);
    m_controller->cancel();
}

void MainWindow::buildModelBar() {
    auto* bar = new QToolBar(QStringLiteral("Models"), this);
    bar->setObjectName(QStringLiteral("modelBar"));
    auto* gTitle = new QLabel(QStringLiteral(" Grassmann: "), bar);
    m_grassmannLabel = new QLabel(bar);
    m_grassmannLabel->setObjectName(QStringLiteral("grassmannLabel"));
    auto* bTitle = new QLabel(QStringLiteral("   Baseline: "), bar);
    m_baselineLabel = new QLabel(bar);
    m_baselineLabel->setObjectName(QStringLiteral("baselineLabel"));
    auto* open = new QPushButton(QStringLiteral("Open Model…"), bar);
    connect(open, &QPushButton::clicked, this, &MainWindow::chooseModel);

    m_device = new QComboBox(bar);
    m_device->setObjectName(QStringLiteral("deviceCombo"));
    m_device->addItem(QStringLiteral("auto"));
    m_device->addItem(QStringLiteral("cpu"));
    if (gwb::engine::cudaAvailable()) m_device->addItem(QStringLiteral("cuda"));
    m_device->setToolTip(QStringLiteral("Compute device for tracing"));
    m_threads = new QSpinBox(bar);
    m_threads->setObjectName(QStringLiteral("threadsSpin"));
    m_threads->setRange(0, 256);
    m_threads->setSpecialValueText(QStringLiteral("all cores"));
    m_threads->setToolTip(QStringLiteral("CPU threads used by the engine"));
    connect(m_device, &QComboBox::currentIndexChanged, this, [this] { updateDeviceLabel(); });
    connect(m_threads, &QSpinBox::valueChanged, this, [this] { updateDeviceLabel(); });

    bar->addWidget(gTitle);
    bar->addWidget(m_grassmannLabel);
    bar->addWidget(bTitle);
    bar->addWidget(m_baselineLabel);
    bar->addWidget(new QLabel(QStringLiteral("  "), bar));
    bar->addWidget(open);
    bar->addSeparator();
    bar->addWidget(new QLabel(QStringLiteral(" Device "), bar));
    bar->addWidget(m_device);
    bar->addWidget(new QLabel(QStringLiteral("  Threads "), bar));
    bar->addWidget(m_threads);
    m_promptLimit = new PromptLimit(bar);
    bar->addWidget(m_promptLimit);
    addToolBar(Qt::TopToolBarArea, bar);
}

void MainWindow::buildDocks() {
    // QMainWindow needs a central widget; the views live in docks, so it stays empty and hidden.
    auto* central = new QWidget(this);
    central->hide();
    setCentralWidget(central);

    m_prompt = new PromptPanel(this);
    connect(m_prompt, &PromptPanel::runRequested, this, &MainWindow::run);
    connect(m_prompt, &PromptPanel::cancelRequested, this, &MainWindow::cancelRun);
    connect(m_prompt, &PromptPanel::continueRequested, this, &MainWindow::continueRun);
    connect(m_prompt->editor(), &QPlainTextEdit::textChanged, this, &MainWindow::updateStaleness);
    // A notice adds lines to the prompt panel; when it goes, so does the height it took.
    connect(m_prompt, &PromptPanel::noticeShownChanged, this,
            [this] { QTimer::singleShot(0, this, &MainWindow::fitTopDocks); });
    m_promptDock = new QDockWidget(QStringLiteral("Prompt"), this);
    m_promptDock->setObjectName(QStringLiteral("dock_prompt"));
    m_promptDock->setWidget(m_prompt);
    addDockWidget(Qt::TopDockWidgetArea, m_promptDock);

    m_strip = new gwb::views::TokenStrip(this);
    m_strip->setObjectName(QStringLiteral("tokenStrip"));
    m_strip->setSelection(m_selection);
    m_strip->setMinimumHeight(40); // keep the dock from collapsing before the first run
    // "Colour tokens by" names a feature's activation while the strip shows it.
    connect(m_strip, &gwb::views::TokenStrip::customColouringChanged, m_selectionBar,
            &SelectionBar::showCustomColouring);
    m_stripDock = new QDockWidget(QStringLiteral("Tokens"), this);
    m_stripDock->setObjectName(QStringLiteral("dock_tokens"));
    // Long prompts wrap into many rows of chips: scroll them rather than clip them.
    auto* stripScroll = new QScrollArea(this);
    stripScroll->setWidget(m_strip);
    stripScroll->setWidgetResizable(true);
    stripScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    stripScroll->setFrameShape(QFrame::NoFrame);
    // Not vertically expanding: when the window grows, the dock area with the views takes the
    // height (Qt gives spare room to expanding docks first).
    stripScroll->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
    // The scroll area's own minimum (room for scroll bars) would keep a band under one row of chips.
    stripScroll->setMinimumHeight(m_strip->minimumHeight());
    m_stripDock->setWidget(stripScroll);
    keepSelectionVisible(stripScroll, m_strip, m_selection);
    addDockWidget(Qt::TopDockWidgetArea, m_stripDock);
    splitDockWidget(m_promptDock, m_stripDock, Qt::Vertical);

    QDockWidget* first = nullptr;
    for (const QString& id : gwb::views::viewIds()) {
        std::unique_ptr<View> owned = gwb::views::createView(id);
        if (!owned) continue;
        View* v = owned.release();
        v->setObjectName(QStringLiteral("view_") + id);
        v->setSelection(m_selection);
        auto* dock = new QDockWidget(v->title(), this);
        dock->setObjectName(QStringLiteral("dock_") + id);
        // A view smaller than its dock's room scrolls inside it: a view's minimum size never
        // raises the window's (1024 x 640 must stay possible) nor makes the window grow.
        auto* scroll = new QScrollArea(dock);
        scroll->setObjectName(QStringLiteral("scroll_") + id);
        scroll->setWidgetResizable(true);
        scroll->setFrameShape(QFrame::NoFrame);
        scroll->setWidget(v);
        scroll->setMinimumSize(kViewAreaMinimum);
        dock->setWidget(scroll);
        addDockWidget(Qt::BottomDockWidgetArea, dock);
        if (first)
            tabifyDockWidget(first, dock);
        else
            first = dock;
        m_views.push_back(v);
        m_viewDocks.push_back(dock);
        connect(dock, &QDockWidget::visibilityChanged, this, [this, id](bool visible) {
            if (!visible) return;
            m_currentView = id;
            if (id == gwb::views::view_id::kLens) QTimer::singleShot(0, this, &MainWindow::ensureLens);
            if (id == gwb::views::view_id::kPaths || id == gwb::views::view_id::kPatching) carryCausalFields(id);
        });
    }
    wireViewWorkers();
    if (first) first->raise();
    // The views get the room; the prompt and the strip a few lines each.
    if (first)
        resizeDocks({m_promptDock, m_stripDock, first},
                    {m_prompt->sizeHint().height(), 60, std::max(400, height() - 260)}, Qt::Vertical);
    if (!m_views.empty()) m_currentView = m_views.front()->viewId();
    setTabPosition(Qt::BottomDockWidgetArea, QTabWidget::North);
}

void MainWindow::buildStatusBar() {
    m_statusMessage = new QLabel(this);
    m_statusMessage->setObjectName(QStringLiteral("statusMessage"));
    m_statusMessage->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->setMaximumWidth(220);
    m_progress->setTextVisible(false);
    m_progress->hide();
    m_statusCancel = new QPushButton(QStringLiteral("Cancel"), this);
    m_statusCancel->setObjectName(QStringLiteral("statusCancel"));
    m_statusCancel->hide();
    connect(m_statusCancel, &QPushButton::clicked, this, &MainWindow::cancelRun);
    m_deviceLabel = new QLabel(this);
    m_deviceLabel->setObjectName(QStringLiteral("deviceLabel"));
    statusBar()->addWidget(m_statusMessage, 1);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_statusCancel);
    statusBar()->addPermanentWidget(m_deviceLabel);
}

void MainWindow::buildActions() {
    QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
    QAction* openModel = file->addAction(QStringLiteral("Open &Model…"), this, &MainWindow::chooseModel);
    openModel->setShortcut(QKeySequence::Open);
    file->addMenu(m_recentModels->menu());
    file->addAction(QStringLiteral("Use &Bundled Models"), this, &MainWindow::useBundledModels);
    file->addSeparator();
    file->addAction(QStringLiteral("Open &Prompt File…"), this, &MainWindow::choosePromptFile);
    file->addAction(QStringLiteral("Open S&tatistics…"), this, &MainWindow::chooseStatistics);
    file->addSeparator();
    file->addAction(QStringLiteral("Open S&ession…"), this, &MainWindow::chooseSession);
    file->addMenu(m_recentSessions->menu());
    QAction* save = file->addAction(QStringLiteral("&Save Session"), this, [this] {
        if (m_sessionPath.isEmpty())
            saveSessionAs();
        else
            saveSession(m_sessionPath);
    });
    save->setShortcut(QKeySequence::Save);
    QAction* saveAs = file->addAction(QStringLiteral("Save Session &As…"), this, &MainWindow::saveSessionAs);
    saveAs->setShortcut(QKeySequence::SaveAs);
    file->addSeparator();
    QAction* exportFig = file->addAction(QStringLiteral("Export &Figure…"), this, &MainWindow::chooseExportFigure);
    exportFig->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    file->addAction(QStringLiteral("Export &Data…"), this, &MainWindow::chooseExportData);
    file->addSeparator();
    QAction* quit = file->addAction(QStringLiteral("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* runMenu = menuBar()->addMenu(QStringLiteral("&Run"));
    QAction* runAct = runMenu->addAction(QStringLiteral("&Run Prompt"), this, &MainWindow::run);
    runAct->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::Key_F5)});
    QAction* continueAct = runMenu->addAction(QStringLiteral("C&ontinue Prompt"), this, [this] {
        continueRun(m_prompt->continueCount()->value(), m_prompt->sampleBox()->isChecked());
    });
    continueAct->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Return));
    continueAct->setToolTip(QStringLiteral("Generate the next tokens with the Grassmann model and trace them"));
    QAction* cancelAct = runMenu->addAction(QStringLiteral("&Cancel"), this, &MainWindow::cancelRun);
    cancelAct->setShortcut(QKeySequence(Qt::Key_Escape));
    runMenu->addSeparator();
    runMenu->addAction(QStringLiteral("C&orpus…"), this, &MainWindow::showCorpusDialog);

    m_viewMenu = menuBar()->addMenu(QStringLiteral("&View"));
    for (QDockWidget* d : {m_promptDock, m_stripDock})
        m_viewMenu->addAction(d->toggleViewAction());
    m_viewMenu->addSeparator();
    for (size_t i = 0; i < m_viewDocks.size(); ++i) {
        const QString id = m_views[i]->viewId();
        QAction* a = m_viewMenu->addAction(m_views[i]->title(), this, [this, id] { showView(id); });
        if (i < 9) a->setShortcut(QKeySequence(Qt::ALT | static_cast<Qt::Key>(Qt::Key_1 + static_cast<int>(i))));
        if (i == 9) a->setShortcut(QKeySequence(Qt::ALT | Qt::Key_0));
    }
    // Every view, however many: the next / previous one in tab order.
    auto step = [this](int by) {
        if (m_views.empty()) return;
        size_t at = 0;
        for (size_t i = 0; i < m_views.size(); ++i)
            if (m_views[i]->viewId() == m_currentView) at = i;
        const auto n = static_cast<int>(m_views.size());
        showView(m_views[static_cast<size_t>(((static_cast<int>(at) + by) % n + n) % n)]->viewId());
    };
    QAction* nextView = m_viewMenu->addAction(QStringLiteral("&Next View"), this, [step] { step(1); });
    nextView->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageDown));
    QAction* previousView = m_viewMenu->addAction(QStringLiteral("&Previous View"), this, [step] { step(-1); });
    previousView->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageUp));
    m_viewMenu->addSeparator();
    m_viewMenu->addAction(QStringLiteral("Reset &Layout"), this, &MainWindow::resetLayout);

    QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
    QAction* guide = help->addAction(QStringLiteral("&Views Guide"), this, [this] {
        if (!m_viewsGuide) m_viewsGuide = new ViewsGuide(this);
        m_viewsGuide->show();
        m_viewsGuide->raise();
    });
    guide->setObjectName(QStringLiteral("actionViewsGuide"));
    guide->setShortcut(QKeySequence::HelpContents);
    help->addAction(QStringLiteral("&About"), this, [this] {
        QMessageBox::about(this, QStringLiteral("About Grassmann Workbench"),
                           QStringLiteral("<b>Grassmann Workbench %1</b><p>Look inside attention-free Grassmann "
                                          "mixing language models next to a Transformer baseline.</p>"
                                          "<p>Click a token to select it everywhere; Left/Right move it, "
                                          "Up/Down change the layer.</p>")
                               .arg(QStringLiteral(GWB_VERSION)));
    });
}

void MainWindow::restoreWindowSettings() {
    QSettings s;
    if (s.contains(QStringLiteral("window/geometry")))
        restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
    if (s.contains(QStringLiteral("window/state")))
        m_layoutRestored = restoreState(s.value(QStringLiteral("window/state")).toByteArray());
    m_device->setCurrentText(s.value(QStringLiteral("engine/device"), QStringLiteral("auto")).toString());
    m_threads->setValue(s.value(QStringLiteral("engine/threads"), 0).toInt());
    m_promptLimit->setTokens(s.value(QStringLiteral("engine/promptLimit"), PromptLimit::kDefaultTokens).toInt());
    m_selectionBar->setTokenScalar(s.value(QStringLiteral("view/tokenScalar"), QStringLiteral("surprisal")).toString());
    for (View* v : m_views) {
        const QJsonDocument doc =
            QJsonDocument::fromJson(s.value(QStringLiteral("views/") + v->viewId()).toByteArray());
        if (doc.isObject()) v->setSettings(doc.object());
    }
    // The last session (models, prompt, selection) comes back as it was left; models that have
    // gone missing since are replaced by the bundled ones.
    const QJsonDocument last = QJsonDocument::fromJson(s.value(QStringLiteral("session/last")).toByteArray());
    if (last.isObject()) {
        try {
            Session session = Session::fromJson(last.object());
            if (!QFileInfo::exists(session.grassmannModel)) session.grassmannModel = m_grassmannPath;
            if (!QFileInfo::exists(session.baselineModel)) session.baselineModel = m_baselinePath;
            applySession(session, false);
        } catch (const std::exception&) {
            // A stale or damaged entry is simply not restored.
        }
    }
}

void MainWindow::saveWindowSettings() const {
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
    s.setValue(QStringLiteral("engine/device"), m_device->currentText());
    s.setValue(QStringLiteral("engine/threads"), m_threads->value());
    s.setValue(QStringLiteral("engine/promptLimit"), m_promptLimit->tokens());
    s.setValue(QStringLiteral("view/tokenScalar"), m_tokenScalar);
    for (const View* v : m_views)
        s.setValue(QStringLiteral("views/") + v->viewId(), QJsonDocument(v->settings()).toJson(QJsonDocument::Compact));
    s.setValue(QStringLiteral("session/last"), QJsonDocument(currentSession().toJson()).toJson(QJsonDocument::Compact));
}

void MainWindow::resetLayout() {
    restoreState(m_defaultState);
    for (QDockWidget* d : m_viewDocks)
        d->show();
    m_promptDock->show();
    m_stripDock->show();
}

void MainWindow::closeEvent(QCloseEvent* event) {
    m_controller->cancel();
    if (m_options.restoreSettings) saveWindowSettings();
    event->accept();
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Show && watched == this && !m_shownOnce) {
        // The first layout at the window's real size (a tour or a small screen sets it after the
        // docks were made): the prompt and the strip a few lines each, the views the rest.
        m_shownOnce = true;
        if (!m_layoutRestored && !m_viewDocks.empty())
            QTimer::singleShot(0, this, [this] {
                resizeDocks({m_promptDock, m_stripDock, m_viewDocks.front()},
                            {m_prompt->sizeHint().height(), 60, height()}, Qt::Vertical);
            });
    }
    if (event->type() == QEvent::Resize && watched == this) {
        // Qt shares a window's new height among all dock areas. This filter sees the resize
        // before the layout does: the prompt and the token strip keep their heights for it, so
        // the views take the spare height; afterwards the user may resize them freely again.
        const auto* resize = static_cast<QResizeEvent*>(event);
        if (resize->oldSize().isValid() && resize->size().height() > resize->oldSize().height() &&
            m_promptDock->isVisible() && !m_promptDock->isFloating()) {
            for (QDockWidget* d : {m_promptDock, m_stripDock})
                d->setMaximumHeight(d->height());
            QTimer::singleShot(0, this, [this] {
                for (QDockWidget* d : {m_promptDock, m_stripDock})
                    d->setMaximumHeight(QWIDGETSIZE_MAX);
            });
        }
    }
    if (event->type() == QEvent::Hide) {
        // A modal dialog of this window closed (a file dialog, a message box, Export, Import...).
        // Without a window manager nothing activates this window again, and its shortcuts (F1,
        // Ctrl+Q, Ctrl+Return) wait for a click: give it the activation back once the dialog is gone.
        auto* dialog = qobject_cast<QDialog*>(watched);
        if (dialog && dialog->isModal() && dialog->parentWidget() && dialog->parentWidget()->window() == this)
            QTimer::singleShot(0, this, [this] {
                if (isVisible() && !QApplication::activeModalWidget() && QApplication::activeWindow() != this) {
                    raise();
                    activateWindow();
                }
            });
    }
    if (event->type() != QEvent::KeyPress) return QMainWindow::eventFilter(watched, event);
    auto* w = qobject_cast<QWidget*>(watched);
    if (!w || w->window() != this || QApplication::activeModalWidget()) return QMainWindow::eventFilter(watched, event);
    const auto* key = static_cast<QKeyEvent*>(event);
    if (key->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier))
        return QMainWindow::eventFilter(watched, event);
    // Text and number fields keep their own arrow keys.
    QWidget* focus = QApplication::focusWidget();
    if (qobject_cast<QLineEdit*>(focus) || qobject_cast<QPlainTextEdit*>(focus) || qobject_cast<QTextEdit*>(focus) ||
        qobject_cast<QAbstractSpinBox*>(focus) || qobject_cast<QComboBox*>(focus))
        return QMainWindow::eventFilter(watched, event);
    switch (key->key()) {
    case Qt::Key_Left:
        m_selection->setToken(m_selection->token() - 1);
        return true;
    case Qt::Key_Right:
        m_selection->setToken(m_selection->token() + 1);
        return true;
    case Qt::Key_Up:
        m_selection->setLayer(m_selection->layer() - 1);
        return true;
    case Qt::Key_Down:
        m_selection->setLayer(m_selection->layer() + 1);
        return true;
    default:
        return QMainWindow::eventFilter(watched, event);
    }
}

View* MainWindow::view(const QString& id) const {
    for (View* v : m_views)
        if (v->viewId() == id) return v;
    return nullptr;
}

void MainWindow::showView(const QString& id) {
    for (size_t i = 0; i < m_views.size(); ++i)
        if (m_views[i]->viewId() == id) {
            m_viewDocks[i]->show();
            m_viewDocks[i]->raise();
            m_currentView = id;
            if (id == gwb::views::view_id::kPaths || id == gwb::views::view_id::kPatching) carryCausalFields(id);
        }
}

QString MainWindow::statusText() const {
    return m_statusMessage->text();
}
QString MainWindow::noticeText() const {
    return m_prompt->notice();
}

void MainWindow::setPrompt(const QString& text) {
    m_prompt->setPrompt(text);
}
QString MainWindow::prompt() const {
    return m_prompt->prompt();
}

void MainWindow::showStatus(const QString& message) {
    ++m_statusSerial;
    m_statusMessage->setText(message);
    m_statusMessage->setToolTip(message);
    m_statusMessage->setStyleSheet(QString());
}

void MainWindow::showError(const QString& message, bool dialog) {
    ++m_statusSerial;
    m_statusMessage->setText(message);
    m_statusMessage->setToolTip(message);
    m_statusMessage->setStyleSheet(QStringLiteral("color: #a01010;"));
    if (dialog && isVisible()) QMessageBox::warning(this, QStringLiteral("Grassmann Workbench"), message);
}

void MainWindow::updateDeviceLabel() {
    QString text;
    try {
        const std::string device = gwb::engine::resolveDevice(m_device->currentText().toStdString());
        const int threads = m_threads->value();
        text = QStringLiteral("Device: %1 · threads: %2")
                   .arg(QString::fromStdString(device),
                        threads > 0 ? QString::number(threads)
                                    : QStringLiteral("all (%1)").arg(QThread::idealThreadCount()));
        m_deviceLabel->setToolTip(QString::fromStdString(gwb::engine::deviceSummary(device)));
    } catch (const std::exception& e) {
        text = QStringLiteral("Device: %1").arg(QString::fromUtf8(e.what()));
    }
    m_deviceLabel->setText(text);
}

namespace {
/// Copies the metric fields (corrupted prompt, answer, wrong piece) of `from` into `to`'s inputs;
/// false when there is nothing to copy or `to` keeps its own.
template <typename From, typename To> bool copyMetricFields(const From& from, To& to, bool overwrite) {
    if (from.corrupt.empty() || (!overwrite && !to.corrupt.empty())) return false;
    if (to.corrupt == from.corrupt && to.answer == from.answer && to.wrong == from.wrong) return false;
    to.corrupt = from.corrupt;
    to.answer = from.answer;
    to.wrong = from.wrong;
    return true;
}
} // namespace

void MainWindow::carryCausalFields(const QString& to, bool overwrite) {
    // The Patching and Paths views take the same corrupted prompt, answer and wrong piece: copied
    // into `to` from the other view when `to` has none yet (shown) or the other just ran with them.
    auto* patching = qobject_cast<gwb::views::PatchingView*>(view(gwb::views::view_id::kPatching));
    auto* paths = qobject_cast<gwb::views::PathsView*>(view(gwb::views::view_id::kPaths));
    if (!patching || !paths) return;
    if (to == gwb::views::view_id::kPaths) {
        gwb::views::PathsInputs in = paths->inputs();
        if (copyMetricFields(patching->inputs(), in, overwrite)) paths->setInputs(in);
    } else {
        gwb::views::PatchingInputs in = patching->inputs();
        if (copyMetricFields(paths->inputs(), in, overwrite)) patching->setInputs(in);
    }
}

} // namespace gwb::app
