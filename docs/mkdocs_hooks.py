"""MkDocs hooks for the varsim site (see mkdocs.yml).

* the notebooks in ``varsim/notebooks/`` (shipped in the package for ``varsim demo``) become ``notebooks/<name>.py``
  pages (rendered and executed by mkdocs-jupyter); their pages lose the MathJax loader nbconvert writes (an empty
  ``src``: the site's own KaTeX typesets their math) and its ipywidgets loader (from a CDN; with no kernel behind a
  static page the sliders could not work, and the notebooks draw a static fallback), and their plots, which nbconvert
  describes as "No description has been provided", are named after the notebook and section that draws them;
* ``docs/THEORY.md`` and ``docs/PAPER.md`` become ``reference/THEORY.md`` and ``reference/PAPER.md``;
* the marker ``<!-- varsim-cli-reference -->`` in ``cli.md`` is replaced by every command's ``--help``, generated
  from the argparse parsers (``varsim.cli.build_parser``), so the page cannot drift from the code;
* ``<!-- varsim-include: PATH -->`` or ``<!-- varsim-include: PATH | HEADING -->`` is replaced by the file PATH of the
  repository (or its section under the Markdown heading line HEADING, without that line), its headings moved so the
  shallowest is ``##`` and its links rewritten for the site: so the results pages show the README's and the data
  directories' own text, never a copy of it;
* ``<!-- varsim-gallery -->`` is replaced by every figure of ``varsim.figures.FIGURES``, drawn at build time into
  ``build/gallery`` (``VARSIM_DOCS_FIGURES=reuse`` keeps the PNGs an earlier build drew there, for quick local
  rebuilds), each with its module's docstring as caption; the build log gets one line per figure with its seconds as
  it is drawn; independent figures are drawn in parallel processes, one per available core (``make(jobs=0)``);
* ``<!-- varsim-api-index -->`` (in ``api/index.md``) is replaced by a section per API page of the navigation, each
  a table of every object that page documents (its top-level entries, as mkdocstrings rendered them: so the index
  cannot list an object the pages lack, nor miss one they show) with the first sentence of its docstring;
* the version of the package and the commit the site is built from go in the header and footer, with a link to the
  repository when one is known (``VARSIM_REPO_URL``, else ``[project.urls]`` of pyproject.toml);
* every warning counts: those of loggers outside ``mkdocs.*`` and Python's ``warnings`` are logged again under
  ``mkdocs.hooks.varsim``, so that ``--strict`` fails on them too;
* the notebooks run with ``VARSIM_STATIC_PAGE=1``: they skip their sliders, which a static page cannot drive;
* ``docs/jupyter`` goes first on the Jupyter config path, so that the notebooks' execution has a time limit
  (``jupyter_nbconvert_config.json``: a cell still running after 600 s fails the build with its name; nbclient's
  default is to wait forever, which turned a hung kernel into a CI run killed at its time limit).
"""

from __future__ import annotations

import ast
import logging
import os
import posixpath
import re
import subprocess
import sys
import time
from html import escape as html_escape
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
CLI_MARKER = "<!-- varsim-cli-reference -->"
GALLERY_MARKER = "<!-- varsim-gallery -->"
API_INDEX_MARKER = "<!-- varsim-api-index -->"
API_TABLE = re.compile(r"<!-- varsim-api-table: (?P<page>\S+) -->")
API_INDEX_PAGE = "api/index.md"
#: the kind of an object's entry, from the class mkdocstrings gives its name
API_KINDS = {"doc-class-name": "class", "doc-function-name": "function", "doc-attribute-name": "constant",
             "doc-module-name": "module"}
