"""circuit-tracer's own front end shows gwb's graphs, in a real browser (issue 70).

gwb saves the graph JSON of the bundled Grassmann model and of its baseline Transformer (the top
logit clicked and pinned beside its four strongest inputs, as the window's Graph view saves them),
circuit-tracer's own code lists them (frontend.utils.add_graph_metadata: graph-metadata.json, from
the metadata of its pydantic Model), and its own local server (frontend.local_server's
CircuitGraphHandler and Server, as its serve() makes them, bound here to 127.0.0.1 on a free port)
serves them with its bundled front end (frontend/assets). Debian's Chromium, headless, opens the
graph page, index.html?slug=grassmann, driven through the DevTools protocol over
--remote-debugging-pipe (NUL-separated JSON on file descriptors 3 and 4: no websocket client), and
the test reads the page the front end drew: one glyph (`text.node` in the link graph) of its kind
for each node the front end keeps (its formatData keeps tokens, logits, pinned nodes and every node
whose influence is at most the listing's node_threshold), the prompt's tokens and the logits' tokens
as axis labels, the clicked logit's inputs listed with their edges' weights, and the pinned nodes in
the subgraph.

index.html loads six scripts from other hosts (the authors' site and a CDN), which this machine,
like CI, cannot reach; the browser's requests for them are answered here, through the protocol's
Fetch domain, and every other request to another host fails (and Chromium resolves no host name):
d3 7.9.0 from the pinned django-d3-bridge wheel (python/pins.txt: Debian 12 has d3 5), dagre from
Debian's python3-xstatic-dagre (0.6.4 for the 0.8.5 it names: the same graphlib API), pako from
Debian's node-pako (2.1.0, the version it names), and for the authors' d3-jetpack fork, in no
registry, gwb's stand-in circuit_tracer_jetpack.js (the d3-jetpack API the front end calls);
npy_v0.js (read only for .npy feature files) and hotserver-client-ws.js (the authors' live reload)
are empty stand-ins. circuit-tracer's own files are served as they are.

GWB_SCREENSHOT_DIR=DIR also saves 1280 x 800 screenshots of both pages there
(screenshot-circuit-tracer-{grassmann,transformer}.png), with transcoder sets trained as small as
docs/workflows/attribution-graphs.md's (about five minutes) in place of the random ones: the
pictures in docs/ were made so (docs/attribution-graphs.md, "In circuit-tracer's front end")."""

import base64
import functools
import importlib.util
import json
import os
import re
import select
import shutil
import subprocess
import threading
import time
import urllib.request
from importlib.resources import files

import numpy as np
import pytest
from conftest import PROMPT, austen_split

import gwb
from circuit_tracer.frontend.graph_models import Model
from circuit_tracer.frontend.local_server import CircuitGraphHandler, ReusableTCPServer, Server
from circuit_tracer.frontend.utils import add_graph_metadata

HERE = os.path.dirname(os.path.abspath(__file__))
FRONTEND = files("circuit_tracer") / "frontend/assets"
WIDTH, HEIGHT = 1280, 800
KINDS = ["grassmann", "transformer"]
SCREENSHOTS = os.environ.get("GWB_SCREENSHOT_DIR")
DAGRE = "/usr/lib/python3/dist-packages/xstatic/pkg/dagre/data/dagre.min.js"  # python3-xstatic-dagre
PAKO = "/usr/share/nodejs/pako/dist/pako.min.js"  # node-pako
GLYPHS = {"embedding": "■", "logit": "■", "mlp reconstruction error": "◆", "cross layer transcoder": "●"}
# Chromium as a test browser: no sandbox (root), no GPU, nothing of its own on the network.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
         "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
         "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
         "--disable-domain-reliability", "--no-pings", "--mute-audio", "--remote-debugging-pipe",
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--no-proxy-server",
         f"--window-size={WIDTH},{HEIGHT}"]


def chromium():
    return shutil.which("chromium")


