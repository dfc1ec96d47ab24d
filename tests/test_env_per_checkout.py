"""Every checkout gets its own environment for the package (tools/setup_env.sh): no clone runs another's code."""

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_COPY = ("pyproject.toml", "README.md", "tools", "oscsim", "hw_models", "mapping")


def _checkout(dst: Path) -> Path:
    dst.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for name in _COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=ignore)
        else:
            shutil.copy2(src, dst / name)
    return dst


def test_two_checkouts_each_import_their_own_code(tmp_path):
    # The same dependency lists as this checkout, so the cached base that `make test` built is reused and
    # only the per-checkout layer (a bare venv and an editable install, seconds) is created.
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    clones = [_checkout(tmp_path / name) for name in ("a", "b")]
    for c in clones:
        r = subprocess.run(["bash", "tools/setup_env.sh"], cwd=c, env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        assert (c / ".venv").is_dir() and not (c / ".venv").is_symlink()
    for c in clones:  # after both set-ups, each still runs its own code
        out = subprocess.run([str(c / ".venv/bin/python"), "-c", "import mapping; print(mapping.__file__)"],
                             capture_output=True, text=True, timeout=120, env=env,
                             cwd=tmp_path)  # a neutral directory: the import must come from the venv
        assert out.returncode == 0, out.stderr[-2000:]
        assert Path(out.stdout.strip()).resolve() == (c / "mapping" / "__init__.py").resolve()
    # the shared part is shared: both point at the same cached dependency base
    bases = {(c / ".venv/.oscsim-base").read_text().strip() for c in clones}
    assert len(bases) == 1