API_SUMMARY_CHARS = 160
INCLUDE = re.compile(r"<!-- varsim-include: (?P<path>[^|>]+?)(?: \| (?P<heading>[^>]+?))? -->")
JUPYTER_CONFIG = ROOT / "docs" / "jupyter"
GALLERY_DIR = ROOT / "build" / "gallery"
REFERENCE = {"docs/THEORY.md": "reference/THEORY.md", "docs/PAPER.md": "reference/PAPER.md"}
#: repository files copied into the site as they are (images the included texts show)
REPO_FILES_PREFIX = "files/"
#: the site's own pages in the repository (mkdocs.yml's docs_dir): a link to one goes to that page
SITE_PREFIX = "docs/site/"
#: a teaching notebook in the repository (a page of the site, notebooks/<name>.py)
NOTEBOOK_PATH = re.compile(r"varsim/notebooks/[0-9][^/]*\.py")
IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg")
NOTEBOOK_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)
# nbconvert's loader of the ipywidgets renderer, fetched from a CDN; a static page has no kernel to drive the widgets
NOTEBOOK_WIDGET_LOADER = re.compile(r"<script>(?:(?!</script>).)*?widgetRendererSrc.*?</script>", re.S)
HEADING = re.compile(r"^(#{1,6}) ", re.M)
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
ROLE = re.compile(r":(?:py:)?[a-z]+:`~?([^`]+)`")

# filled by on_files: repository path of a wholly included file -> the page that includes it
_included_pages: dict[str, str] = {}
# filled by on_page_content: API page (src_uri) -> (its url, its rendered content), for the API index
_api_pages: dict[str, tuple[str, str]] = {}


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def repository_url() -> str | None:
    """The repository's web address: ``VARSIM_REPO_URL``, else a Repository/Source/Homepage entry of pyproject.toml."""
    url = os.environ.get("VARSIM_REPO_URL", "").strip()
    if url:
        return url.rstrip("/")
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return None
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("urls", {})
    for key in ("Repository", "Source", "Homepage"):
        if urls.get(key):
            return urls[key].rstrip("/")
    return None


class _ForwardWarnings(logging.Handler):
    """Re-log the warnings of loggers outside ``mkdocs.*`` (griffe, nbconvert, traitlets, Python's ``warnings``)
    under ``mkdocs.hooks.varsim``, so that ``mkdocs build --strict`` counts them and fails."""

    def __init__(self):
        super().__init__(logging.WARNING)

    def emit(self, record):
        if record.levelno < logging.WARNING or record.name.startswith("mkdocs"):
            return
        if record.msg == NBCONVERT_NO_ALT:  # on_post_page gives those plots their alt text
            return
        FORWARD_LOG.warning("%s: %s", record.name, record.getMessage())


FORWARD_LOG = logging.getLogger("mkdocs.hooks.varsim")
# nbconvert gives a cell's plot (which has no alt text) this placeholder, and warns with NBCONVERT_NO_ALT
NBCONVERT_ALT_PLACEHOLDER = 'alt="No description has been provided for this image"'
NBCONVERT_NO_ALT = "Alternative text is missing on %s image(s)."
HEADING_OR_PLACEHOLDER = re.compile(r"<h[1-4][^>]*>(?P<heading>.*?)</h[1-4]>|" + re.escape(NBCONVERT_ALT_PLACEHOLDER),
                                    re.S)


def count_every_warning() -> None:
    logging.captureWarnings(True)
    root = logging.getLogger()
    if not any(isinstance(h, _ForwardWarnings) for h in root.handlers):
        root.addHandler(_ForwardWarnings())


def on_config(config):
    count_every_warning()
    # read by the NbConvertApp that mkdocs-jupyter makes for each notebook; JUPYTER_CONFIG_PATH entries take
    # precedence over the user's own config dirs
    old = os.environ.get("JUPYTER_CONFIG_PATH")
    os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join([str(JUPYTER_CONFIG)] + ([old] if old else []))
    # the notebooks' kernels inherit it: a static page has no kernel to drive sliders, so the notebooks draw their
    # static fallback only (widget comms in a kernel are also what a hung execution of notebook 1 was waiting in)
    os.environ["VARSIM_STATIC_PAGE"] = "1"

    from varsim import __version__

    commit = _git("rev-parse", "--short=10", "HEAD")
    dirty = commit is not None and bool(_git("status", "--porcelain", "--untracked-files=no"))
    built_from = f"commit {commit}{' + uncommitted changes' if dirty else ''}" if commit else "an unversioned tree"
    config.site_name = f"varsim {__version__}"
    # the distribution (varsim-attention) is not on PyPI: install it from a clone (README, Getting started)
    config.copyright = f"varsim {__version__} (distribution varsim-attention), built from {built_from}"
    url = repository_url()
    if url and not config.repo_url:
        config.repo_url = url
        config.repo_name = "source"
    return config


