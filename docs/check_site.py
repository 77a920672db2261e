"""Check the built documentation site as a reader sees it: ``python docs/check_site.py [SITE] [--browser]``.

Without ``--browser`` it reads the HTML files of SITE (default ``build/site``) as the build wrote them; with it,
every page is also loaded in headless Chromium (Debian's ``chromium``) from a local HTTP server, and its DOM is read
after the scripts have run. A page fails when

* a raw Sphinx role (``:func:``, ``:class:`` ...) shows in its text;
* docstring markup the API pages did not render shows: a cross-reference left as ``<autoref ...>`` text, an RST
  literal in double backquotes, or an RST literal-block marker (a paragraph ending in ``::``);
* a docstring table (Parameters, Returns ...) is broken: a row without a description, or a Type cell that reads as
  prose (a description parsed as a type: a sentence, or a continuation line of the entry above);
* a default shows a constant's name (``seed=SEED_DEFAULT``) instead of its value, in a signature or a table;
* it loads a script with an empty ``src`` or anything (script, stylesheet, font) from another host: the site must
  work offline;
* an image it shows is missing from the site, or has no description (alt text);
* a notebook cell printed a warning (``...Warning`` in its stderr output);
* a notebook page has no download link to a notebook file that is in the site, or an exercise (its statement or its
  solution) that is not rendered as a block, or a code cell that draws (``varsim.notebooks.drawing_cells``) without
  an image among its outputs (a backend switched to Agg while the page's notebook ran left every figure out);
* (browser) a formula is left untypeset: a math span with no KaTeX output in it, a KaTeX error, or ``$``, ``\\(``,
  ``\\[`` math delimiters still in the visible text;
* a page of the site is missing from the navigation, or the navigation links to a page the site does not have;
* the API index (``api/index.html``) does not link every object an API page documents.

``--shots DIR`` also saves screenshots (1280 px wide) of the home page, a theory page, a notebook and an API page.
Exit status 1 with one line per problem, 0 with a one-line summary.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|ref|math|doc|term):`?")
# math delimiters that KaTeX leaves in the text only when it did not typeset the formula
LEFT_MATH = re.compile(r"\$\$|\\\(|\\\[|(?<![\w$])\$(?=[^\s$])[^$\n]{1,200}?(?<=\S)\$(?![\w$])")
NON_TEXT = ("script", "style", "pre", "code", "noscript", "textarea", "svg")
LEAKED_AUTOREF = re.compile(r"<autoref\b[^>]{0,200}")
RST_LITERAL = re.compile(r"``[^`\n]{0,60}``?")
# "is::", "):" + ":" at the end of a line or before a space: the marker of an RST literal block
RST_BLOCK_MARKER = re.compile(r"(?<=[^\s:])::(?=\s|$)")
#: a default that names a module constant (UPPER_CASE) instead of showing its value
CONSTANT_NAME = re.compile(r"_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|_?[A-Z]{3,}[A-Z0-9]*")
SIGNATURE_CONSTANT = re.compile(r"=\s*(" + CONSTANT_NAME.pattern + r")\b(?![.(\[])")
#: a Type cell longer than this many words is a description parsed as a type
TYPE_MAX_WORDS = 8
#: screenshot name -> (page, window height in px): the API page tall enough to show simulate's Parameters table
SHOTS = {"home": ("", 1600), "theory": ("theory/identity/", 1600),
         "notebook": ("notebooks/01_variance_vanishes/", 2400), "api": ("api/sim/", 6000)}
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                  "--hide-scrollbars", "--virtual-time-budget=20000"]


def visible_text(soup: BeautifulSoup, skip_math: bool = False) -> str:
    """The text a reader sees, without code, scripts and (with ``skip_math``) typeset formulas."""
    soup = BeautifulSoup(str(soup), "html.parser")
    for tag in soup.find_all(NON_TEXT):
        tag.decompose()
    if skip_math:
        for tag in soup.select(".katex, .katex-display, .katex-mathml"):
            tag.decompose()
    return soup.get_text(" ")


def without_code_blocks(soup: BeautifulSoup) -> str:
    """The page's text with inline code but without code blocks (``<pre>``), scripts and styles."""
    soup = BeautifulSoup(str(soup), "html.parser")
    for tag in soup.find_all(("script", "style", "pre", "noscript", "textarea", "svg")):
        tag.decompose()
    return soup.get_text(" ")


