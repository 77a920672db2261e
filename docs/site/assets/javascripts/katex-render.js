// Typesets the math of every page with the KaTeX shipped in assets/katex (no network needed): the \( \) and \[ \]
// spans that pymdownx.arithmatex writes for the Markdown pages, and the $ $ / $$ $$ of the notebooks' Markdown cells.
// Code (pre, code) is never touched. A formula KaTeX cannot parse is shown in red (class katex-error), which the
// site check (docs/check_site.py) reports.
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "$", right: "$", display: false },
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    throwOnError: false,
  });
});