@event_priority(100)  # before mkdocs-jupyter turns the notebooks/*.py files into notebook pages
def on_files(files, config):
    # real files under the package directory (src_uri notebooks/<name>.py): mkdocs-jupyter needs a src_dir
    for path in sorted((ROOT / "varsim" / "notebooks").glob("[0-9]*.py")):
        files.append(File(f"notebooks/{path.name}", src_dir=str(ROOT / "varsim"), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    for source, uri in REFERENCE.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / source)))
    for path in sorted((ROOT / "docs").glob("*")):
        if path.suffix in IMAGE_SUFFIXES:
            rel = path.relative_to(ROOT).as_posix()
            files.append(File.generated(config, REPO_FILES_PREFIX + rel, abs_src_path=str(path)))
    _included_pages.clear()
    _api_pages.clear()
    _included_pages.update(REFERENCE)
    for file in files.documentation_pages():
        if file.abs_src_path and Path(file.abs_src_path).suffix == ".md":
            for match in INCLUDE.finditer(Path(file.abs_src_path).read_text(encoding="utf-8")):
                if whole_file_include(match["path"].strip(), match["heading"]):
                    _included_pages[match["path"].strip()] = file.src_uri
    if any(GALLERY_MARKER in Path(f.abs_src_path).read_text(encoding="utf-8")
           for f in files.documentation_pages() if f.abs_src_path and f.abs_src_path.endswith(".md")):
        for name in draw_gallery():
            files.append(File(f"gallery/{name}.png", src_dir=str(GALLERY_DIR.parent), dest_dir=config.site_dir,
                              use_directory_urls=config.use_directory_urls))
    return files


def whole_file_include(path: str, heading: str | None) -> bool:
    """Whether an include of the repository file ``path`` (under ``heading``, or whole) shows the whole file: so
    links to that file elsewhere can point to the including page. A section under the file's own first line (its
    title) is the whole file; any other section is a part."""
    if not heading:
        return True
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    first = next((line for line in lines if line.strip()), "")
    return first.strip() == heading.strip()


def without_data() -> list[str]:
    """The figures of the registry whose data source has no data in this build (e.g. the decoder figures before the
    first full decoder run is committed): the gallery lists them without an image, ``varsim figures`` skips them."""
    from varsim.figures import FIGURES, data_source, source_class, source_options

    options = {"quick": False, "seed": 0, "progress": False, **{o.name: o.default for o in source_options()}}
    out = []
    for name in FIGURES:
        kind = data_source(name)
        if kind is not None and not getattr(source_class(kind).from_options(options), "available", True):
            out.append(name)
    return out


def _log_figure(name: str, data_from: str, seconds: float, paths) -> None:
    """One line in the build log per gallery figure as it is drawn (:func:`varsim.figures.figure_line`)."""
    from varsim.figures import figure_line

    print(f"INFO    -  varsim gallery: {figure_line(name, data_from, seconds)}", file=sys.stderr, flush=True)


def draw_gallery() -> list[str]:
    """Draw every figure with data into build/gallery (or keep an earlier build's with VARSIM_DOCS_FIGURES=reuse);
    their names."""
    from varsim.figures import FIGURES, make

    skipped = without_data()
    names = [n for n in FIGURES if n not in skipped]
    mode = os.environ.get("VARSIM_DOCS_FIGURES", "draw")
    if mode not in ("draw", "reuse"):
        raise PluginError(f"VARSIM_DOCS_FIGURES must be 'draw' or 'reuse', not {mode!r}")
    missing = [n for n in names if not (GALLERY_DIR / f"{n}.png").is_file()]
    todo = names if mode == "draw" else missing
    if todo:
        start = time.perf_counter()
        print(f"INFO    -  varsim gallery: drawing {len(todo)} figures", file=sys.stderr, flush=True)
        try:
            make(todo, outdir=GALLERY_DIR, progress=False, on_figure=_log_figure, jobs=0)
        except ValueError as exc:
            raise PluginError(f"the gallery's figures could not be drawn: {exc}") from exc
        print(f"INFO    -  varsim gallery: drew {len(todo)} figures in {time.perf_counter() - start:.0f} s",
              file=sys.stderr)
    return names