def _cell(cell) -> str:
    return " ".join(cell.get_text(" ").split())


def table_problems(main, page: str) -> list[str]:
    """Broken rows of the docstring tables (mkdocstrings' ``doc-section-item`` rows) and defaults shown by name."""
    problems = []
    for table in main.find_all("table"):
        rows = table.select("tr.doc-section-item")
        if not rows:
            continue
        header = [_cell(th) for th in table.select("thead th")]
        title = table.find_previous(class_="doc-section-title")
        section = _cell(title).rstrip(":") if title else "table"
        for row in rows:
            cells = dict(zip(header, (_cell(td) for td in row.find_all("td", recursive=False))))
            what = cells.get("Name") or cells.get("Type") or "?"
            where = f"{page}: {section} row {what[:50]!r}"
            if "Description" in cells and not cells["Description"]:
                problems.append(f"{where} has no description (a broken table row)")
            kind = cells.get("Type", "")
            if kind and (kind[-1] in ".,;" or len(kind.split()) > TYPE_MAX_WORDS):
                problems.append(f"{where}: the Type column reads as prose (a description parsed as a type)")
            if CONSTANT_NAME.fullmatch(cells.get("Default", "")):
                problems.append(f"{where}: the default shows a constant's name, not its value")
    for signature in main.select(".doc-signature"):
        for match in SIGNATURE_CONSTANT.finditer(signature.get_text()):
            problems.append(f"{page}: a signature shows a constant's name as a default: {match.group(0)!r}")
    return problems


def markup_problems(main, page: str, text: str) -> list[str]:
    """Docstring markup left unrendered: autoref tags and RST literals (in any text but code blocks) and RST
    literal-block markers (in the prose)."""
    problems = []
    with_code = without_code_blocks(main)
    for match in LEAKED_AUTOREF.finditer(with_code):
        problems.append(f"{page}: a cross-reference left as markup: {match.group(0)[:80]!r}")
    for match in RST_LITERAL.finditer(with_code):
        problems.append(f"{page}: an RST literal in double backquotes: {match.group(0)!r}")
    for match in RST_BLOCK_MARKER.finditer(text):
        problems.append(f"{page}: an RST literal-block marker '::': {text[max(0, match.start() - 40):match.end()]!r}")
    return problems


def notebook_problems(main, page: str, site: Path) -> list[str]:
    """A notebook page's own problems: no link to its files (or one to a file the site lacks), an exercise or a
    solution outside the exercise blocks the docs hooks make."""
    problems = []
    links = [a["href"] for a in main.select(".varsim-notebook-download a[href]")]
    if not any(href.endswith(".ipynb") for href in links):
        problems.append(f"{page}: no download link to the notebook file")
    for href in links:
        target = site / posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(href)))
        if not target.is_file():
            problems.append(f"{page}: download link {href} is not in the site")
    for strong in main.find_all("strong"):
        if strong.get_text().startswith("Exercise ") and not strong.find_parent(class_="varsim-exercise"):
            problems.append(f"{page}: exercise not rendered as a block: {strong.get_text()[:40]!r}")
    for details in main.find_all("details"):
        if not details.find_parent(class_="varsim-exercise"):
            problems.append(f"{page}: a solution outside its exercise block: {details.get_text()[:40]!r}")
    return problems + figure_problems(main, page)


