#!/usr/bin/env python3
"""Loads every page of the built site (build/docs-site) in headless Chromium, at 1280 x 720, in one
browser run: each page must show its title, load every image, and fit the width (no sideways
scrolling of the page; wide tables and code scroll inside themselves). With --screenshots DIR it
also saves a 1280 x 720 screenshot of a few pages to look at.

Usage: scripts/docs browser [--screenshots DIR]   (after scripts/docs; needs Debian's chromium)
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SITE = os.path.join(ROOT, "build", "docs-site")
WIDTH, HEIGHT = 1280, 720
SHOWN = ["index.html", "window/patching.html", "workflows/causal-tests.html", "reference/python/gwb.html"]

HARNESS = """<!doctype html><html><body><script>
// Every page in an iframe of 1280 x 720 at once (one after the other stalls Chromium's virtual time).
const pages = %s, out = {};
let left = pages.length;
for (const url of pages) {
  const f = document.createElement("iframe");
  f.style.width = "%dpx"; f.style.height = "%dpx";
  f.onload = () => {
    let r;
    try {
      const d = f.contentDocument;
      const title = d.querySelector("article h1, .md-content h1");
      const broken = [...d.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute("src"));
      const width = d.documentElement.scrollWidth;
      const why = [];
      if (!title) why.push("no title");
      if (broken.length) why.push("images that do not load: " + broken.join(", "));
      if (width > %d + 1) why.push("the page is " + width + " px wide");
      r = {ok: why.length == 0, why: why.join("; ")};
    } catch (e) { r = {ok: false, why: String(e)}; }
    out[url] = r;
    if (--left == 0) {
      const pre = document.createElement("pre");
      pre.textContent = "RESULT" + JSON.stringify(out) + "RESULT";
      document.body.appendChild(pre);
    }
  };
  f.src = url;
  document.body.appendChild(f);
}
</script></body></html>
"""


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--screenshots", metavar="DIR", help="also save 1280 x 720 screenshots of a few pages here")
    a = ap.parse_args()
    browser = chromium()
    if not browser:
        print("docs_browser.py: no chromium (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    if not os.path.exists(os.path.join(SITE, "index.html")):
        print("docs_browser.py: build the site first (scripts/docs)", file=sys.stderr)
        return 2
    started = time.time()
    pages = sorted(os.path.relpath(p, SITE) for p in glob.glob(os.path.join(SITE, "**", "*.html"), recursive=True)
                   if not p.endswith("404.html"))
    urls = ["file://" + os.path.join(SITE, p) for p in pages]
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--allow-file-access-from-files",
             f"--window-size={WIDTH},{HEIGHT}"]
    with tempfile.TemporaryDirectory() as tmp:
        harness = os.path.join(tmp, "harness.html")
        with open(harness, "w", encoding="utf-8") as f:
            f.write(HARNESS % (json.dumps(urls), WIDTH, HEIGHT, WIDTH))
        r = subprocess.run([browser, *flags, f"--user-data-dir={tmp}/profile", "--virtual-time-budget=10000",
                            "--dump-dom", "file://" + harness], capture_output=True, text=True, timeout=600)
    m = re.search(r"RESULT(\{.*?\})RESULT", r.stdout, re.S)
    if not m:
        print("docs_browser.py: not every page loaded in the browser:\n" + r.stderr[-2000:], file=sys.stderr)
        return 1
    results = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                         .replace("&amp;", "&"))
    bad = [url for url, x in results.items() if not x["ok"]]
    for url in bad:
        print(f"docs_browser.py: {os.path.relpath(url[len('file://'):], SITE)}: {results[url]['why']}", file=sys.stderr)
    if a.screenshots:
        os.makedirs(a.screenshots, exist_ok=True)
        for page in SHOWN:
            out = os.path.join(os.path.abspath(a.screenshots), page.replace("/", "-").replace(".html", ".png"))
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run([browser, *flags, f"--user-data-dir={tmp}/profile", "--virtual-time-budget=3000",
                                f"--screenshot={out}",
                                "file://" + os.path.join(SITE, page)], capture_output=True, timeout=120)
            print(f"docs_browser.py: {out}")
    print(f"docs_browser.py: {len(results) - len(bad)} of {len(urls)} pages load whole at "
          f"{WIDTH} x {HEIGHT} in Chromium ({time.time() - started:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