def libraries():
    """What the browser gets for each script index.html loads from another host, by file name."""
    spec = importlib.util.find_spec("d3_bridge")
    assert spec is not None, "django-d3-bridge (python/pins.txt) is not installed: no d3 v7 to serve"
    d3 = os.path.join(spec.submodule_search_locations[0], "static", "d3_bridge", "js", "d3.v7.min.js")
    with open(d3, "rb") as f:
        d3_js = f.read()
    assert d3_js.startswith(b"// https://d3js.org v7."), d3_js[:60]
    with open(os.path.join(HERE, "circuit_tracer_jetpack.js"), "rb") as f:
        jetpack = f.read()
    with open(DAGRE, "rb") as f:
        dagre = f.read()
    with open(PAKO, "rb") as f:
        pako = f.read()
    npy = b"// .npy feature files are not served in gwb's test\nwindow.npyjs = {parse() { throw Error('npy') }}\n"
    return {"d3.js": d3_js, "jetpack_2024-07-20.js": jetpack, "npy_v0.js": npy, "hotserver-client-ws.js": b"",
            "dagre.min.js": dagre, "pako.min.js": pako}


class DevTools:
    """Chromium driven through its DevTools protocol over --remote-debugging-pipe: commands go in on
    its file descriptor 3 and replies and events come out of 4, each a JSON text ended by a NUL."""

    def __init__(self, profile, log):
        self.log = log.name
        to_browser, self._to = os.pipe()
        self._from, from_browser = os.pipe()
        # bash places the two pipes at 3 and 4 (dash takes single-digit descriptors only).
        script = f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-'
        self.proc = subprocess.Popen(["bash", "-c", script, chromium(), *FLAGS, f"--user-data-dir={profile}",
                                      "about:blank"], pass_fds=(to_browser, from_browser),
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next = 0
        self._replies = {}
        self.events = []
        self.on_event = None

    def send(self, method, params=None, session=None):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to, json.dumps(message).encode() + b"\0")
        return self._next

    def _pump(self, deadline):
        """Reads what the browser has written, up to the deadline; hands each event to on_event."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the browser did not answer in time")
            ready, _, _ = select.select([self._from], [], [], left)
            if ready:
                chunk = os.read(self._from, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"the browser closed its pipe (exit status {self.proc.poll()}; {self.log})")
                self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        message = json.loads(text)
        if "id" in message:
            self._replies[message["id"]] = message
        else:
            self.events.append(message)
            if self.on_event:
                self.on_event(message)

    def call(self, method, params=None, session=None, timeout=60):
        sent = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while sent not in self._replies:
            self._pump(deadline)
        reply = self._replies.pop(sent)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def wait_for(self, method, session, timeout=60):
        """The first event `method` of the tab `session` not waited for yet."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event["method"] == method and event.get("sessionId") == session:
                    self.events.remove(event)
                    return event
            seen = len(self.events)
            self._pump(deadline)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("Browser.close")
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        os.close(self._to)
        os.close(self._from)


# Counts the page's uncaught errors (window.__errors), from before its first script runs.
CATCH_ERRORS = """window.__errors = 0
addEventListener('error', () => window.__errors++)
addEventListener('unhandledrejection', () => window.__errors++)"""

# What the page shows, read once the front end has drawn the link graph (polled for in the page, to a
# deadline or a script's error: initCg is asynchronous and draws the whole graph in one task once the
# JSON is in).
READ_PAGE = """new Promise(resolve => {
  const deadline = performance.now() + %d
  const texts = selector => [...document.querySelectorAll(selector)].map(e => e.textContent)
  function read(drawn) {
    return {
      drawn,
      title: document.title,
      nodes: texts('.link-graph text.node'),
      tokens: texts('.link-graph g.prompt-token text'),
      logits: texts('.link-graph g.axis:not(.y) > g > g > text'),
      layers: texts('.link-graph g.y.axis text').filter(t => t),
      clicked: document.querySelector('.node-connections .feature-title')?.textContent,
      inputs: [...document.querySelectorAll('.node-connections .features.input .feature-row')]
        .map(row => [row.querySelector('.label').textContent, row.querySelector('.weight').textContent]),
      pinned: texts('.subgraph .supernode-container .node-text-container'),
    }
  }
  function poll() {
    if (document.querySelectorAll('.link-graph text.node').length)
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(read(true))))
    else if (window.__errors || performance.now() > deadline) resolve(read(false))
    else setTimeout(poll, 25)
  }
  poll()
})"""