def figure_caption(name: str) -> tuple[str, str]:
    """The title (first line) and the rest of the docstring of figure module ``name``, as Markdown."""
    from varsim.figures import FIGURES

    module_path = ROOT / (FIGURES[name].replace(".", "/") + ".py")
    doc = ast.get_docstring(ast.parse(module_path.read_text(encoding="utf-8"))) or ""
    title, _, rest = doc.strip().partition("\n")
    return plain_text(title.strip()), plain_text(rest.strip())


#: a formula written in a docstring's plain text: an expectation ``E[...]``, or a name with a power (``e^{beta^2}``,
#: ``sigma_v^2``) or a short subscript (``w_i``), each with its argument list and a ``/N``; neighbours joined by one
#: space are one formula (``sigma_v^2 E[sum w^2](N, beta)``)
_MATH_WORD = (r"(?:E\[[^\]\n]*\]|[A-Za-z]+(?:_[A-Za-z0-9]{1,2})?\^(?:\{[^}\n]*\}|[A-Za-z0-9]+)"
              r"|[A-Za-z]+_[A-Za-z0-9]{1,2}(?![A-Za-z0-9_]))(?:\([^)\n]*\))?(?:/[A-Za-z0-9]+)?")
MATH = re.compile(rf"(?<![\w\\$`]){_MATH_WORD}(?: {_MATH_WORD})*")
#: the words a formula spells that TeX writes as commands
_TEX_WORDS = re.compile(r"(?<![\\A-Za-z])(sigma|beta|tau|kappa|alpha|mu|lambda|theta|gamma|delta|epsilon|rho|"
                        r"omega|pi|sum|sqrt|ln|log|exp)(?![A-Za-z])")


def math_text(formula: str) -> str:
    """A plain-text formula (:data:`MATH`) as inline TeX, its words joined by thin spaces: ``sigma_v^2 E[sum w^2]``
    -> ``$\\sigma_v^2\\,E[\\sum w^2]$``."""
    return "$" + "\\,".join(_TEX_WORDS.sub(r"\\\1", word) for word in re.findall(_MATH_WORD, formula)) + "$"


def plain_text(text: str) -> str:
    """Docstring prose as Markdown that shows it as written: roles and ``code`` as code, no accidental links, and
    its plain-text formulas (:data:`MATH`, also a code span that is one formula) typeset as math."""
    parts = re.split(r"(``[^`]+``|`[^`]+`)", ROLE.sub(r"`\1`", text))
    out = []
    for part in parts:
        if part.startswith("`"):  # code, unless it is all one formula (``sigma_v^2 E[sum w^2]``)
            inner = part.strip("`")
            out.append(math_text(inner) if MATH.fullmatch(inner) else part)
            continue
        pieces = re.split(f"({MATH.pattern})", part)
        out += [math_text(p) if i % 2 else re.sub(r"([\[\]*_\\])", r"\\\1", p) for i, p in enumerate(pieces)]
    return "".join(out)


def gallery_markdown() -> str:
    """Every figure of the registry, grouped, with its caption; the figures are drawn in on_files."""
    from varsim.figures import FIGURES, data_source, gallery_groups

    parts, seen = [], set()
    no_data = set(without_data())
    # the sections in order, each the figures of one data source (its GALLERY title; first those computing their own
    # data), in registry order
    for group, kind in gallery_groups():
        names = [n for n in FIGURES if data_source(n) == kind]
        parts.append(f"## {group}\n")
        for name in names:
            seen.add(name)
            title, rest = figure_caption(name)
            if name in no_data:
                parts.append(f"### {title}\n\n*Not drawn: this build has no committed results for `{name}` yet.*"
                             f"\n\n{rest}\n")
                continue
            # the image links to its full-size PNG: a wide figure shrinks to the page's width
            parts.append(f"### {title}\n\n"
                         f'<figure markdown="span">\n[![{name}](gallery/{name}.png){{ loading=lazy }}]'
                         f"(gallery/{name}.png)\n"
                         f"<figcaption markdown>`{name}` ([full size](gallery/{name}.png))</figcaption>\n</figure>"
                         f"\n\n{rest}\n")
    left = [n for n in FIGURES if n not in seen]
    if left:
        raise PluginError(f"gallery: figures of a data source in no gallery group: {', '.join(left)}")
    return "\n".join(parts)