def figure_problems(main, page: str) -> list[str]:
    """Each code cell of a notebook page that draws a figure (:func:`varsim.notebooks.drawing_cells` of the cells'
    sources, in order) shows at least one image among its outputs."""
    from varsim.notebooks import drawing_cells

    # nbconvert's markup nests a cell's div in one of the same classes: the outermost is the cell
    cells = [c for c in main.select("div.jp-CodeCell") if c.find_parent(class_="jp-CodeCell") is None]
    sources = [c.select_one(".jp-InputArea pre").get_text() if c.select_one(".jp-InputArea pre") else ""
               for c in cells]
    problems = []
    for i, (cell, source, draws) in enumerate(zip(cells, sources, drawing_cells(sources))):
        if draws and not cell.select(".jp-OutputArea img"):
            first = source.strip().splitlines()[0] if source.strip() else ""
            problems.append(f"{page}: code cell {i} draws a figure but shows no image ({first[:50]!r})")
    return problems


def page_problems(html: str, page: str, site: Path, rendered: bool) -> list[str]:
    """Problems of one page (``page``: its path in the site); ``rendered``: the DOM after the scripts ran."""
    soup = BeautifulSoup(html, "html.parser")
    main = soup.select_one("article") or soup.body or soup
    problems = []
    text = visible_text(main, skip_math=rendered)
    for match in ROLE.finditer(text):
        problems.append(f"{page}: raw Sphinx role {text[match.start():match.end() + 30]!r}")
    problems += markup_problems(main, page, text)
    problems += table_problems(main, page)
    for tag in soup.find_all(["script", "img", "link", "iframe"]):
        url = tag.get("src") if tag.name != "link" else tag.get("href")
        if tag.name == "script" and tag.has_attr("src") and not url.strip():
            problems.append(f"{page}: a <script> with an empty src")
        if url is None or tag.name == "link" and "stylesheet" not in (tag.get("rel") or []):
            continue
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") or url.startswith("//"):
            problems.append(f"{page}: loads {url} from another host (the site must work offline)")
        elif tag.name == "img" and not parts.scheme and parts.path:
            target = site / posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(parts.path)))
            if not target.is_file():
                problems.append(f"{page}: image {url} is not in the site")
    for img in main.find_all("img"):
        if not img.get("alt", "").strip() or img["alt"].startswith("No description has been provided"):
            problems.append(f"{page}: an image without a description (alt text): {img.get('src', '')[:60]!r}")
    for output in main.select('[data-mime-type="application/vnd.jupyter.stderr"]'):
        if warning := re.search(r"\b\w*Warning\b.*", output.get_text()):
            problems.append(f"{page}: a notebook cell warned: {warning.group(0)[:120]!r}")
    if main.select_one(".jupyter-wrapper") is not None:
        problems += notebook_problems(main, page, site)
    for match in re.finditer(r"@font-face[^}]*?url\((['\"]?)(https?:)?//", html):
        problems.append(f"{page}: a web font from another host")
        break
    if rendered:
        for span in main.select(".arithmatex"):
            if not span.select(".katex"):
                problems.append(f"{page}: formula not typeset: {span.get_text()[:60]!r}")
        for error in main.select(".katex-error"):
            problems.append(f"{page}: KaTeX could not typeset {error.get('title', error.get_text())[:80]!r}")
        for match in LEFT_MATH.finditer(text):
            problems.append(f"{page}: math left as text: {text[max(0, match.start() - 20):match.end() + 20]!r}")
    return problems


def pages(site: Path) -> list[str]:
    """Every page of the site: the index.html files, as paths relative to ``site`` (404 page excluded)."""
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html")
                  if p.relative_to(site).parts[0] not in ("assets", "404"))


def nav_problems(site: Path) -> list[str]:
    """Pages missing from the navigation of the home page, and navigation links to pages that do not exist."""
    soup = BeautifulSoup((site / "index.html").read_text(encoding="utf-8"), "html.parser")
    nav = soup.select_one("nav.md-nav--primary")
    if nav is None:
        return ["index.html: no navigation (nav.md-nav--primary)"]
    linked = set()
    for a in nav.find_all("a", href=True):
        parts = urlsplit(a["href"])
        if parts.scheme or parts.netloc or not parts.path:
            continue
        path = posixpath.normpath(parts.path)
        linked.add("index.html" if path == "." else (path.rstrip("/") + "/index.html" if not path.endswith(".html")
                                                     else path))
    built = set(pages(site))
    return ([f"{p}: not in the navigation" for p in sorted(built - linked)]
            + [f"navigation links to {p}, which the site does not have" for p in sorted(linked - built)])


