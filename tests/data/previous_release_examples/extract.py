"""How this folder was made (run once, from the repository root: ``python tests/data/previous_release_examples/extract.py``,
ruff on PATH). Extract the python blocks of README.md and docs/site/**/*.md at the previous release into the test data folder;
a block using a name it never defines or imports (ruff F821), or defining a placeholder function (body ``...``) for the
reader's own code, is a fragment; the others are user scripts."""
import hashlib, json, re, subprocess
from pathlib import Path
REL = "3af7578"
REPO = Path(__file__).resolve().parents[3]
OUT = REPO / "tests/data/previous_release_examples"
files = ["README.md"] + [f for f in subprocess.run(["git", "ls-tree", "-r", "--name-only", REL, "docs/site"], cwd=REPO,
         capture_output=True, text=True).stdout.split() if f.endswith(".md")]
manifest = []
for f in files:
    text = subprocess.run(["git", "show", f"{REL}:{f}"], cwd=REPO, capture_output=True, text=True).stdout
    for k, block in enumerate(re.findall(r"```python\n(.*?)```", text, flags=re.S), 1):
        name = f.replace("docs/site/", "").replace("/", "_").replace(".md", "") + f"_{k}.py"
        included = re.fullmatch(r'--8<-- "([^"]+)"\s*', block)  # a snippet include: the page shows that file
        if included:
            block = subprocess.run(["git", "show", f"{REL}:docs/site/{included.group(1)}"], cwd=REPO,
                                   capture_output=True, text=True, check=True).stdout
            if Path(included.group(1)).name.startswith("test_"):
                name = "usertest_" + name  # a pytest file of the reader's (not collected by this suite)
        (OUT / name).write_text(block, encoding="utf-8")
        res = subprocess.run(["ruff", "check", "--isolated", "--select", "F821", "--output-format",
                              "json", str(OUT / name)], capture_output=True, text=True)
        undefined = sorted({re.search(r"`(\w+)`", d["message"]).group(1) for d in json.loads(res.stdout or "[]")})
        import ast
        stubs = [n.name for n in ast.walk(ast.parse(block)) if isinstance(n, ast.FunctionDef)
                 and all(isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) for b in n.body)
                 and any(b.value.value is Ellipsis for b in n.body)]
        kind = ("fragment: uses " + ", ".join(undefined) + " without defining it" if undefined else
                "fragment: " + ", ".join(stubs) + " is a placeholder (body ...) for the reader's code" if stubs else
                "script")
        print(name, kind, flush=True)
        if kind == "script" and name.startswith("usertest_"):
            kind = "pytest"
        entry = {"file": name, "page": f, "block": k, "kind": kind, "sha256": hashlib.sha256(block.encode()).hexdigest()}
        current = REPO / "docs" / "site" / included.group(1) if included else None
        if current is not None and current.is_file() and current.read_text(encoding="utf-8") == block:
            # unchanged since the release: no second copy (the test checks the hash; a later edit must copy it here)
            (OUT / name).unlink()
            entry["file"] = str(current.relative_to(REPO))
        manifest.append({**entry, **({"included": included.group(1)} if included else {})})
(OUT / "manifest.json").write_text(json.dumps({"commit": REL, "examples": manifest}, indent=1) + "\n")