def cli_reference() -> str:
    """Markdown with ``varsim --help`` and each command's ``--help`` (80 columns, as a terminal shows them)."""
    from varsim.cli import COMMANDS, build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parts = ["## varsim\n", "```text\n" + build_parser().format_help().rstrip() + "\n```\n"]
        for name, (_, help_) in COMMANDS.items():
            top = build_parser(name)
            sub = next(a for a in top._actions if a.__class__.__name__ == "_SubParsersAction")
            parts.append(f"## varsim {name}\n\n{help_[0].upper() + help_[1:]}.\n")
            parts.append("```text\n" + sub.choices[name].format_help().rstrip() + "\n```\n")
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def section(text: str, heading: str, source: str) -> str:
    """The part of Markdown ``text`` under the heading line ``heading``, to the next heading at its level or above."""
    lines = text.splitlines()
    try:
        start = lines.index(heading)
    except ValueError:
        raise PluginError(f"varsim-include: {source} has no heading line {heading!r}") from None
    level = len(heading) - len(heading.lstrip("#"))
    end, fenced = len(lines), False
    for i in range(start + 1, len(lines)):
        if lines[i].lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(lines[i])) and len(m.group(1)) <= level:
            end = i
            break
    return "\n".join(lines[start + 1:end]).strip("\n") + "\n"


def shift_headings(text: str, top: int = 2) -> str:
    """Move ``text``'s headings so that the shallowest is at level ``top`` (outside fenced code)."""
    levels = [len(m.group(1)) for m in HEADING.finditer(_without_fences(text))]
    if not levels:
        return text
    delta = top - min(levels)
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        out.append("#" * min(6, len(m.group(1)) + delta) + line[len(m.group(1)):] if m else line)
    return "\n".join(out) + "\n"


def _without_fences(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def rewrite_links(text: str, source: str, page_uri: str, repo_url: str | None, commit: str | None) -> str:
    """Links of the repository file ``source`` made to work on the page ``page_uri`` of the site.

    A link to a file another page includes whole goes to that page, an image under docs/ to its copy in the site,
    anything else in the repository to the repository's web view (as code when no repository address is known).
    """
    base = posixpath.dirname(source)
    page_dir = posixpath.dirname(page_uri)

    def replace(match: re.Match) -> str:
        opening, target, closing = match.groups()
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)
        path, _, fragment = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(base, path))
        if repo_path in _included_pages:
            dest = _included_pages[repo_path]
        elif repo_path.startswith(SITE_PREFIX) and repo_path.endswith(".md"):  # a page of the site itself
            dest = repo_path[len(SITE_PREFIX):]
        elif NOTEBOOK_PATH.fullmatch(repo_path):  # a notebook: the site renders it as a page (on_files)
            dest = "notebooks/" + posixpath.basename(repo_path)
        elif repo_path.endswith(IMAGE_SUFFIXES) and repo_path.startswith("docs/"):
            dest = REPO_FILES_PREFIX + repo_path
        elif repo_url:
            return f"{opening}{repo_url}/blob/{commit or 'HEAD'}/{repo_path}{closing}"
        else:
            label = opening[1:-2] if not opening.startswith("!") else opening[2:-2]
            return f"{label} (`{repo_path}` in the repository)" if label.strip("`") != repo_path else f"`{repo_path}`"
        rel = posixpath.relpath(dest, page_dir or ".")
        return f"{opening}{rel}{'#' + fragment if fragment else ''}{closing}"

    return LINK.sub(replace, text)


def include(match: re.Match, page_uri: str, config, markdown: str) -> str:
    """The text of one include marker, its shallowest heading one level below the page's heading above the marker."""
    above = [len(m.group(1)) for m in HEADING.finditer(_without_fences(markdown[:match.start()]))]
    source = match["path"].strip()
    path = ROOT / source
    if not path.is_file():
        raise PluginError(f"varsim-include in {page_uri}: no file {source}")
    text = path.read_text(encoding="utf-8")
    if match["heading"]:
        text = section(text, match["heading"].strip(), source)
    commit = _git("rev-parse", "HEAD")
    text = rewrite_links(text, source, page_uri, config.repo_url.rstrip("/") if config.repo_url else None, commit)
    return shift_headings(text, top=min(6, (above[-1] if above else 1) + 1))