def api_index_problems(site: Path) -> list[str]:
    """Objects an API page documents (its mkdocstrings headings at the shallowest level: functions, classes,
    constants) that the API index ``api/index.html`` does not link to; nothing when the site has no API pages."""
    api_pages = [p for p in pages(site) if p.startswith("api/") and p != "api/index.html"]
    if not api_pages:
        return []
    index = site / "api" / "index.html"
    if not index.is_file():
        return ["api/index.html: the site has API pages but no API index"]
    soup = BeautifulSoup(index.read_text(encoding="utf-8"), "html.parser")
    linked = set()
    for a in (soup.select_one("article") or soup).find_all("a", href=True):
        parts = urlsplit(a["href"])
        if not parts.scheme and parts.fragment:
            target = posixpath.normpath(posixpath.join("api", parts.path or "."))
            linked.add((target.rstrip("/") + "/index.html", unquote(parts.fragment)))
    problems = []
    for page in api_pages:
        soup = BeautifulSoup((site / page).read_text(encoding="utf-8"), "html.parser")
        headings = soup.select(".doc-heading[id]")
        top = min((int(h.name[1]) for h in headings), default=0)
        for heading in (h for h in headings if h.name == f"h{top}"):
            if (page, heading["id"]) not in linked:
                problems.append(f"api/index.html: no link to {heading['id']} (documented in {page})")
    return problems


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Server:
    """The site on a local HTTP server (127.0.0.1, a free port), for the browser."""

    def __init__(self, site: Path):
        handler = functools.partial(_QuietHandler, directory=str(site))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _browser(args: list[str], profile: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=timeout)


def rendered_dom(url: str, profile: str) -> str:
    """The page's DOM after its scripts ran (headless Chromium's --dump-dom)."""
    out = _browser(["--dump-dom", url], profile)
    if out.returncode != 0 or "<html" not in out.stdout:
        raise RuntimeError(f"chromium could not load {url}: {out.stderr.strip()[-300:]}")
    return out.stdout


def screenshot(url: str, path: Path, profile: str, height: int = 1600) -> None:
    out = _browser([f"--screenshot={path}", f"--window-size=1280,{height}", url], profile)
    if out.returncode != 0 or not path.is_file():
        raise RuntimeError(f"chromium could not screenshot {url}: {out.stderr.strip()[-300:]}")


def check(site: Path, browser: bool = False, shots: Path | None = None) -> tuple[list[str], int]:
    """(problems, pages checked) for the built site ``site``."""
    if not (site / "index.html").is_file():
        return [f"{site}: no built site (index.html missing); run mkdocs build first"], 0
    problems = nav_problems(site) + api_index_problems(site)
    all_pages = pages(site)
    for page in all_pages:
        problems += page_problems((site / page).read_text(encoding="utf-8"), page, site, rendered=False)
    if browser or shots:
        if chromium() is None:
            return problems + ["chromium is not installed (apt-get install chromium)"], len(all_pages)
        with _Server(site) as server, tempfile.TemporaryDirectory() as profile:
            if browser:
                for page in all_pages:
                    url = server.url + page.removesuffix("index.html")
                    problems += page_problems(rendered_dom(url, profile), page, site, rendered=True)
            if shots:
                shots.mkdir(parents=True, exist_ok=True)
                for name, (path, height) in SHOTS.items():
                    screenshot(server.url + path, shots / f"{name}.png", profile, height)
    return problems, len(all_pages)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", default="build/site", type=Path)
    parser.add_argument("--browser", action="store_true", help="also load every page in headless Chromium")
    parser.add_argument("--shots", type=Path, help="save screenshots of four pages into this directory")
    args = parser.parse_args(argv)
    problems, n = check(args.site, browser=args.browser, shots=args.shots)
    for problem in problems:
        print(problem, file=sys.stderr)
    how = "in headless Chromium" if args.browser else "as built (HTML)"
    print(f"check_site: {n} pages checked {how}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