def random_transcoders(model, out, d_sae=64):
    """A ReLU transcoder set in SAELens's layout with random weights, biased so that some features
    fire and reach the logits (the page, not the features, is under test; training costs minutes)."""
    from safetensors.numpy import save_file
    rng = np.random.default_rng(0)
    d = model.config["d_model"]
    for layer in range(model.config["n_layers"]):
        folder = out / f"ffn.{layer}"
        folder.mkdir(parents=True)
        save_file({"W_enc": (rng.standard_normal((d, d_sae)) / np.sqrt(d)).astype(np.float32),
                   "b_enc": np.full(d_sae, -1.0, np.float32),
                   "W_dec": (0.3 * rng.standard_normal((d_sae, d))).astype(np.float32),
                   "b_dec": np.zeros(d, np.float32)}, str(folder / "sae_weights.safetensors"))
        (folder / "cfg.json").write_text(json.dumps({
            "architecture": "transcoder", "d_in": d, "d_sae": d_sae, "d_out": d, "dtype": "float32",
            "apply_b_dec_to_input": False, "normalize_activations": "none",
            "metadata": {"hook_name": f"ffn_in.{layer}", "hook_name_out": f"ffn.{layer}",
                         "model_name": model.config["name"]}}))
    return gwb.features.load_transcoders(out, model)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """data/: both bundled models' graph JSON ({kind}.json, slug = kind), saved as the window's
    Graph view saves it, with the top logit clicked and pinned beside its four strongest inputs, and
    the graph-metadata.json circuit-tracer's add_graph_metadata writes for them; returns (data
    folder, {kind: JSON})."""
    data = tmp_path_factory.mktemp("ct-data")
    docs = {}
    for kind in KINDS:
        model = gwb.bundled(kind, device="cpu")
        tc_dir = tmp_path_factory.mktemp(f"tc-{kind}")
        if SCREENSHOTS:  # docs/workflows/attribution-graphs.md's small set, trained on Emma
            corpus = austen_split(tmp_path_factory, f"emma-{kind}", 40_000, 36_000)
            tc = gwb.features.train_transcoders(model, [corpus[0]], tc_dir / "set", d_sae=128, k=8, tokens=10_000,
                                                device="cpu", progress=False)
            g = gwb.graph(model, PROMPT, tc, slug=kind, progress=False)
        else:
            tc = random_transcoders(model, tc_dir / "set")
            g = gwb.graph(model, PROMPT, tc, max_features=96, slug=kind, progress=False)
        assert g.counts["features"] > 0
        top = max((n for n in g.json["nodes"] if n["feature_type"] == "logit"), key=lambda n: n["token_prob"])
        inputs = sorted((link for link in g.json["links"] if link["target"] == top["node_id"]),
                        key=lambda link: -abs(link["weight"]))
        g.save(data / f"{kind}.json", pinned=[top["node_id"]] + [link["source"] for link in inputs[:4]],
               clicked=top["node_id"])
        docs[kind] = json.loads((data / f"{kind}.json").read_text())
        assert docs[kind]["metadata"]["slug"] == kind
        add_graph_metadata(Model.model_validate(docs[kind]).metadata.model_dump(), str(data))
    return data, docs