def api_pages_in_nav(nav) -> list[tuple[str, str]]:
    """(title, src_uri) of every API page of the navigation (``api/*.md`` but the index), in navigation order."""
    out = []
    for item in nav or []:
        if isinstance(item, dict):
            for title, value in item.items():
                if isinstance(value, list):
                    out += api_pages_in_nav(value)
                elif isinstance(value, str) and value.startswith("api/") and value != API_INDEX_PAGE:
                    out.append((title, value))
    return out


def api_index_markdown(nav) -> str:
    """The API index's sections: a heading per API page and a placeholder for its table (filled in on_post_page)."""
    pages = api_pages_in_nav(nav)
    if not pages:
        raise PluginError(f"{API_INDEX_PAGE}: the navigation has no API page to index")
    rel = posixpath.dirname(API_INDEX_PAGE)
    return "\n".join(f"## [{title}]({posixpath.relpath(uri, rel)})\n\n<!-- varsim-api-table: {uri} -->\n"
                     for title, uri in pages)


def first_sentence(text: str) -> str:
    """The first sentence of a docstring's first paragraph, on one line (cut at a word past API_SUMMARY_CHARS)."""
    text = " ".join(text.split())
    match = re.match(r"(.+?[.!?](?<!i\.i\.d\.)(?<!e\.g\.)(?<!i\.e\.))(?=\s+[A-Z(`\"]|$)", text)
    sentence = match.group(1) if match else text
    if len(sentence) > API_SUMMARY_CHARS:
        sentence = sentence[:API_SUMMARY_CHARS].rsplit(" ", 1)[0] + " ..."
    return sentence


def top_level_entries(soup) -> list:
    """The entries an API page documents: its mkdocstrings headings (``.doc-heading``) at the shallowest level
    (functions, classes and constants; their methods and attributes are one level below)."""
    headings = soup.select(".doc-heading[id]")
    top = min((int(h.name[1]) for h in headings), default=0)
    return [h for h in headings if h.name == f"h{top}"]


def api_table(page_uri: str, index_url: str) -> str:
    """The HTML table of the objects the API page ``page_uri`` documents, linked from the page at ``index_url``."""
    from bs4 import BeautifulSoup

    if page_uri not in _api_pages:
        raise PluginError(f"{API_INDEX_PAGE}: {page_uri} was not rendered (is it in the navigation?)")
    url, content = _api_pages[page_uri]
    soup = BeautifulSoup(content, "html.parser")
    base = index_url if index_url.endswith("/") or not index_url else posixpath.dirname(index_url)
    href = posixpath.relpath(url or ".", base or ".")
    href = "" if href == "." else href + ("/" if url.endswith("/") else "")
    rows = []
    for heading in top_level_entries(soup):
        name = heading.select_one(".doc-object-name")
        kind = next((k for c, k in API_KINDS.items() if name is not None and c in name.get("class", [])), "")
        contents = heading.find_next_sibling("div", class_="doc-contents")
        paragraph = next((p for p in contents.find_all("p") if "doc-class-bases" not in p.get("class", [])),
                         None) if contents is not None else None
        summary = first_sentence(paragraph.get_text()) if paragraph is not None else ""
        if not summary:
            raise PluginError(f"{API_INDEX_PAGE}: {heading['id']} ({page_uri}) has no docstring to summarize")
        label = html_escape(name.get_text(strip=True) if name is not None else heading["id"])
        rows.append(f'<tr><td><a href="{html_escape(href)}#{html_escape(heading["id"])}"><code>{label}</code></a></td>'
                    f"<td>{kind}</td><td>{html_escape(summary)}</td></tr>")
    if not rows:
        raise PluginError(f"{API_INDEX_PAGE}: {page_uri} documents no object")
    # the class sits on a wrapper: the theme styles only tables without a class (``table:not([class])``)
    return ('<div class="varsim-api-index md-typeset__scrollwrap"><div class="md-typeset__table"><table><thead><tr>'
            "<th>Object</th><th>Kind</th><th>Summary</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div></div>")


