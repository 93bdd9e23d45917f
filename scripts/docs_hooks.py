"""mkdocs hooks (mkdocs.yml `hooks:`): the checks mkdocs 1.4 does not make itself, reported as
warnings so that `mkdocs build --strict` (scripts/docs) fails on them:

- a link to a heading that does not exist (mkdocs 1.4 checks the page, not the #anchor);
- a page under docs/ that the nav leaves out (mkdocs 1.4 only says so at INFO level);
- a page over MAX_LINES lines (pages are read in one sitting; split a longer one);
- in README.md (not a page of the site, but the way in): a link to a file or a heading of the site
  that does not exist.

mkdocs itself already warns on a link or an image to a file that does not exist."""

import logging
import os
import posixpath
import re
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

log = logging.getLogger("mkdocs.hooks.gwb")

MAX_LINES = 400
# Pages that scripts/bench writes (records of its runs, with their tables) are not held to the limit.
LONG_PAGES_ALLOWED = re.compile(r"^performance[-a-z]*\.md$")

_ids = {}    # page url -> the ids its HTML defines
_links = {}  # page url -> (href, page source path) of every relative link


class _Scan(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.hrefs = set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])


def on_config(config):
    # Warnings only on the terminal (mkdocs build --quiet would hide them too, though it counts them).
    logging.getLogger("mkdocs").setLevel(logging.WARNING)
    return config


def on_nav(nav, config, files):
    in_nav = {page.file.src_path for page in nav.pages}
    for f in files.documentation_pages():
        if f.src_path not in in_nav:
            log.warning(f"docs/{f.src_path} is not in mkdocs.yml's nav: add it there (or delete the page)")
    return nav


def on_page_markdown(markdown, page, config, files):
    lines = markdown.count("\n") + 1
    if lines > MAX_LINES and not LONG_PAGES_ALLOWED.match(page.file.src_path):
        log.warning(f"docs/{page.file.src_path} has {lines} lines (at most {MAX_LINES}): split it into pages")
    return markdown


def on_page_content(html, page, config, files):
    scan = _Scan()
    scan.feed(html)
    _ids[page.url] = scan.ids
    _links[page.url] = [(h, page.file.src_path) for h in scan.hrefs]
    return html


def on_post_build(config):
    _check_readme(config)
    for url, links in _links.items():
        for href, src in links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or not parts.fragment:
                continue
            target = url if not parts.path else posixpath.normpath(
                posixpath.join(posixpath.dirname(url), unquote(parts.path)))
            if target not in _ids:
                continue  # not a page (an image, a download); mkdocs checks that the file exists
            if unquote(parts.fragment) not in _ids[target]:
                log.warning(f"docs/{src}: the link '{href}' names a heading '#{parts.fragment}' that "
                            f"{'this page' if target == url else target} does not have")


def _check_readme(config):
    root = os.path.dirname(config["config_file_path"])
    docs = os.path.relpath(config["docs_dir"], root)
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue
        path = unquote(parts.path)
        if not os.path.exists(os.path.join(root, path)):
            log.warning(f"README.md: the link '{target}' names a file that does not exist")
            continue
        rel = posixpath.relpath(posixpath.normpath(path), docs)
        if parts.fragment and rel.endswith(".md") and not rel.startswith(".."):
            url = rel[:-3] + ".html"
            if url in _ids and unquote(parts.fragment) not in _ids[url]:
                log.warning(f"README.md: the link '{target}' names a heading that docs/{rel} does not have")
