"""The documentation: the MkDocs site builds in strict mode (no broken link, page or API reference), README.md stays
a front page (at most 200 lines), and README's Python quickstart runs as written and ranks the answers."""

import os
import re
import subprocess
import sys

from conftest import REPO

README = REPO / "README.md"
README_MAX_LINES = 200


def test_the_site_builds_in_strict_mode(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    assert (tmp_path / "site" / "index.html").is_file()
    api = (tmp_path / "site" / "api" / "zoo" / "index.html").read_text(encoding="utf-8")
    assert 'id="keras_match.zoo.load"' in api, "the API reference has no keras_match.zoo.load"


def test_readme_is_at_most_200_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move the long parts into docs/"


def _python_blocks(text):
    return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)


def test_the_readme_python_quickstart_ranks_the_answers(tmp_path):
    """README's one Python block, run as written in a fresh process (the shipped preset, the full GloVe of the
    `glove` extra, not the tests' filtered file), prints the answers best first: Shakespeare's on top."""
    blocks = _python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) == 1, f"README should hold one Python quickstart block, found {len(blocks)}"
    env = {key: value for key, value in os.environ.items() if key != "KERAS_MATCH_EMBEDDINGS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    done = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"README's quickstart failed:\n{done.stdout}\n{done.stderr}"
    rows = [re.match(r"^(\d+\.\d+)  (.+)$", line) for line in done.stdout.splitlines() if line.strip()]
    assert rows and all(rows), f"unexpected output:\n{done.stdout}"
    scores, texts = [float(row.group(1)) for row in rows], [row.group(2) for row in rows]
    assert len(texts) == 3 and len(set(texts)) == 3, done.stdout
    assert scores == sorted(scores, reverse=True), f"not best first:\n{done.stdout}"
    assert "Shakespeare" in texts[0] and scores[0] > scores[1], f"the answer is not ranked first:\n{done.stdout}"


def test_ci_installs_and_tests_exactly_as_readme_says():
    """`.ci/run` mirrors README's install line and its test command (a changed extra or option changes both)."""
    readme = README.read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    install = re.search(r"^## Install\n.*?```bash\n(pip install [^\n]+)\n```", readme, re.M | re.S).group(1)
    tests = re.search(r"^## Tests\n.*?```bash\n(python -m pytest [^\n]+)\n```", readme, re.M | re.S).group(1)
    assert f"python -m {install}\n" in ci, f"README installs with {install!r}; .ci/run does not"
    assert f"\n{tests}\n" in ci, f"README tests with {tests!r}; .ci/run does not"