def on_page_content(html, page, config, files):
    uri = page.file.src_uri
    if uri.startswith("api/") and uri != API_INDEX_PAGE:
        _api_pages[uri] = (page.url, html)
    return html


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "cli.md":
        if CLI_MARKER not in markdown:
            raise PluginError(f"cli.md: the marker {CLI_MARKER} is missing")
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if GALLERY_MARKER in markdown:
        markdown = markdown.replace(GALLERY_MARKER, gallery_markdown())
    if API_INDEX_MARKER in markdown:
        markdown = markdown.replace(API_INDEX_MARKER, api_index_markdown(config.nav))
    return INCLUDE.sub(lambda m: include(m, page.file.src_uri, config, markdown), markdown)


def plot_alt_text(html: str, title: str) -> str:
    """``html`` with each plot nbconvert left without a description named after the notebook and its section."""
    section_title = title

    def replace(match: re.Match) -> str:
        nonlocal section_title
        if match["heading"] is not None:
            section_title = re.sub(r"<[^>]+>|¶", "", match["heading"]).strip() or section_title
            return match.group(0)
        where = title if section_title == title else f"{title}, section {section_title}"
        return f'alt="{html_escape(f"Plot drawn by the notebook ({where})")}"'

    return HEADING_OR_PLACEHOLDER.sub(replace, html)


#: an exercise of a notebook: its statement (a paragraph opening with "**Exercise N.M (...).**") and the collapsed
#: solution that follows it
NOTEBOOK_EXERCISE = re.compile(r"<p><strong>(?P<title>Exercise [^<]*?)\.?</strong>\s*(?P<statement>.*?)</p>\s*"
                               r"(?P<solution><details>\s*<summary>.*?</details>)?", re.S)


def notebook_exercises(html: str) -> str:
    """``html`` of a notebook page with each exercise a block (Material's "question" admonition, its title the
    exercise's) holding its statement and its solution as a collapsed "success" block."""
    def block(match: re.Match) -> str:
        solution = match["solution"] or ""
        solution = solution.replace("<details>", '<details class="success">', 1)
        return (f'<div class="admonition question varsim-exercise"><p class="admonition-title">{match["title"]}</p>'
                f'<p>{match["statement"]}</p>{solution}</div>')

    return NOTEBOOK_EXERCISE.sub(block, html)


def notebook_download(html: str, stem: str) -> str:
    """``html`` of a notebook page with links to its files (the Jupyter notebook and its py:percent source, both
    written next to the page) under its first heading."""
    links = (f'<p class="varsim-notebook-download">Download this notebook: <a href="{stem}.ipynb" download>'
             f'{stem}.ipynb</a> (Jupyter) or <a href="{stem}.py" download>{stem}.py</a> (the py:percent source, '
             "for JupyterLab with jupytext or VS Code); <code>varsim demo --copy DIR</code> writes them all.</p>")
    return re.sub(r"(</h1>)", lambda m: m.group(1) + links, html, count=1)


def on_post_build(config):
    """Write each notebook as ``.ipynb`` next to its page (the download link's target)."""
    from varsim.cli.demo import notebook_text

    for path in sorted((ROOT / "varsim" / "notebooks").glob("[0-9]*.py")):
        dest = Path(config.site_dir) / "notebooks" / path.stem / f"{path.stem}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(notebook_text(path, "ipynb"), encoding="utf-8")


def on_post_page(output, page, config):
    if page.file.src_uri == API_INDEX_PAGE:
        output = API_TABLE.sub(lambda m: api_table(m["page"], page.url), output)
    if page.file.src_uri.startswith("notebooks/"):
        output = NOTEBOOK_WIDGET_LOADER.sub("", NOTEBOOK_MATHJAX.sub("", output))
        output = plot_alt_text(output, page.title or page.file.name)
        output = notebook_download(notebook_exercises(output), Path(page.file.src_uri).stem)
        output = output.replace("<body ", "<body data-varsim-notebook ", 1)  # the stylesheet widens these pages
    return output