@pytest.fixture(scope="module")
def server(graphs):
    """circuit-tracer's local server (its handler and Server, as frontend.local_server.serve makes
    them, bound to loopback on a free port), serving its bundled front end and the graphs."""
    data, _ = graphs
    handler = functools.partial(CircuitGraphHandler, frontend_dir=str(FRONTEND), data_dir=str(data))
    httpd = ReusableTCPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    running = Server(httpd, thread)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to loopback
        with opener.open(url + "/data/graph-metadata.json", timeout=30) as r:
            assert [g["slug"] for g in json.load(r)["graphs"]] == KINDS
        yield url
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not chromium():
        pytest.skip("no chromium: Debian's chromium package (scripts/setup installs it)")
    missing = [pkg for pkg, path in [("python3-xstatic-dagre", DAGRE), ("node-pako", PAKO)] if not os.path.exists(path)]
    if missing:
        pytest.skip(f"Debian's {' and '.join(missing)} (scripts/setup installs them)")
    tmp = tmp_path_factory.mktemp("chromium")
    with open(tmp / "chromium.log", "wb") as log:
        tools = DevTools(tmp / "profile", log)
        try:
            yield tools
        finally:
            tools.close()


def open_graph(tools, url, slug, screenshot=None):
    """Opens the graph page in a new tab and reads it (saving a screenshot to `screenshot` if given);
    returns (what the page shows, what the tab asked other hosts for and got, what it asked them for
    and did not get, its uncaught exceptions)."""
    scripts = libraries()
    with open(os.path.join(str(FRONTEND), "index.html"), encoding="utf-8") as f:
        remote = re.findall(r"<script src='(https?://[^']+)'>", f.read())
    assert sorted(os.path.basename(u) for u in remote) == sorted(scripts)  # circuit-tracer loads these, no more
    target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = tools.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    served, blocked, exceptions = [], [], []

    def on_event(event):
        if event.get("sessionId") != session:
            return
        params = event["params"]
        if event["method"] == "Fetch.requestPaused":
            request_url = params["request"]["url"]
            if request_url.startswith(url + "/"):  # circuit-tracer's server
                tools.send("Fetch.continueRequest", {"requestId": params["requestId"]}, session)
                return
            if request_url in remote:
                served.append(request_url)
                tools.send("Fetch.fulfillRequest", {
                    "requestId": params["requestId"], "responseCode": 200,
                    "responseHeaders": [{"name": "Content-Type", "value": "text/javascript"}],
                    "body": base64.b64encode(scripts[os.path.basename(request_url)]).decode()}, session)
            else:
                blocked.append(request_url)
                tools.send("Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
                           session)
        elif event["method"] == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            exceptions.append(details.get("exception", {}).get("description") or details.get("text"))

    tools.on_event = on_event
    try:
        tools.call("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session)
        tools.call("Runtime.enable", {}, session)
        tools.call("Page.enable", {}, session)
        tools.call("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1,
                                                          "mobile": False}, session)
        tools.call("Page.addScriptToEvaluateOnNewDocument", {"source": CATCH_ERRORS}, session)
        navigated = tools.call("Page.navigate", {"url": f"{url}/index.html?slug={slug}"}, session)
        assert "errorText" not in navigated, navigated
        tools.wait_for("Page.loadEventFired", session)
        shown = tools.call("Runtime.evaluate", {"expression": READ_PAGE % 60_000, "awaitPromise": True,
                                                "returnByValue": True}, session, timeout=90)
        assert "exceptionDetails" not in shown, shown["exceptionDetails"]
        if screenshot:
            png = tools.call("Page.captureScreenshot", {"format": "png"}, session)["data"]
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(png))
    finally:
        tools.on_event = None
        tools.call("Target.closeTarget", {"targetId": target})
    return shown["result"]["value"], served, blocked, exceptions


def shown_by_front_end(doc):
    """The nodes circuit-tracer's front end draws (formatData): with the listing's node_threshold as
    its pruning threshold, tokens, logits, pinned nodes and every node whose influence is at most
    the threshold."""
    threshold = doc["metadata"]["node_threshold"]
    return [n for n in doc["nodes"] if n["feature_type"] in ("embedding", "logit") or n["influence"] <= threshold
            or n["node_id"] in doc["qParams"]["pinnedIds"]]


def logit_token(node):
    """A logit's token as the front end reads it from the clerp, Output "token" (p=...): up to the
    first double quote (a token holding one is cut there)."""
    return node["clerp"].split('"')[1]


