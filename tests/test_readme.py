"""The README's Python snippets run as written (operators must live in a file: the frontend
reads their source)."""

import importlib.util
import re
import runpy
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_snippets_run(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks
    for n, code in enumerate(blocks):
        if "import torch" in code and importlib.util.find_spec("torch") is None:
            continue  # the PyTorch section needs the optional dependency
        path = tmp_path / f"readme_{n}.py"
        path.write_text(code)
        runpy.run_path(str(path), run_name="__main__")