def label(node, tokens):
    """A node's name in the front end's lists: its clerp, or for a token or an error what it makes."""
    if node["feature_type"] == "embedding":
        return f'Emb: “{tokens[node["ctx_idx"]]}"'
    if node["feature_type"] == "mlp reconstruction error":
        return f'Err: mlp “{tokens[node["ctx_idx"]]}"'
    return node["clerp"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_front_end_draws_the_graphs_nodes(kind, browser, graphs, server):
    """The page of a gwb graph in circuit-tracer's front end: one glyph of its kind for every node
    it keeps; the prompt's tokens and the logits' tokens label the axes; the clicked top logit's
    inputs listed with their weights; the pinned nodes in the subgraph; no script fails and nothing
    but the six scripts is asked of another host."""
    _, docs = graphs
    doc = docs[kind]
    tokens = doc["metadata"]["prompt_tokens"]
    screenshot = None
    if SCREENSHOTS:
        os.makedirs(SCREENSHOTS, exist_ok=True)
        screenshot = os.path.join(SCREENSHOTS, f"screenshot-circuit-tracer-{kind}.png")
    shown, served, blocked, exceptions = open_graph(browser, server, kind, screenshot)
    kept = shown_by_front_end(doc)
    print(f"{kind}: {len(doc['nodes'])} nodes in the JSON, {len(kept)} kept by the front end, "
          f"{len(shown['nodes'])} drawn; {len(shown['tokens'])} token and {len(shown['logits'])} logit labels; "
          f"{len(shown['inputs'])} inputs of the clicked logit listed, {len(shown['pinned'])} pinned nodes shown")
    assert shown["drawn"], f"the front end drew no graph: exceptions {exceptions}, blocked {blocked}"
    assert exceptions == [] and blocked == [] and len(set(served)) == len(served)
    assert shown["title"] == "Attribution Graph: " + doc["metadata"]["prompt"]
    # One glyph a kept node, of its kind: ■ tokens and logits, ◆ errors, ● features, each present.
    assert len(shown["nodes"]) == len(kept) > 0
    assert sorted(shown["nodes"]) == sorted(GLYPHS[n["feature_type"]] for n in kept)
    assert {n["feature_type"] for n in kept} == set(GLYPHS)
    # Rows: the tokens, a block each up to the last with a node, the logits; every other one named.
    rows = max(int(n["layer"]) for n in kept if n["feature_type"] not in ("embedding", "logit")) + 3
    assert shown["layers"] == [("Lgt" if i == rows - 1 else "Emb" if i == 0 else f"L{i - 1}")
                               for i in range(0, rows, 2)]
    # Under the graph every prompt token that has a node, in order; above it the logits' tokens.
    embedded = sorted({n["ctx_idx"] for n in kept if n["feature_type"] == "embedding"})
    assert shown["tokens"] == [tokens[i] for i in embedded]
    logits = [n for n in kept if n["feature_type"] == "logit"]
    assert sorted(shown["logits"]) == sorted(logit_token(n) for n in logits)
    # The clicked node (qParams' clickedId) is the top logit; its inputs are listed, each with the
    # weight of its edge (d3's "+.3f", with a minus sign).
    top = max(logits, key=lambda n: n["token_prob"])
    assert doc["qParams"]["clickedId"] == top["node_id"] and shown["clicked"] == top["clerp"]
    by_id = {n["node_id"]: n for n in kept}
    inputs = [[label(by_id[link["source"]], tokens), f"{link['weight']:+.3f}".replace("-", "−")]
              for link in doc["links"] if link["target"] == top["node_id"] and link["source"] in by_id]
    assert sorted(shown["inputs"]) == sorted(inputs) and len(inputs) > 0
    # The pinned nodes (qParams' pinnedIds) in the subgraph, named.
    pinned = [label(by_id[i], tokens) for i in doc["qParams"]["pinnedIds"]]
    assert sorted(shown["pinned"]) == sorted(pinned) and len(pinned) == 5
